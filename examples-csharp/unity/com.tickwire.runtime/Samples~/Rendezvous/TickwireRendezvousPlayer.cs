using System;
using Tickwire;
using UnityEngine;

namespace Tickwire.Samples.Rendezvous
{
    /// <summary>
    /// One player of a P2P rollback match whose peers meet through a rendezvous, as players
    /// behind home routers and mobile networks do: no peer needs another's address. Your
    /// backend gives each player the match's secret and a ticket (TwRendezvous.GenerateTicket
    /// with the rendezvous's key: the match, this player's slot, the number of players); the
    /// player sets the rendezvous, adds its one local player and every other player with no
    /// address, and starts. The rendezvous relays the match at once (Relayed) and the peers
    /// move to a direct path when one answers (Direct). Every PathChanged event is logged,
    /// and PathOf / PathText show each player's path now.
    /// <para>
    /// Inspector fields: Ticket and Match Secret (base64, from your backend: paste them for a
    /// test, set them from code in a game) and Rendezvous Address (where the tickets say the
    /// rendezvous is). Left empty, the three come from a TickwireRendezvousLocalService in the
    /// scene, which runs a rendezvous in the editor and mints the tickets itself (the sample
    /// scene does that). Private Match relays everything: nobody learns this player's
    /// address. The game (a dot per player, moved with the arrow keys, WASD or a gamepad's
    /// d-pad: SampleInput) is a stand-in for yours; the per-frame path allocates nothing but
    /// the text of a path change.
    /// </para>
    /// </summary>
    public sealed class TickwireRendezvousPlayer : MonoBehaviour
    {
        [SerializeField] private uint localPlayer = 0;
        [SerializeField] private uint players = 2;
        [SerializeField] private string bindAddress = "0.0.0.0:0";
        [SerializeField] private string rendezvousAddress = "";
        [SerializeField] private string ticket = "";
        [SerializeField] private string matchSecret = "";
        [SerializeField] private bool privateMatch = false;

        private const int MaxPlayers = 8; // a rendezvous introduces at most 8 peers

        private TwSession _session;
        // The whole game state: each player's x and y. A snapshot is a copy into a slot the
        // session names (allocated once, at Start).
        private readonly int[] _state = new int[2 * MaxPlayers];
        private int[][] _snapshots;
        private readonly byte[] _input = new byte[1];
        private readonly byte[] _inputs = new byte[MaxPlayers];
        private readonly TwPath[] _paths = new TwPath[MaxPlayers];
        private readonly string[] _addresses = new string[MaxPlayers];

        /// <summary>Where player's dot is now, for your renderers (a rollback may correct it).</summary>
        public void PositionOf(uint player, out int x, out int y)
        {
            x = player < MaxPlayers ? _state[2 * player] : 0;
            y = player < MaxPlayers ? _state[2 * player + 1] : 0;
        }

        /// <summary>Every peer is heard from: the match runs.</summary>
        public bool Running { get; private set; }

        /// <summary>One line: each remote player's path and where it goes (rebuilt on each change).</summary>
        public string PathText { get; private set; }

        /// <summary>The session, for figures (GetStats, GetNetworkStats: Path and GetPathAddress).</summary>
        public TwSession Session
        {
            get { return _session; }
        }

        /// <summary>How remote player's datagrams go now, as its latest PathChanged event said (None before).</summary>
        public TwPath PathOf(uint player)
        {
            return player < MaxPlayers ? _paths[player] : TwPath.None;
        }

        /// <summary>Where they go: the peer's address (Direct) or the relay's (Relayed); "" before.</summary>
        public string AddressOf(uint player)
        {
            return player < MaxPlayers && _addresses[player] != null ? _addresses[player] : "";
        }

