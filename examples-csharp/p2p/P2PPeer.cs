using System;
using Tickwire;

namespace TickwireExamples
{
    /// <summary>
    /// One player's side of a P2P rollback match, written like a Unity component:
    /// Start binds the session, Connect adds the players once the other peer's address
    /// is known (from a lobby, in a real game), Update runs the engine loop once per
    /// frame, OnDestroy disposes. The game state is the Arena struct; the session asks
    /// for snapshots, loads and re-simulations, and the peer answers them. Nothing on
    /// the Update path allocates.
    /// </summary>
    public sealed class P2PPeer
    {
        public string Name = "peer";
        public uint LocalPlayer;          // 0 or 1; the other one plays on the remote peer
        public int LatencyMs;             // simulated one-way latency (link simulator), 0 = none
        public double Loss;               // simulated packet loss, 0..1
        public bool RecordReplay;         // record the match (CopyReplay afterwards)
        public byte[] MatchSecret;        // from the matchmaker: the same on both peers (TwSecurity.GenerateKey)

        /// <summary>Checksums of saved ticks kept for the example's final comparison.</summary>
        public const int History = 8192;

        private TwSession _session;
        private Arena _arena = Arena.Initial();
        private Arena[] _snapshots;                          // the session's snapshot slots
        private readonly byte[] _inputs = new byte[Arena.Players];
        private readonly byte[] _myInput = new byte[1];
        private readonly byte[] _state = new byte[Arena.SerializedSize];
        private readonly ulong[] _sums = new ulong[History];
        private readonly uint[] _sumTicks = new uint[History]; // tick + 1; 0 = none
        private uint _frame;

        public bool Synchronized { get; private set; }
        public bool Failed { get; private set; }
        public Arena State
        {
            get { return _arena; }
        }

        public string LocalAddress
        {
            get { return _session.LocalAddress; }
        }

        public void Start()
        {
            TwSessionConfig config = TwSessionConfig.Default(TwSessionMode.P2P);
            config.NumPlayers = Arena.Players;
            config.InputSize = 1;
            config.TickRateHz = 60;
            config.Host.SimSeed = 1 + LocalPlayer;        // reproducible simulated loss and jitter
            config.SetBindAddress("127.0.0.1:0");         // "0.0.0.0:7000" on a real network
            // Encrypted, and only a peer showing the match's secret completes a handshake. The
            // session keeps its own copy: the settings are wiped as soon as it exists.
            using (TwSecurity security = TwSecurity.ForMatch(MatchSecret))
            {
                _session = new TwSession(config, security); // throws TickwireException, with the reason
            }
            _snapshots = new Arena[_session.StateSlots];   // allocated once
            if (LatencyMs > 0 || Loss > 0)
            {
                TwLinkSimConfig sim = TwLinkSimConfig.Default();
                sim.LatencyUs = (ulong)LatencyMs * 1000;
                sim.JitterKind = TwJitterKind.Uniform;
                sim.JitterUs = LatencyMs * 200.0;          // +0..20%
                sim.LossKind = Loss > 0 ? TwLossKind.Bernoulli : TwLossKind.None;
                sim.LossProbability = Loss;
                _session.SetLinkSim(TwDirection.Outbound, sim);
            }
        }

        /// <summary>Adds both players (the same order on both peers) and starts the match.</summary>
        public void Connect(string remoteAddress)
        {
            uint remote = 1 - LocalPlayer;
            if (LocalPlayer == 0)
            {
                _session.AddLocalPlayer(0);
                _session.AddRemotePlayer(remote, remoteAddress);
            }
            else
            {
                _session.AddRemotePlayer(remote, remoteAddress);
                _session.AddLocalPlayer(1);
            }
            if (RecordReplay)
            {
                _arena.Serialize(_state);
                _session.StartRecording(_state);           // a replay starts from this state
            }
            _session.Start();
        }

