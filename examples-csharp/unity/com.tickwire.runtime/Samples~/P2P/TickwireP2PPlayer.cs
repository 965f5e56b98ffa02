using Tickwire;
using UnityEngine;

namespace Tickwire.Samples.P2P
{
    /// <summary>
    /// One side of a two-player P2P rollback match. Run the same scene on two machines
    /// (or two editors), one with Local Player 0 and one with 1, each pointing Remote
    /// Address at the other. The simulation below (two dots pushed by the arrow keys) is
    /// a stand-in: put your game's deterministic step in Simulate and its state in
    /// GameState. The session asks for snapshots, loads and re-simulations; every request
    /// is answered in RunRequests. The per-frame path allocates nothing.
    /// </summary>
    public sealed class TickwireP2PPlayer : MonoBehaviour
    {
        [SerializeField] private uint localPlayer = 0;
        [SerializeField] private string bindAddress = "0.0.0.0:7000";
        [SerializeField] private string remoteAddress = "127.0.0.1:7001";

        /// <summary>Everything the simulation needs, as a struct: a snapshot is a copy.</summary>
        public struct GameState
        {
            public int X0, Y0, X1, Y1;
        }

        private TwSession _session;
        private GameState _state;
        private GameState[] _snapshots;
        private readonly byte[] _input = new byte[1];
        private readonly byte[] _inputs = new byte[2];

        /// <summary>The current state, for your renderers (it may be rolled back and corrected).</summary>
        public GameState State
        {
            get { return _state; }
        }

        public bool Running { get; private set; }

        private void Start()
        {
            try
            {
                TwSessionConfig config = TwSessionConfig.Default(TwSessionMode.P2P);
                config.NumPlayers = 2;
                config.InputSize = 1;
                config.SetBindAddress(bindAddress);
                _session = new TwSession(config);
                _snapshots = new GameState[_session.StateSlots];
                // Both machines list the players in the same order.
                if (localPlayer == 0)
                {
                    _session.AddLocalPlayer(0);
                    _session.AddRemotePlayer(1, remoteAddress);
                }
                else
                {
                    _session.AddRemotePlayer(0, remoteAddress);
                    _session.AddLocalPlayer(1);
                }
                _session.Start();
            }
            catch (TickwireException e)
            {
                // Code and the library's message: a stale native library, a port in use, ...
                Debug.LogError("tickwire: " + e.Message);
                enabled = false;
            }
        }

        private void Update()
        {
            int due;
            if (_session.TicksDue(out due) < 0)
            {
                Debug.LogError("tickwire: " + TwLibrary.LastErrorMessage());
                enabled = false;
                return;
            }
            for (int i = 0; i < due; i++)
            {
                _input[0] = ReadInput();
                _session.PushInput(localPlayer, _input);
                _session.Advance(); // Ok, or a status (still synchronizing, window full): poll anyway
                RunRequests();
            }
            TwSessionEvent e;
            while (_session.TryPollEvent(out e))
            {
                switch (e.Kind)
                {
                    case TwSessionEventKind.Synchronized:
                        Running = true;
                        Debug.Log("tickwire: the match runs");
                        break;
                    case TwSessionEventKind.PlayerDisconnected:
                        Debug.Log("tickwire: player " + e.Data.Player.Player + " left");
                        break;
                    case TwSessionEventKind.Desync:
                        Debug.LogError("tickwire: desync at tick " + e.Data.Desync.Tick + ": the simulation is not deterministic");
                        break;
                }
            }
        }

        private static byte ReadInput()
        {
            int dx, dy;
            SampleInput.Read(out dx, out dy);
            return (byte)((dx < 0 ? 1 : 0) | (dx > 0 ? 2 : 0) | (dy < 0 ? 4 : 0) | (dy > 0 ? 8 : 0));
        }

        private void RunRequests()
        {
            TwRequest r;
            while (_session.TryPollRequest(out r))
            {
                switch (r.Kind)
                {
                    case TwRequestKind.Save:
                        _snapshots[r.Slot] = _state;
                        _session.ConfirmSave(r.Tick, Checksum(_state));
                        break;
                    case TwRequestKind.Load:
                        _state = _snapshots[r.Slot];
                        break;
                    case TwRequestKind.Advance:
                        _session.ReadInputs(_inputs);
                        Simulate(ref _state, _inputs[0], _inputs[1]);
                        // r.IsResimulating: skip sounds and particles. One-time effects (scores) wait
                        // until the tick is below GetStats' ConfirmedTick.
                        break;
                }
            }
        }

        private static void Simulate(ref GameState s, byte input0, byte input1)
        {
            s.X0 += ((input0 >> 1) & 1) - (input0 & 1);
            s.Y0 += ((input0 >> 3) & 1) - ((input0 >> 2) & 1);
            s.X1 += ((input1 >> 1) & 1) - (input1 & 1);
            s.Y1 += ((input1 >> 3) & 1) - ((input1 >> 2) & 1);
        }

        private static ulong Checksum(GameState s)
        {
            ulong h = 14695981039346656037UL;
            h = unchecked((h ^ (uint)s.X0) * 1099511628211UL);
            h = unchecked((h ^ (uint)s.Y0) * 1099511628211UL);
            h = unchecked((h ^ (uint)s.X1) * 1099511628211UL);
            return unchecked((h ^ (uint)s.Y1) * 1099511628211UL);
        }

        private void OnDestroy()
        {
            if (_session != null)
            {
                _session.Dispose(); // the other player sees a disconnect
            }
        }
    }
}
