using System;
using Tickwire;

namespace TickwireExamples
{
    /// <summary>
    /// The relay server, written like a Unity component (a dedicated server build, or
    /// the host's scene): Start creates the RELAY_SERVER session, Update runs the engine
    /// loop once per frame, OnDestroy disposes. The server runs the authoritative
    /// simulation at a steady rate and never waits: it has no input of its own, every
    /// ADVANCE it gets is final, and a joining client's snapshot is a DUMP_STATE request.
    /// Nothing on the Update path allocates (the event log lines do, as Debug.Log would).
    /// </summary>
    public sealed unsafe class ServerNode
    {
        public string Name = "server";
        public string BindAddress = "127.0.0.1:0";   // port 0: a free port; on a real network "0.0.0.0:7777", with its public address in the security settings
        public byte[] ConnectKey;                     // the backend's key: only its connect-token holders get in
        public int LatencyMs;                         // simulated one-way latency of what it sends
        public double Loss;                           // simulated loss of what it sends, 0..1

        /// <summary>Checksums of the state at the start of each tick, for the example's final comparison.</summary>
        public const int History = 8192;

        private TwSession _session;
        private Boxes _state;
        private Boxes[] _snapshots;                                  // the session's snapshot slots
        private readonly byte[] _inputs = new byte[Boxes.MaxPlayers * Boxes.InputSize];
        private readonly byte[] _statuses = new byte[Boxes.MaxPlayers];
        private readonly ulong[] _sums = new ulong[History];
        private readonly uint[] _sumTicks = new uint[History];      // tick + 1; 0 = none

        public bool Failed { get; private set; }
        public int SnapshotsProvided { get; private set; }

        /// <summary>The address clients pass to SetServer, and their connect tokens name.</summary>
        public string Address
        {
            get { return _session.LocalAddress; }
        }

        public Boxes State
        {
            get { return _state; }
        }

        public void Start()
        {
            // Connect tokens name the address clients reach the server at: on a real network its
            // public IP and port, given as the public address; left empty, as here, the address
            // it is bound to (LocalAddress once it exists).
            TwSessionConfig config = TwSessionConfig.RelayServer(Boxes.MaxPlayers, Boxes.InputSize, BindAddress);
            config.DesyncInterval = 10;                    // clients compare their state with this every 10 ticks
            config.Host.SimSeed = 100;                     // reproducible simulated loss and jitter
            // Encrypted; only holders of a token minted with ConnectKey for this address get in.
            using (TwSecurity security = TwSecurity.ForRelayServer(ConnectKey, ""))
            {
                _session = new TwSession(config, security); // throws TickwireException, with the reason
            }
            _snapshots = new Boxes[_session.StateSlots];    // allocated once
            if (LatencyMs > 0 || Loss > 0)
            {
                _session.SetLinkSim(TwDirection.Outbound, LinkSim.Make(LatencyMs, Loss));
            }
            _session.Start();                               // the clock runs; clients may join
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
                Check(_session.Advance(), "Advance");
                RunRequests();
            }
            TwSessionEvent e;
            while (_session.TryPollEvent(out e))
            {
                OnEvent(ref e);
            }
        }

        private void RunRequests()
        {
            TwRequest r;
            while (_session.TryPollRequest(out r))
            {
                switch (r.Kind)
                {
                    case TwRequestKind.Save:                       // for a snapshot or a checksum report
                        _snapshots[r.Slot] = _state;
                        Check(_session.ConfirmSave(r.Tick, _state.Checksum()), "ConfirmSave");
                        break;
                    case TwRequestKind.Load:
                        _state = _snapshots[r.Slot];
                        break;
                    case TwRequestKind.Advance:
                        Check(_session.ReadInputs(_inputs), "ReadInputs");
                        Check(_session.ReadInputStatus(_statuses), "ReadInputStatus");
                        _state.Step(_inputs, new ReadOnlySpan<byte>(_statuses, 0, (int)r.NumPlayers));
                        Remember(r.Tick + 1, _state.Checksum()); // the state at the start of the next tick
                        break;
                    case TwRequestKind.DumpState:                  // the snapshot joining clients start from
                        fixed (Boxes* snapshot = &_snapshots[r.Slot])
                        {
                            Check(_session.ProvideState(r.Tick, Boxes.Bytes(snapshot)), "ProvideState");
                        }
                        SnapshotsProvided++;
                        break;
                }
            }
        }

        private void OnEvent(ref TwSessionEvent e)
        {
            TwSessionEventRelay relay = e.Data.Relay;
            switch (e.Kind)
            {
                case TwSessionEventKind.PlayerJoined:
                    Log.Info(Name + ": player " + relay.Player + " joined at tick " + relay.Tick);
                    break;
                case TwSessionEventKind.PlayerReconnected:
                    Log.Info(Name + ": player " + relay.Player + " is back at tick " + relay.Tick);
                    break;
                case TwSessionEventKind.PlayerLeft:
                    Log.Info(Name + ": player " + relay.Player + " left at tick " + relay.Tick + " (" + relay.DisconnectReason + ")");
                    break;
                case TwSessionEventKind.PlayerSlotFreed:
                    Log.Info(Name + ": player " + relay.Player + "'s slot is free again");
                    break;
                case TwSessionEventKind.PlayerKicked:
                    Log.Info(Name + ": player " + relay.Player + " kicked (" + relay.KickReason + ")");
                    break;
                case TwSessionEventKind.ConnectionRejected:
                    Log.Info(Name + ": refused a client (" + e.Data.Rejected.Reason + ")");
                    break;
                case TwSessionEventKind.Fatal:
                    Log.Error(Name + ": the network thread died: " + e.Data.Fatal.GetMessage());
                    Failed = true;
                    break;
            }
        }

        /// <summary>The server's net graph: one line per connected player (allocates the text).</summary>
        public string NetGraph()
        {
            System.Text.StringBuilder sb = new System.Text.StringBuilder();
            TwRelayPlayerStats ps;
            for (uint p = 0; p < Boxes.MaxPlayers; p++)
            {
                if (_session.TryGetPlayerStats(p, out ps))
                {
                    sb.Append(sb.Length == 0 ? "" : "\n").Append(Name).Append("  player ").Append(p)
                      .Append("  rtt ").Append((ps.RttUs / 1000).ToString("F1")).Append(" ms")
                      .Append("  buffer ").Append(ps.BufferDepth)
                      .Append("  late ").Append(ps.LateInputs)
                      .Append("  empty ").Append(ps.EmptySteps)
                      .Append("  merged ").Append(ps.Merges)
                      .Append("  duplicates ").Append(ps.Duplicates);
                }
            }
            return sb.ToString();
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

        private void Remember(uint tick, ulong sum)
        {
            _sums[tick % History] = sum;
            _sumTicks[tick % History] = tick + 1;
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
                _session.Dispose(); // the clients see the server go
            }
        }
    }
}
