using System;
using Tickwire;
using UnityEngine;

namespace Tickwire.Samples.Relay
{
    /// <summary>
    /// The relay server of a match (a dedicated server build, or the host's scene): it runs
    /// the authoritative simulation at a steady rate and never waits for anyone. Clients
    /// (TickwireRelayClient) join by address and get a snapshot of its state; it has no
    /// input of its own, every ADVANCE it runs is final, and a joining client's snapshot is
    /// a DUMP_STATE request. The per-frame path allocates nothing.
    /// <para>
    /// Not Unity Relay: tickwire's relay is its own authoritative server with client-side
    /// prediction, a TwSession you run yourself (a dedicated server build or the host's
    /// scene) that simulates the game and sends every client the canonical inputs. It is
    /// not Unity Relay, the Unity Gaming Services product that forwards packets between
    /// players through Unity's servers, and needs neither that service nor Unity Transport.
    /// </para>
    /// </summary>
    public sealed unsafe class TickwireRelayServer : MonoBehaviour
    {
        [SerializeField] private string bindAddress = "0.0.0.0:7777";
        [SerializeField] private uint playerSlots = 4; // the clients use the same number

        private TwSession _session;
        private TickwireRelayBoxes _state;
        private TickwireRelayBoxes[] _snapshots;
        private readonly byte[] _inputs = new byte[TickwireRelayBoxes.MaxPlayers * TickwireRelayBoxes.InputSize];
        private readonly byte[] _statuses = new byte[TickwireRelayBoxes.MaxPlayers];

        /// <summary>The authoritative state, for the server's own view.</summary>
        public TickwireRelayBoxes State
        {
            get { return _state; }
        }

        /// <summary>The bound address (the real port when bound to port 0): what clients connect to.</summary>
        public string Address
        {
            get { return _session != null ? _session.LocalAddress : null; }
        }

        /// <summary>The session, for figures (GetStats, TryGetPlayerStats).</summary>
        public TwSession Session
        {
            get { return _session; }
        }

        private void Start()
        {
            try
            {
                TwSessionConfig config = TwSessionConfig.RelayServer(playerSlots, TickwireRelayBoxes.InputSize, bindAddress);
                config.DesyncInterval = 10; // clients compare their state with the server's every 10 ticks
                _session = new TwSession(config);
                _snapshots = new TickwireRelayBoxes[_session.StateSlots]; // allocated once
                _session.Start();
                Debug.Log("tickwire: relay server on " + _session.LocalAddress);
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
                _session.Advance(); // no input: the clients' inputs come through the session
                RunRequests();
            }
            TwSessionEvent e;
            while (_session.TryPollEvent(out e))
            {
                TwSessionEventRelay relay = e.Data.Relay;
                switch (e.Kind)
                {
                    case TwSessionEventKind.PlayerJoined:
                        Debug.Log("tickwire: player " + relay.Player + " joined at tick " + relay.Tick);
                        break;
                    case TwSessionEventKind.PlayerReconnected:
                        Debug.Log("tickwire: player " + relay.Player + " is back");
                        break;
                    case TwSessionEventKind.PlayerLeft:
                        Debug.Log("tickwire: player " + relay.Player + " left (" + relay.DisconnectReason + "); its slot waits for it");
                        break;
                    case TwSessionEventKind.PlayerSlotFreed:
                        Debug.Log("tickwire: player " + relay.Player + "'s slot is free");
                        break;
                    case TwSessionEventKind.PlayerKicked:
                        Debug.Log("tickwire: player " + relay.Player + " kicked (" + relay.KickReason + ")");
                        break;
                    case TwSessionEventKind.ConnectionRejected:
                        Debug.Log("tickwire: refused a client (" + e.Data.Rejected.Reason + ")");
                        break;
                    case TwSessionEventKind.Fatal:
                        Debug.LogError("tickwire: " + e.Data.Fatal.GetMessage());
                        enabled = false;
                        break;
                }
            }
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
                        _session.ConfirmSave(r.Tick, _state.Checksum());
                        break;
                    case TwRequestKind.Load:
                        _state = _snapshots[r.Slot];
                        break;
                    case TwRequestKind.Advance:
                        _session.ReadInputs(_inputs);
                        _session.ReadInputStatus(_statuses);
                        _state.Step(_inputs, new ReadOnlySpan<byte>(_statuses, 0, (int)r.NumPlayers));
                        break;
                    case TwRequestKind.DumpState: // a joining client's snapshot: the state's bytes
                        fixed (TickwireRelayBoxes* snapshot = &_snapshots[r.Slot])
                        {
                            _session.ProvideState(r.Tick, new ReadOnlySpan<byte>(snapshot, sizeof(TickwireRelayBoxes)));
                        }
                        break;
                }
            }
        }

        private void OnDestroy()
        {
            if (_session != null)
            {
                _session.Dispose(); // the clients see the server go
            }
        }
    }
}
