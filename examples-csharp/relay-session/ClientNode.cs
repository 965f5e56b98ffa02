using System;
using Tickwire;

namespace TickwireExamples
{
    /// <summary>
    /// One player's relay client, written like a Unity component: Start creates the
    /// RELAY_CLIENT session and names the server, Update runs the engine loop once per
    /// frame, OnDestroy disposes. The client pushes its input every due tick as
    /// TwConstants.LocalPlayer (its slot comes with the Joined event), predicts ahead of
    /// the server's authoritative state, and re-simulates from it when a prediction was
    /// wrong: the requests are the same SAVE / LOAD / ADVANCE as in rollback, plus one
    /// RESTORE of the server's snapshot when it joins. Nothing on the Update path
    /// allocates (the event log lines do, as Debug.Log would).
    /// </summary>
    public sealed unsafe class ClientNode
    {
        public string Name = "client";
        public uint Index;                        // which bot plays (the example's stand-in for a gamepad)
        public string ServerAddress;              // from a lobby or a config file, in a real game
        public byte[] ConnectToken;               // from the backend (over HTTPS): lets this client into the server
        public int LatencyMs;                     // simulated one-way latency of what it sends
        public double Loss;                       // simulated loss of what it sends, 0..1

        /// <summary>Checksums of saved ticks, for the example's final comparison.</summary>
        public const int History = 8192;

        private TwSession _session;
        private Boxes _state;
        private Boxes[] _snapshots;                                  // the session's snapshot slots
        private readonly byte[] _input = new byte[Boxes.InputSize];
        private readonly byte[] _inputs = new byte[Boxes.MaxPlayers * Boxes.InputSize];
        private readonly byte[] _statuses = new byte[Boxes.MaxPlayers];
        private readonly ulong[] _sums = new ulong[History];
        private readonly uint[] _sumTicks = new uint[History];      // tick + 1; 0 = none
        private uint _pushed;

        /// <summary>Start has run (the session exists).</summary>
        public bool Started
        {
            get { return _session != null; }
        }

        public bool Joined { get; private set; }
        public bool Synchronized { get; private set; }
        public bool Failed { get; private set; }
        public uint Player { get; private set; }
        public uint JoinTick { get; private set; }
        public int Desyncs { get; private set; }

        /// <summary>The predicted state, for the renderers (it may be corrected by a re-prediction).</summary>
        public Boxes State
        {
            get { return _state; }
        }

        public void Start()
        {
            TwSessionConfig config = TwSessionConfig.RelayClient(Boxes.MaxPlayers, Boxes.InputSize, "127.0.0.1:0");
            config.MaxPrediction = 16;                     // predict up to 16 ticks: covers 100+ ms round trips
            config.Host.SimSeed = 200 + Index;             // reproducible simulated loss and jitter
            using (TwSecurity security = TwSecurity.ForRelayClient(ConnectToken))
            {
                _session = new TwSession(config, security); // throws TickwireException, with the reason
            }
            _snapshots = new Boxes[_session.StateSlots];    // allocated once
            if (LatencyMs > 0 || Loss > 0)
            {
                _session.SetLinkSim(TwDirection.Outbound, LinkSim.Make(LatencyMs, Loss));
            }
            _session.SetServer(ServerAddress);              // an IP address and port, no name lookup
            _session.Start();                               // connects; Joined follows with the snapshot
        }

        public void Update()
        {
            int due;
            if (Check(_session.TicksDue(out due), "TicksDue"))
            {
                return;
            }
            for (int i = 0; i < due; i++)
            {
                ReadInput(_input);
                Check(_session.PushInput(TwConstants.LocalPlayer, _input), "PushInput");
                Check(_session.Advance(), "Advance");     // NotSynchronized before it joined: not an error
                RunRequests();
            }
            TwSessionEvent e;
            while (_session.TryPollEvent(out e))
            {
                OnEvent(ref e);
            }
        }

        /// <summary>What this player presses: a bot that picks a new direction every 8 ticks.</summary>
        private void ReadInput(byte[] input)
        {
            uint x = (_pushed++ / 8 + 1) * 2654435761u ^ (Index + 1) * 40503u;
            x ^= x >> 15;
            input[0] = (byte)(x % 3);        // dx + 1; in Unity: Input.GetAxisRaw("Horizontal") + 1
            input[1] = (byte)((x >> 8) % 3); // dy + 1
        }

