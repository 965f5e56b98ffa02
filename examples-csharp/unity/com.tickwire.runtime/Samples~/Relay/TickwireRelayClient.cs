using System;
using Tickwire;
using UnityEngine;

namespace Tickwire.Samples.Relay
{
    /// <summary>
    /// A player of a relay match: joins the TickwireRelayServer at Server Address, pushes
    /// this player's input every tick, and predicts ahead of the server's authoritative
    /// state, re-simulating from it when a prediction was wrong. The session asks for
    /// snapshots, loads and re-simulations, and one RESTORE of the server's state when it
    /// joins; every request is answered in RunRequests. NetGraph shows the connection's
    /// figures. The per-frame path allocates nothing (NetGraph's text is rebuilt twice a
    /// second).
    /// <para>
    /// Not Unity Relay: tickwire's relay is its own authoritative server with client-side
    /// prediction, a TwSession you run yourself (a dedicated server build or the host's
    /// scene) that simulates the game and sends every client the canonical inputs. It is
    /// not Unity Relay, the Unity Gaming Services product that forwards packets between
    /// players through Unity's servers, and needs neither that service nor Unity Transport.
    /// </para>
    /// </summary>
    public sealed unsafe class TickwireRelayClient : MonoBehaviour
    {
        [SerializeField] private string serverAddress = "127.0.0.1:7777";
        [SerializeField] private uint playerSlots = 4;      // the server's number
        [SerializeField] private uint maxPrediction = 16;   // ticks predicted at most: covers 100+ ms round trips

        private TwSession _session;
        private TickwireRelayBoxes _state;
        private TickwireRelayBoxes[] _snapshots;
        private readonly byte[] _input = new byte[TickwireRelayBoxes.InputSize];
        private readonly byte[] _inputs = new byte[TickwireRelayBoxes.MaxPlayers * TickwireRelayBoxes.InputSize];
        private readonly byte[] _statuses = new byte[TickwireRelayBoxes.MaxPlayers];
        private int _frames;

        /// <summary>The predicted state, for your renderers (a re-prediction may correct it).</summary>
        public TickwireRelayBoxes State
        {
            get { return _state; }
        }

        /// <summary>This client's player slot, from the Joined event (TwConstants.NoPlayer before).</summary>
        public uint Player { get; private set; }

        /// <summary>Joined and caught up: the match runs.</summary>
        public bool Running { get; private set; }

        /// <summary>Desyncs seen (each one asks the server for a new snapshot).</summary>
        public int Desyncs { get; private set; }

        /// <summary>A one-line net graph (round trip, lead, server buffer, prediction, re-simulations, late inputs).</summary>
        public string NetGraph { get; private set; }

        /// <summary>The session, for figures (GetStats) and the authoritative tick (ConfirmedTick).</summary>
        public TwSession Session
        {
            get { return _session; }
        }

        private void Start()
        {
            Player = TwConstants.NoPlayer;
            NetGraph = "";
            try
            {
                TwSessionConfig config = TwSessionConfig.RelayClient(playerSlots, TickwireRelayBoxes.InputSize);
                config.MaxPrediction = maxPrediction;
                _session = new TwSession(config);
                _snapshots = new TickwireRelayBoxes[_session.StateSlots]; // allocated once
                _session.SetServer(serverAddress);                         // an IP address and port
                _session.Start();                                          // Joined follows, with the snapshot
            }
            catch (TickwireException e)
            {
                // Code and the library's message: a stale native library, a bad address, ...
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
                int dx, dy;
                SampleInput.Read(out dx, out dy);
                _input[0] = (byte)(dx + 1);
                _input[1] = (byte)(dy + 1);
                _session.PushInput(TwConstants.LocalPlayer, _input); // this client's player, whichever slot it has
                _session.Advance();                                  // Ok, or NotSynchronized before it joined
                RunRequests();
            }
            TwSessionEvent e;
            while (_session.TryPollEvent(out e))
            {
                OnEvent(ref e);
            }
            if (++_frames % 30 == 0)
            {
                UpdateNetGraph();
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
                    case TwRequestKind.Load: // back to the authoritative state, to re-simulate from it
                        _state = _snapshots[r.Slot];
                        break;
                    case TwRequestKind.Advance:
                        _session.ReadInputs(_inputs);
                        _session.ReadInputStatus(_statuses);
                        _state.Step(_inputs, new ReadOnlySpan<byte>(_statuses, 0, (int)r.NumPlayers));
                        // r.IsResimulating: mute sounds and particles (they were shown already). One-time
                        // effects (scores) wait until the tick is below GetStats' ConfirmedTick.
                        break;
                    case TwRequestKind.Restore: // the server's snapshot: this client starts from it
                        fixed (TickwireRelayBoxes* state = &_state)
                        {
                            _session.ReadState(new Span<byte>(state, sizeof(TickwireRelayBoxes)));
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
                case TwSessionEventKind.Joined:
                    Player = relay.Player;
                    Debug.Log("tickwire: joined as player " + relay.Player + (relay.IsReconnect ? " (back in its slot)" : ""));
                    break;
                case TwSessionEventKind.Synchronized:
                    Running = true;
                    Debug.Log("tickwire: caught up; the match runs");
                    break;
                case TwSessionEventKind.PlayerJoined:
                    Debug.Log("tickwire: player " + relay.Player + " joined");
                    break;
                case TwSessionEventKind.PlayerLeft:
                    Debug.Log("tickwire: player " + relay.Player + " left");
                    break;
                case TwSessionEventKind.Desync:
                    // The simulation differs from the server's (nondeterminism: a bug to fix). Take the
                    // server's state again: Resyncing, then Joined with a new snapshot.
                    Desyncs++;
                    Debug.LogError("tickwire: desync at tick " + e.Data.Desync.Tick + "; asking for a new snapshot");
                    _session.RequestSnapshot();
                    break;
                case TwSessionEventKind.Reconnecting:
                    Running = false;
                    Debug.Log("tickwire: connection lost (" + relay.DisconnectReason + "); reconnecting");
                    break;
                case TwSessionEventKind.ServerLost:
                    Running = false;
                    Debug.LogError("tickwire: the server is gone (" + relay.DisconnectReason + ")");
                    enabled = false;
                    break;
                case TwSessionEventKind.Fatal:
                    Debug.LogError("tickwire: " + e.Data.Fatal.GetMessage());
                    enabled = false;
                    break;
            }
        }

        private void UpdateNetGraph()
        {
            TwSessionStats st;
            if (_session.GetStats(out st) != TwResult.Ok)
            {
                return;
            }
            NetGraph = "rtt " + (st.RttUs / 1000).ToString("F0") + " ms  lead " + st.LeadTicks.ToString("F1") +
                       "  buffer " + st.ServerBufferDepth + "  prediction " + st.PredictionDistance +
                       "  resimulated " + st.ResimulatedTicks + "  late " + st.LateInputs;
        }

        private void OnDestroy()
        {
            if (_session != null)
            {
                _session.Dispose(); // the server sees the player leave
            }
        }
    }
}