        /// <summary>One engine frame: the ticks due, each with this player's input; then the events.</summary>
        public void Update()
        {
            _frame++;
            int due;
            if (Check(_session.TicksDue(out due), "TicksDue"))
            {
                return;
            }
            for (int i = 0; i < due; i++)
            {
                _myInput[0] = ReadInput();
                Check(_session.PushInput(LocalPlayer, _myInput), "PushInput");
                TwResult r = _session.Advance();   // Ok, or WindowFull / NotSynchronized: not errors
                Check(r, "Advance");
                RunRequests();                       // always: a skipped tick may still roll back
            }
            TwSessionEvent e;
            while (_session.TryPollEvent(out e))
            {
                OnEvent(ref e);
            }
        }

        /// <summary>What this player presses: a bot that changes its mind every 10 frames.</summary>
        private byte ReadInput()
        {
            uint x = (_frame / 10) * 2654435761u ^ (LocalPlayer + 1) * 40503u;
            return (byte)((x >> 11) & 0x1f);
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
                        _snapshots[r.Slot] = _arena;                 // a struct copy
                        ulong sum = _arena.Checksum();
                        _sums[r.Tick % History] = sum;               // the last save of a tick wins
                        _sumTicks[r.Tick % History] = r.Tick + 1;
                        Check(_session.ConfirmSave(r.Tick, sum), "ConfirmSave");
                        break;
                    }
                    case TwRequestKind.Load:
                        _arena = _snapshots[r.Slot];
                        break;
                    case TwRequestKind.Advance:
                        Check(_session.ReadInputs(_inputs), "ReadInputs");
                        _arena.Step(_inputs[0], _inputs[1]);
                        // r.IsResimulating: a game would mute sounds and effects here. Effects
                        // that must happen once (scores) wait until the tick is below
                        // Stats.ConfirmedTick: every input before it is final.
                        break;
                    case TwRequestKind.DumpState:                    // a desync dump or a spectator joining
                        _snapshots[r.Slot].Serialize(_state);
                        Check(_session.ProvideState(r.Tick, _state), "ProvideState");
                        break;
                    case TwRequestKind.Restore:
                    {
                        int n;
                        Check(_session.ReadState(_state, out n), "ReadState");
                        _arena = Arena.Deserialize(_state);
                        break;
                    }
                }
            }
        }

        private void OnEvent(ref TwSessionEvent e)
        {
            switch (e.Kind)
            {
                case TwSessionEventKind.PeerConnected:
                    Log.Info(Name + ": connected to the peer of player " + e.Data.Peer.Player);
                    break;
                case TwSessionEventKind.Synchronized:
                    Synchronized = true;
                    Log.Info(Name + ": synchronized, the match runs");
                    break;
                case TwSessionEventKind.PeerInterrupted:
                    Log.Info(Name + ": the peer went quiet (dropped in " + e.Data.Peer.DisconnectInUs / 1000 + " ms)");
                    break;
                case TwSessionEventKind.PlayerDisconnected:
                    Log.Info(Name + ": player " + e.Data.Player.Player + " left at tick " + e.Data.Player.Tick);
                    break;
                case TwSessionEventKind.Desync:
                    Log.Error(Name + ": DESYNC at tick " + e.Data.Desync.Tick);
                    Failed = true;
                    break;
                case TwSessionEventKind.Fatal:
                    Log.Error(Name + ": the network thread died: " + e.Data.Fatal.GetMessage());
                    Failed = true;
                    break;
            }
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

        public TwSessionStats Stats
        {
            get
            {
                TwSessionStats s;
                _session.GetStats(out s);
                return s;
            }
        }

        /// <summary>The RTT to the other player's peer in milliseconds, or -1 before it connected.</summary>
        public double RttMs
        {
            get
            {
                uint peer;
                TwPeerStats ps;
                if (_session.GetPlayerPeer(1 - LocalPlayer, out peer) != TwResult.Ok || _session.GetPeerStats(peer, out ps) != TwResult.Ok)
                {
                    return -1;
                }
                return ps.SrttUs / 1000.0;
            }
        }

        public bool TryGetChecksum(uint tick, out ulong sum)
        {
            sum = _sums[tick % History];
            return _sumTicks[tick % History] == tick + 1;
        }

        /// <summary>The replay recorded so far (RecordReplay): every tick final on both peers.</summary>
        public byte[] CopyReplay()
        {
            return _session.CopyReplay();
        }

        public void OnDestroy()
        {
            if (_session != null)
            {
                _session.Dispose(); // the peer sees a disconnect
            }
        }
    }
}