        private void RunRequests()
        {
            TwRequest r;
            while (_session.TryPollRequest(out r))
            {
                switch (r.Kind)
                {
                    case TwRequestKind.Save:
                    {
                        _snapshots[r.Slot] = _state;              // a struct copy
                        ulong sum = _state.Checksum();
                        _sums[r.Tick % History] = sum;            // the last save of a tick wins: the authoritative one
                        _sumTicks[r.Tick % History] = r.Tick + 1;
                        Check(_session.ConfirmSave(r.Tick, sum), "ConfirmSave");
                        break;
                    }
                    case TwRequestKind.Load:                      // back to the authoritative state
                        _state = _snapshots[r.Slot];
                        break;
                    case TwRequestKind.Advance:
                        Check(_session.ReadInputs(_inputs), "ReadInputs");
                        Check(_session.ReadInputStatus(_statuses), "ReadInputStatus");
                        _state.Step(_inputs, new ReadOnlySpan<byte>(_statuses, 0, (int)r.NumPlayers));
                        // r.IsResimulating: a game mutes sounds and effects here (it showed them already).
                        // Effects that must happen once (scores, achievements) wait until the tick is
                        // below Stats.ConfirmedTick, the authoritative tick: its state is the server's.
                        break;
                    case TwRequestKind.Restore:                   // the server's snapshot: joined
                        fixed (Boxes* state = &_state)
                        {
                            int n;
                            Check(_session.ReadState(Boxes.WritableBytes(state), out n), "ReadState");
                        }
                        break;
                }
            }
        }

        private void OnEvent(ref TwSessionEvent e)
        {
            TwSessionEventRelay relay = e.Data.Relay;
            switch (e.Kind)
            {
                case TwSessionEventKind.PeerConnected:
                    Log.Info(Name + ": connected to the server");
                    break;
                case TwSessionEventKind.Joined:
                    Joined = true;
                    Player = relay.Player;
                    JoinTick = relay.Tick;
                    Log.Info(Name + ": joined as player " + relay.Player + " at tick " + relay.Tick + (relay.IsReconnect ? " (back in its old slot)" : ""));
                    break;
                case TwSessionEventKind.Synchronized:
                    Synchronized = true;
                    Log.Info(Name + ": caught up at tick " + e.Data.Tick.Tick + "; predicting from now on");
                    break;
                case TwSessionEventKind.PlayerJoined:
                    Log.Info(Name + ": player " + relay.Player + " appeared at tick " + relay.Tick);
                    break;
                case TwSessionEventKind.PlayerLeft:
                    Log.Info(Name + ": player " + relay.Player + " is gone from tick " + relay.Tick);
                    break;
                case TwSessionEventKind.Desync:
                    // The engine's simulation differs from the server's: log it (a bug to fix) and
                    // take the server's state again.
                    Desyncs++;
                    Log.Error(Name + ": DESYNC at tick " + e.Data.Desync.Tick + "; asking for a new snapshot");
                    Check(_session.RequestSnapshot(), "RequestSnapshot");
                    break;
                case TwSessionEventKind.Resyncing:
                    Log.Info(Name + ": dropped its timeline at tick " + relay.Tick + "; a new snapshot follows");
                    break;
                case TwSessionEventKind.Reconnecting:
                    Log.Info(Name + ": lost the server (" + relay.DisconnectReason + "); reconnecting");
                    break;
                case TwSessionEventKind.ServerLost:
                    Log.Error(Name + ": the server is gone (" + relay.DisconnectReason + ")");
                    Failed = true;
                    break;
                case TwSessionEventKind.Fatal:
                    Log.Error(Name + ": the network thread died: " + e.Data.Fatal.GetMessage());
                    Failed = true;
                    break;
            }
        }

        /// <summary>
        /// The client's net graph line (allocates the text: in Unity, update a UI label with it
        /// a few times a second, not every frame).
        /// </summary>
        public string NetGraph()
        {
            TwSessionStats st;
            _session.GetStats(out st);
            return Name + "  rtt " + (st.RttUs / 1000).ToString("F1").PadLeft(5) + " ms" +
                   "  lead " + st.LeadTicks.ToString("F2").PadLeft(5) +
                   "  server buffer " + st.ServerBufferDepth.ToString().PadLeft(2) +
                   "  prediction " + st.PredictionDistance.ToString().PadLeft(2) +
                   "  resimulated " + st.ResimulatedTicks.ToString().PadLeft(5) +
                   "  late " + st.LateInputs.ToString().PadLeft(3) +
                   "  delay " + st.InputDelay;
        }

        public TwSessionStats Stats
        {
            get
            {
                TwSessionStats s;
                _session.GetStats(out s);
                return s;
            }
        }

        public bool TryGetChecksum(uint tick, out ulong sum)
        {
            sum = _sums[tick % History];
            return _sumTicks[tick % History] == tick + 1;
        }

        /// <summary>True (and the failure logged) when r is an error.</summary>
        private bool Check(TwResult r, string what)
        {
            if (r >= 0)
            {
                return false;
            }
            Log.Error(Name + ": " + what + " failed: " + TwLibrary.ResultName(r) + ": " + TwLibrary.LastErrorMessage());
            Failed = true;
            return true;
        }

        public void OnDestroy()
        {
            if (_session != null)
            {
                _session.Dispose(); // the server sees the player leave
            }
        }
    }
}