        private void Start()
        {
            PathText = "";
            string address = rendezvousAddress;
            byte[] ticketBytes;
            byte[] secret;
            try
            {
                if (players < 2 || players > MaxPlayers || localPlayer >= players)
                {
                    throw new ArgumentException("players must be 2.." + MaxPlayers + " and localPlayer below it");
                }
                if (string.IsNullOrEmpty(ticket))
                {
                    // The scene's stand-in for the backend and the rendezvous service.
                    TickwireRendezvousLocalService local = TickwireRendezvousLocalService.Current;
                    if (local == null)
                    {
                        throw new InvalidOperationException("no ticket set, and no TickwireRendezvousLocalService in the scene to mint one");
                    }
                    local.Issue(localPlayer, players, out address, out ticketBytes, out secret);
                }
                else
                {
                    ticketBytes = Convert.FromBase64String(ticket);
                    secret = Convert.FromBase64String(matchSecret);
                }
            }
            catch (Exception e)
            {
                Debug.LogError("tickwire: " + e.Message);
                enabled = false;
                return;
            }
            try
            {
                TwSessionConfig config = TwSessionConfig.Default(TwSessionMode.P2P);
                config.NumPlayers = players;
                config.InputSize = 1;
                config.SetBindAddress(bindAddress);
                // The players' secret: the rendezvous never has it, and cannot read what it relays.
                using (TwSecurity security = TwSecurity.ForMatch(secret))
                {
                    _session = new TwSession(config, security);
                }
                _snapshots = new int[_session.StateSlots][];
                for (int i = 0; i < _snapshots.Length; i++)
                {
                    _snapshots[i] = new int[_state.Length];
                }
                _session.SetRendezvous(address, ticketBytes, privateMatch);
                // Every peer lists the same players in the same order; the others have no address.
                for (uint p = 0; p < players; p++)
                {
                    if (p == localPlayer)
                    {
                        _session.AddLocalPlayer(p);
                    }
                    else
                    {
                        _session.AddRendezvousPlayer(p);
                    }
                }
                _session.Start();
                Debug.Log("tickwire: player " + localPlayer + " meets its peers through the rendezvous at " + address +
                          (privateMatch ? " (private: relayed only)" : ""));
            }
            catch (TickwireException e)
            {
                // Code and the library's message: a bad ticket or address, no secret, a stale library, ...
                Debug.LogError("tickwire: " + e.Message);
                enabled = false;
            }
            finally
            {
                Array.Clear(secret, 0, secret.Length);
            }
        }

        private void Update()
        {
            if (_session == null)
            {
                return;
            }
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
                    case TwSessionEventKind.PathChanged:
                    {
                        TwSessionEventPath path = e.Data.Path;
                        if (path.Player < MaxPlayers)
                        {
                            _paths[path.Player] = path.Path;
                            _addresses[path.Player] = path.GetAddress();
                            PathText = BuildPathText();
                        }
                        Debug.Log("tickwire: player " + path.Player + "'s path: " + path.Path + " via " + path.GetAddress());
                        break;
                    }
                    case TwSessionEventKind.RendezvousRefused:
                        // Advisory: the session keeps trying. A bad or expired ticket needs a new one.
                        Debug.LogWarning("tickwire: the rendezvous refused the ticket: " + e.Data.Refusal.Reason);
                        break;
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
                    case TwSessionEventKind.Fatal:
                        Debug.LogError("tickwire: " + e.Data.Fatal.GetMessage());
                        enabled = false;
                        break;
                }
            }
        }

        private string BuildPathText()
        {
            string text = "";
            for (uint p = 0; p < players; p++)
            {
                if (p != localPlayer)
                {
                    text += (text.Length > 0 ? "; " : "") + "player " + p + ": " + _paths[p] +
                            (_addresses[p] != null ? " via " + _addresses[p] : "");
                }
            }
            return text;
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
                        Array.Copy(_state, _snapshots[r.Slot], _state.Length);
                        _session.ConfirmSave(r.Tick, Checksum(_state));
                        break;
                    case TwRequestKind.Load:
                        Array.Copy(_snapshots[r.Slot], _state, _state.Length);
                        break;
                    case TwRequestKind.Advance:
                        _session.ReadInputs(_inputs);
                        Simulate(_state, _inputs, (int)players);
                        // r.IsResimulating: skip sounds and particles.
                        break;
                }
            }
        }

        private static void Simulate(int[] s, byte[] inputs, int count)
        {
            for (int p = 0; p < count; p++)
            {
                byte input = inputs[p];
                s[2 * p] += ((input >> 1) & 1) - (input & 1);
                s[2 * p + 1] += ((input >> 3) & 1) - ((input >> 2) & 1);
            }
        }

        private static ulong Checksum(int[] s)
        {
            ulong h = 14695981039346656037UL;
            for (int i = 0; i < s.Length; i++)
            {
                h = unchecked((h ^ (uint)s[i]) * 1099511628211UL);
            }
            return h;
        }

        private void OnDestroy()
        {
            if (_session != null)
            {
                _session.Dispose(); // the other players see a disconnect
            }
        }
    }
}
