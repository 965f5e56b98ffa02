// The relay tests: a RELAY_SERVER TwSession and RELAY_CLIENT sessions in one process,
// over real UDP on 127.0.0.1 through the link simulator, each driving the deterministic
// game of SessionGame.cs. Every client's authoritative state must equal the server's at
// every tick it has made authoritative; joins, departures, a desync with a new snapshot
// and the setup errors come out as the C API says. Part of the test program (Program
// is partial); the relay allocation test is in SessionAllocationTests.cs.

using System;
using System.Collections.Generic;
using Tickwire;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        private const uint RelaySlots = 4;

        private static void RunRelayTests()
        {
            Run("relay: config builders carry the library's defaults; create both modes", RelayConfigAndCreate);
            Run("relay: setup and per-frame errors (bad server address, wrong mode)", RelayErrors);
            Run("relay: a server and 3 clients over 127.0.0.1 agree on every authoritative tick; joins and departures", RelayMatchAgrees);
            Run("relay: KickPlayer removes a player for good: ServerLost KickedByEngine, no reconnect, the slot freed", RelayKickPlayer);
            Run("relay: a round trip past MaxPrediction becomes input delay, told by InputDelayChanged", RelayInputDelayChanged);
            Run("session: TicksDue after a hitch hands out at most MaxCatchUpMs of ticks; a bad cap is refused", SessionCatchUpCap);
            Run("relay: a desync is reported; RequestSnapshot brings the server's state back", RelayDesyncAndResnapshot);
            Run("relay allocation: 0 bytes over the frames of a server and 3 clients over UDP, a resync included", SessionZeroAllocationRelay);
        }

        // --- helpers ---------------------------------------------------------------------------

        /// <summary>A relay config of mode: RelaySlots players, the game's inputs, 16 ticks of prediction.</summary>
        private static TwSessionConfig RelayConfig(TwSessionMode mode)
        {
            TwSessionConfig c = mode == TwSessionMode.RelayServer
                ? TwSessionConfig.RelayServer(RelaySlots, SessionGame.InputSize, "127.0.0.1:0")
                : TwSessionConfig.RelayClient(RelaySlots, SessionGame.InputSize, "127.0.0.1:0");
            c.MaxPrediction = 16; // covers the simulated round trip with room to spare
            c.Host.SimSeed = 31;
            return c;
        }

        /// <summary>
        /// A relay server and its clients on 127.0.0.1, every session's outbound datagrams
        /// through the link simulator. Client i pushes SessionGame.InputFor(seed, i, k) as
        /// its k-th input.
        /// </summary>
        private sealed class RelayMatch : IDisposable
        {
            public TwSession Server;
            public SessionGame ServerGame;
            public string ServerAddress;
            public readonly List<TwSession> Clients = new List<TwSession>();
            public readonly List<SessionGame> ClientGames = new List<SessionGame>();
            private readonly TwLinkSimConfig _sim;

            public RelayMatch(TwLinkSimConfig sim, Func<TwSessionConfig, TwSessionConfig> editServer)
            {
                _sim = sim;
                try
                {
                    TwSessionConfig cfg = RelayConfig(TwSessionMode.RelayServer);
                    if (editServer != null)
                    {
                        cfg = editServer(cfg);
                    }
                    Server = new TwSession(cfg);
                    Server.SetLinkSim(TwDirection.Outbound, sim);
                    ServerAddress = Server.LocalAddress;
                    ServerGame = new SessionGame((int)cfg.NumPlayers, Server.StateSlots);
                    ServerGame.RecordAfterAdvance = true; // the server saves only for snapshots
                    Server.Start();
                }
                catch
                {
                    Dispose();
                    throw;
                }
            }

            public int AddClient(Func<TwSessionConfig, TwSessionConfig> edit)
            {
                TwSessionConfig cfg = RelayConfig(TwSessionMode.RelayClient);
                cfg.Host.SimSeed = 40 + (ulong)Clients.Count;
                if (edit != null)
                {
                    cfg = edit(cfg);
                }
                TwSession c = new TwSession(cfg);
                try
                {
                    c.SetLinkSim(TwDirection.Outbound, _sim);
                    c.SetServer(ServerAddress);
                    c.Start();
                }
                catch
                {
                    c.Dispose();
                    throw;
                }
                SessionGame g = new SessionGame((int)cfg.NumPlayers, c.StateSlots);
                for (int i = 0; i < g.State.Length; i++)
                {
                    g.State[i] = -1; // only the server's snapshot (a RESTORE) makes it right
                }
                Clients.Add(c);
                ClientGames.Add(g);
                return Clients.Count - 1;
            }

            /// <summary>One engine frame of every node (a disposed client is skipped).</summary>
            public void Frame()
            {
                ServerGame.RelayFrame(Server, 0);
                for (int i = 0; i < Clients.Count; i++)
                {
                    if (!Clients[i].IsDisposed)
                    {
                        ClientGames[i].RelayFrame(Clients[i], (uint)i);
                    }
                }
            }

            /// <summary>Frames (2 ms apart) for ms milliseconds, or until done() is true.</summary>
            public void RunFor(int ms, Func<bool> done)
            {
                Timer sw = Timer.StartNew();
                while (sw.ElapsedMilliseconds < ms)
                {
                    Frame();
                    if (done != null && done())
                    {
                        return;
                    }
                    System.Threading.Thread.Sleep(2);
                }
            }

            public bool AllSynchronized()
            {
                for (int i = 0; i < Clients.Count; i++)
                {
                    if (!Clients[i].IsDisposed && ClientGames[i].Count(TwSessionEventKind.Synchronized) == 0)
                    {
                        return false;
                    }
                }
                return true;
            }

            /// <summary>The latest Joined event of client i.</summary>
            public TwSessionEventRelay LatestJoin(int i)
            {
                Check(ClientGames[i].Count(TwSessionEventKind.Joined) > 0, "client " + i + " joined");
                return ClientGames[i].LastJoined;
            }

            /// <summary>
            /// Checks that client i's checksum equals the server's at every tick from its latest
            /// join to its authoritative tick; returns how many ticks were compared.
            /// </summary>
            public int AssertInSync(int i)
            {
                uint from = LatestJoin(i).Tick;
                uint to = StatsOf(Clients[i]).ConfirmedTick;
                Check(to - from < SessionGame.History, "the histories hold every compared tick");
                int compared = 0;
                for (uint t = from; t < to; t++)
                {
                    ulong server, client;
                    Check(ServerGame.TryGetSum(t, out server), "the server has a checksum for tick " + t);
                    Check(ClientGames[i].TryGetSum(t, out client), "client " + i + " saved authoritative tick " + t);
                    Equal(server, client, "client " + i + ": the authoritative state at the start of tick " + t);
                    compared++;
                }
                return compared;
            }

            public void Dispose()
            {
                foreach (TwSession c in Clients)
                {
                    c.Dispose();
                }
                if (Server != null)
                {
                    Server.Dispose();
                }
            }
        }

        private static List<TwSessionEvent> OfKind(SessionGame g, TwSessionEventKind kind)
        {
            List<TwSessionEvent> found = new List<TwSessionEvent>();
            foreach (TwSessionEvent e in g.Events)
            {
                if (e.Kind == kind)
                {
                    found.Add(e);
                }
            }
            return found;
        }

        private static string Kinds(SessionGame g)
        {
            System.Text.StringBuilder sb = new System.Text.StringBuilder();
            foreach (TwSessionEvent e in g.Events)
            {
                sb.Append(sb.Length == 0 ? "" : " ").Append(e.Kind);
            }
            return sb.ToString();
        }

        /// <summary>Ticks one TicksDue hands out after a 600 ms hitch of a relay server with the catch-up cap capMs.</summary>
        private static int TicksAfterHitch(uint capMs)
        {
            TwSessionConfig cfg = RelayConfig(TwSessionMode.RelayServer);
            cfg.MaxCatchUpMs = capMs;
            using (TwSession s = new TwSession(cfg))
            {
                SessionGame g = new SessionGame((int)cfg.NumPlayers, s.StateSlots);
                g.RecordAfterAdvance = true;
                s.Start();
                for (int i = 0; i < 20; i++)
                {
                    g.RelayFrame(s, 0);
                    System.Threading.Thread.Sleep(5);
                }
                GameOk(g, "server");
                System.Threading.Thread.Sleep(600);
                int due;
                Equal(TwResult.Ok, s.TicksDue(out due), "TicksDue");
                return due;
            }
        }

        private static void SessionCatchUpCap()
        {
            Equal(250u, TwSessionConfig.Default().MaxCatchUpMs, "the default cap");
            int dflt = TicksAfterHitch(250);
            Check(dflt >= 14 && dflt <= 16, "600 ms of hitch at 60 Hz, 250 ms cap: " + dflt + " ticks");
            int shortCap = TicksAfterHitch(100);
            Check(shortCap >= 5 && shortCap <= 7, "100 ms cap: " + shortCap + " ticks");
            int longCap = TicksAfterHitch(2000);
            Check(longCap >= 35 && longCap <= 60, "2 s cap, the whole hitch: " + longCap + " ticks");
            TwSessionConfig bad = RelayConfig(TwSessionMode.RelayServer);
            bad.MaxCatchUpMs = 0;
            TickwireException e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(bad), "a zero cap");
            Contains(e.NativeMessage, "tw_session_config.max_catch_up_ms: 0 is not in 1..=10000", "names the field");
            bad.MaxCatchUpMs = 10;
            e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(bad), "a cap shorter than a tick");
            Contains(e.NativeMessage, "tw_session_config.max_catch_up_ms: 10 is shorter than one tick", "names the field");
        }

        private static void RelayKickPlayer()
        {
            Func<TwSessionConfig, TwSessionConfig> one = c => { c.NumPlayers = 1; return c; };
            using (RelayMatch m = new RelayMatch(Link(10000, 2000, 0.0), one))
            {
                Equal(TwResult.InvalidState, m.Server.KickPlayer(0, 7), "a free slot");
                Contains(TwLibrary.LastErrorMessage(), "free", "the message says why");
                Equal(TwResult.InvalidArgument, m.Server.KickPlayer(1, 7), "no such player");
                Contains(TwLibrary.LastErrorMessage(), "tw_session_kick_player", "names the function");
                m.AddClient(one);
                m.RunFor(3000, () => OfKind(m.ClientGames[0], TwSessionEventKind.Joined).Count > 0);
                Equal(0u, m.LatestJoin(0).Player, "the client joined slot 0");
                Equal(TwResult.InvalidState, m.Clients[0].KickPlayer(0, 7), "a client cannot kick");
                Equal(TwResult.Ok, m.Server.KickPlayer(0, 0xC0FFEE), "kick");
                m.RunFor(1500, null);
                List<TwSessionEvent> kicked = OfKind(m.ServerGame, TwSessionEventKind.PlayerKicked);
                Equal(1, kicked.Count, "server: PLAYER_KICKED (" + Kinds(m.ServerGame) + ")");
                Equal(TwKickReason.Engine, kicked[0].Data.Relay.KickReason, "by the engine");
                Equal(0xC0FFEEu, kicked[0].Data.Relay.Code, "the engine's code");
                Equal(1, OfKind(m.ServerGame, TwSessionEventKind.PlayerSlotFreed).Count, "the slot freed at once");
                List<TwSessionEvent> lost = OfKind(m.ClientGames[0], TwSessionEventKind.ServerLost);
                Equal(1, lost.Count, "client: SERVER_LOST (" + Kinds(m.ClientGames[0]) + ")");
                Equal(TwDisconnectReason.KickedByEngine, lost[0].Data.Relay.DisconnectReason, "kicked by the server's engine");
                Equal(0, OfKind(m.ClientGames[0], TwSessionEventKind.Reconnecting).Count, "final: no reconnect");
                Equal(0, OfKind(m.ServerGame, TwSessionEventKind.PlayerReconnected).Count, "nobody came back");
                // The next player takes the slot at once.
                m.AddClient(one);
                m.RunFor(3000, () => OfKind(m.ClientGames[1], TwSessionEventKind.Joined).Count > 0);
                Equal(0u, m.LatestJoin(1).Player, "the next player took slot 0");
                Equal(0, OfKind(m.ServerGame, TwSessionEventKind.ConnectionRejected).Count, "nobody refused");
            }
        }

        private static void RelayInputDelayChanged()
        {
            using (RelayMatch m = new RelayMatch(Link(40000, 2000, 0.0), null))
            {
                m.AddClient(c => { c.MaxPrediction = 3; return c; });
                m.RunFor(4000, null);
                List<TwSessionEvent> told = OfKind(m.ClientGames[0], TwSessionEventKind.InputDelayChanged);
                Check(told.Count >= 1 && told.Count <= 5, "told, at most once a second: " + Kinds(m.ClientGames[0]));
                TwSessionEventInputDelay last = told[told.Count - 1].Data.InputDelay;
                Console.WriteLine("  input delay " + last.Ticks + " ticks, " + last.Spill + " beyond MaxPrediction 3");
                Check(last.Spill >= 1 && last.Ticks == last.Spill, "the delay is latency beyond MaxPrediction");
                TwSessionStats st;
                Equal(TwResult.Ok, m.Clients[0].GetStats(out st), "stats");
                Equal(last.Ticks, st.InputDelay, "the last event says the delay in force");
            }
        }

        // --- config, create, errors -------------------------------------------------------------

        private static void RelayConfigAndCreate()
        {
            TwSessionConfig s = TwSessionConfig.RelayServer(8, 3, "127.0.0.1:0");
            Equal(TwSessionMode.RelayServer, s.Mode, "server builder: mode");
            Equal(8u, s.NumPlayers, "players");
            Equal(3u, s.InputSize, "input size");
            Equal("127.0.0.1:0", s.GetBindAddress(), "bind address");
            TwSessionConfig c = TwSessionConfig.RelayClient(8, 3);
            Equal(TwSessionMode.RelayClient, c.Mode, "client builder: mode");
            Equal("0.0.0.0:0", c.GetBindAddress(), "a client binds any port by default");
            // The relay fields' defaults, as the header documents them.
            foreach (TwSessionConfig d in new[] { s, c, TwSessionConfig.Default() })
            {
                Equal(320u, d.StructSize, "struct_size");
                Check(Math.Abs(d.LateRate - 0.01) < 1e-12, "late_rate 0.01: " + d.LateRate);
                Equal(3u, d.ServerSendInterval, "server_send_interval");
                Equal(2u, d.ClientSendInterval, "client_send_interval");
                Equal(64u, d.JitterMaxDepth, "jitter_max_depth");
                Equal(120u, d.JitterHardCap, "jitter_hard_cap");
                Equal(300u, d.JitterMaxStarvedTicks, "jitter_max_starved_ticks");
                Equal(TwUnderflowPolicy.RepeatLast, d.JitterUnderflow, "jitter_underflow");
                Equal(TwLatePolicy.Adaptive, d.JitterLatePolicy, "jitter_late_policy");
                Equal(TwInputDelayMode.Fixed, d.InputDelayMode, "input_delay_mode");
                Equal(50u, d.InputDelayRttPercent, "input_delay_rtt_percent");
                Equal(8u, d.InputDelayMax, "input_delay_max");
                Equal(16u, d.CatchupTicks, "catchup_ticks");
                Equal(30000u, d.SlotTimeoutMs, "slot_timeout_ms");
                Equal(5000u, d.HelloTimeoutMs, "hello_timeout_ms");
                Equal(30000u, d.ReconnectWindowMs, "reconnect_window_ms");
                Equal(600u, d.StepHistory, "step_history");
                Equal(256u, d.StepWindow, "step_window");
                Equal(0u, d.BandwidthCap, "bandwidth_cap");
                Equal(16u, d.MaxUpdateDatagrams, "max_update_datagrams");
                Equal(8u, d.MaxPrediction, "max_prediction");
                Equal(250u, d.MaxCatchUpMs, "max_catch_up_ms");
                Equal(1500u, d.ProgressTimeoutMs, "progress_timeout_ms (P2P only)");
                Equal(10000u, d.LoadingGraceMs, "loading_grace_ms (P2P only)");
            }

            TwSession.DisposeAll();
            using (TwSession server = new TwSession(RelayConfig(TwSessionMode.RelayServer)))
            using (TwSession client = new TwSession(RelayConfig(TwSessionMode.RelayClient)))
            {
                Check(server.LocalAddress.StartsWith("127.0.0.1:", StringComparison.Ordinal), "the server is bound: " + server.LocalAddress);
                Check(client.LocalAddress.StartsWith("127.0.0.1:", StringComparison.Ordinal), "the client is bound: " + client.LocalAddress);
                Check(server.LocalAddress != client.LocalAddress, "two sockets");
                Equal(TwSessionMode.RelayServer, server.Mode, "server mode");
                Equal(TwSessionMode.RelayClient, client.Mode, "client mode");
                Check(server.StateSlots >= 1, "a server saves for its snapshots: " + server.StateSlots + " slots");
                Check(client.StateSlots >= 2, "a client saves for re-predictions: " + client.StateSlots + " slots");
                TwSessionStats st = StatsOf(client);
                Equal(TwSessionMode.RelayClient, st.Mode, "stats mode");
                Equal(0u, st.Running, "not running before Start");
                Equal(TwConstants.NoPlayer, st.LocalPlayer, "no player slot before joining");
                Equal(0u, st.Players, "no players yet");
                Equal((uint)client.StateSlots, st.StateSlots, "stats slots");
                st = StatsOf(server);
                Equal(TwSessionMode.RelayServer, st.Mode, "server stats mode");
                Equal(0u, st.Players, "no players before Start");
                Equal(2, TwSession.LiveCount, "two live sessions");
                Console.WriteLine("  state slots: server " + server.StateSlots + ", client " + client.StateSlots);
            }
            Equal(0, TwSession.LiveCount, "none live");
        }

        private static void RelayErrors()
        {
            TickwireException e;
            e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.RelayServer, c => { c.NumPlayers = 65; return c; })), "65 relay slots");
            Contains(e.NativeMessage, "tw_session_create", "names the function");
            e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.RelayClient, c => { c.LateRate = 0.7; return c; })), "late_rate 0.7");
            Contains(e.NativeMessage, "late_rate", "names the field");
            e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.RelayServer, c => { c.JitterLatePolicy = (TwLatePolicy)3; return c; })), "late policy 3");
            Contains(e.NativeMessage, "jitter_late_policy", "names the field");
            e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.RelayServer, c => { c.JitterHardCap = c.JitterMaxDepth - 1; return c; })), "hard cap below the max depth");
            Contains(e.NativeMessage, "jitter_hard_cap", "names the field");
            e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.RelayClient, c => { c.MaxPrediction = 0; return c; })), "a relay client predicts at least 1 tick");
            Contains(e.NativeMessage, "max_prediction", "names the field");
            ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.RelayClient, c => { c.InputDelayMode = (TwInputDelayMode)2; return c; })), "input delay mode 2");
            // The P2P fields that took the last reserved bytes are ignored by the relay modes.
            new TwSession(Tweaked(TwSessionMode.RelayClient, c => { c.ProgressTimeoutMs = 1; c.LoadingGraceMs = 1u << 24; return c; })).Dispose();

            using (TwSession server = new TwSession(RelayConfig(TwSessionMode.RelayServer)))
            using (TwSession client = new TwSession(RelayConfig(TwSessionMode.RelayClient)))
            {
                // SetServer: setup, so it throws with the library's message.
                e = ThrowsTw(TwResult.InvalidArgument, () => client.SetServer("not an address"), "a server address that is none");
                Contains(e.NativeMessage, "tw_session_set_server", "names the function");
                Contains(e.Message, e.NativeMessage, "the exception's message carries the library's");
                ThrowsTw(TwResult.InvalidArgument, () => client.SetServer("127.0.0.1:0"), "port 0");
                ThrowsTw(TwResult.InvalidArgument, () => client.SetServer("0.0.0.0:7777"), "an unspecified IP");
                Throws<ArgumentNullException>(() => client.SetServer(null), "null");
                e = ThrowsTw(TwResult.InvalidState, () => server.SetServer("127.0.0.1:7777"), "SetServer on a server");
                Contains(e.NativeMessage, "tw_session_set_server", "names the function");
                ThrowsTw(TwResult.InvalidState, () => client.Start(), "a client started without a server");
                ThrowsTw(TwResult.InvalidState, () => client.AddLocalPlayer(0), "players are for P2P");

                // The per-frame calls return the code and set the last error.
                Equal(TwResult.InvalidState, server.RequestSnapshot(), "RequestSnapshot on a server");
                Contains(TwLibrary.LastErrorMessage(), "tw_session_request_snapshot", "names the function");
                Equal(TwResult.InvalidState, client.RequestSnapshot(), "RequestSnapshot before Start");
                TwRelayPlayerStats ps;
                Equal(TwResult.InvalidState, client.GetPlayerStats(0, out ps), "player stats on a client");
                Contains(TwLibrary.LastErrorMessage(), "tw_session_player_stats", "names the function");
                Check(!client.TryGetPlayerStats(0, out ps), "TryGetPlayerStats is false on an error");
                Equal(TwResult.InvalidArgument, server.GetPlayerStats(RelaySlots, out ps), "a player beyond the slots");
                Equal(TwResult.Empty, server.GetPlayerStats(0, out ps), "an empty slot");
                Check(!server.TryGetPlayerStats(0, out ps), "TryGetPlayerStats is false for an empty slot");
                Equal(0u, ps.Player + ps.Peer + (uint)ps.Ticks, "nothing written for an empty slot");

                client.SetServer(server.LocalAddress);
                client.SetServer(server.LocalAddress); // may be named again before Start
                server.Start();
                client.Start();
                ThrowsTw(TwResult.InvalidState, () => client.SetServer(server.LocalAddress), "SetServer after Start");
                Equal(TwResult.InvalidState, client.RequestSnapshot(), "RequestSnapshot before the client has joined");
                Equal(TwResult.InvalidState, server.PushInput(0, new byte[2]), "a server has no player of its own");
                Contains(TwLibrary.LastErrorMessage(), "tw_session_push_input", "names the function");
            }
        }

        // --- the match --------------------------------------------------------------------------

        private static void RelayMatchAgrees()
        {
            // Slots free after 600 ms, so a departure also frees its slot within the test.
            using (RelayMatch m = new RelayMatch(Link(20000, 4000, 0.01), c => { c.SlotTimeoutMs = 600; return c; }))
            {
                for (int i = 0; i < 3; i++)
                {
                    m.AddClient(null);
                }
                Timer sw = Timer.StartNew();
                m.RunFor(10000, m.AllSynchronized);
                Check(m.AllSynchronized(), "every client joined and caught up within 10 s");
                Console.WriteLine("  all synchronized after " + sw.ElapsedMilliseconds + " ms");
                m.RunFor(3000, null);

                GameOk(m.ServerGame, "server");
                TwSessionStats ss = StatsOf(m.Server);
                Equal(1u, ss.Running, "server running");
                Equal(3u, ss.Players, "server: 3 players");
                Equal(3u, ss.ConnectedPeers, "server: 3 connections");
                Check(ss.ChecksCompared > 10, "the server sent checksums: " + ss.ChecksCompared);
                // The server's timeline starts at tick 1 (tick 0 is the initial state); it never
                // re-simulates, and every ADVANCE it hands out is final.
                Equal((long)ss.CurrentTick - 1, m.ServerGame.LastAdvancedTick, "the server's state is at its current tick");
                Equal(m.ServerGame.LastAdvancedTick, m.ServerGame.Advances, "one ADVANCE per server tick");
                Equal(0L, m.ServerGame.Resimulated, "the server never re-simulates");
                Equal(m.ServerGame.Advances, m.ServerGame.Authoritative, "every server ADVANCE is final");
                Check(m.ServerGame.DumpsProvided >= 1 && m.ServerGame.DumpsProvided <= 3, "snapshots asked for: " + m.ServerGame.DumpsProvided);
                List<TwSessionEvent> joined = OfKind(m.ServerGame, TwSessionEventKind.PlayerJoined);
                Equal(3, joined.Count, "server: PLAYER_JOINED per client (" + Kinds(m.ServerGame) + ")");
                bool[] slotTaken = new bool[RelaySlots];
                foreach (TwSessionEvent e in joined)
                {
                    Check(e.Data.Relay.Player < RelaySlots && !slotTaken[e.Data.Relay.Player], "a distinct slot: " + e.Data.Relay.Player);
                    slotTaken[e.Data.Relay.Player] = true;
                    Check(e.Peer != 0, "the event names the connection");
                }

                for (int i = 0; i < 3; i++)
                {
                    SessionGame g = m.ClientGames[i];
                    GameOk(g, "client " + i);
                    TwSessionEventRelay join = m.LatestJoin(i);
                    Equal(1, g.Count(TwSessionEventKind.Joined), "client " + i + ": one JOINED (" + Kinds(g) + ")");
                    Check(!join.IsReconnect, "a first join");
                    Equal((long)join.Tick, g.RestoredAt, "the snapshot came as a RESTORE of the join tick");
                    Check(g.Count(TwSessionEventKind.PeerConnected) >= 1, "client " + i + ": PEER_CONNECTED");
                    Equal(1, g.Count(TwSessionEventKind.Synchronized), "client " + i + ": SYNCHRONIZED");
                    Equal(0, g.Count(TwSessionEventKind.Desync), "client " + i + ": no DESYNC");
                    int compared = m.AssertInSync(i);
                    Check(compared > 120, "client " + i + ": compared " + compared + " authoritative ticks");

                    TwSessionStats st = StatsOf(m.Clients[i]);
                    Console.WriteLine("  client " + i + ": player " + join.Player + ", joined at " + join.Tick + ", compared " + compared +
                                      "; rtt " + (st.RttUs / 1000).ToString("F1") + " ms, lead " + st.LeadTicks.ToString("F2") +
                                      ", prediction " + st.PredictionDistance + ", server buffer " + st.ServerBufferDepth +
                                      ", re-predictions " + st.Rollbacks + ", resimulated " + st.ResimulatedTicks +
                                      ", late " + st.LateInputs + ", checks " + st.ChecksCompared);
                    Equal(1u, st.Running, "running");
                    Equal(1u, st.Players, "it has a slot");
                    Equal(join.Player, st.LocalPlayer, "its slot is the JOINED one");
                    Check(slotTaken[st.LocalPlayer], "the server gave out that slot");
                    Equal(0ul, st.Desyncs, "no desyncs");
                    Check(st.ChecksCompared > 3, "server checksums compared: " + st.ChecksCompared);
                    // The simulated 2 x 20 ms (+ up to 2 x 4 ms of jitter) shows in the round trip.
                    Check(st.RttUs > 35000 && st.RttUs < 200000, "rtt " + st.RttUs);
                    Check(st.LeadTicks > 0 && st.LeadTicks < 16, "lead " + st.LeadTicks);
                    Check(st.PredictionDistance >= 1 && st.PredictionDistance <= 16, "prediction distance " + st.PredictionDistance);
                    Check(st.ConfirmedTick <= st.CurrentTick, "authoritative tick not past the current one");
                    Check(st.TimeScale > 0.8 && st.TimeScale < 1.2, "time scale " + st.TimeScale);
                    // Inputs change every 4 ticks: predictions of the others go wrong and are redone.
                    Check(st.Rollbacks > 5 && st.ResimulatedTicks > st.Rollbacks, "re-predictions " + st.Rollbacks + ", resimulated " + st.ResimulatedTicks);
                    Check(g.Resimulated > 0 && g.Predicted > 0 && g.Authoritative > 0, "RESIMULATING, PREDICTED and AUTHORITATIVE advances seen");

                    // The server's view of this player.
                    TwRelayPlayerStats ps;
                    Check(m.Server.TryGetPlayerStats(join.Player, out ps), "the server has figures for player " + join.Player);
                    uint peer;
                    Equal(TwResult.Ok, m.Server.GetPlayerPeer(join.Player, out peer), "the player's connection");
                    Equal(join.Player, ps.Player, "player");
                    Equal(peer, ps.Peer, "the figures name the player's connection");
                    bool announced = false;
                    foreach (TwSessionEvent e in joined)
                    {
                        announced |= e.Data.Relay.Player == join.Player && e.Peer == peer;
                    }
                    Check(announced, "PLAYER_JOINED named this slot and connection");
                    Check(ps.Ticks > 120 && ps.NormalSteps > ps.Ticks / 2, "ticks " + ps.Ticks + ", normal " + ps.NormalSteps);
                    Check(ps.RttUs > 35000, "the server's round trip to it: " + ps.RttUs);
                    Check(ps.Duplicates > 0, "inputs are sent with redundancy");
                    Check(ps.UpdateBytes > 1000 && ps.StepCopies > 0 && ps.CopiesCapped == 0, "the step stream to it: " + ps.UpdateBytes + " bytes, " + ps.StepCopies + " copies");
                    TwPeerStats peerStats;
                    Equal(TwResult.Ok, m.Server.GetPeerStats(peer, out peerStats), "transport stats of the connection");
                    Check(peerStats.SrttUs > 35000, "the transport's round trip: " + peerStats.SrttUs);
                }
                TwRelayPlayerStats none;
                for (uint p = 0; p < RelaySlots; p++)
                {
                    if (!slotTaken[p])
                    {
                        Equal(TwResult.Empty, m.Server.GetPlayerStats(p, out none), "the free slot " + p + " has no figures");
                    }
                }

                // A fourth client joins mid-match into the free slot: a new snapshot for it, and the
                // others see the player appear in the canonical steps.
                uint freeSlot = 0;
                while (slotTaken[freeSlot])
                {
                    freeSlot++;
                }
                int dumps = m.ServerGame.DumpsProvided;
                m.AddClient(null);
                m.RunFor(10000, m.AllSynchronized);
                Check(m.AllSynchronized(), "the fourth client caught up");
                m.RunFor(1000, null);
                TwSessionEventRelay late = m.LatestJoin(3);
                Equal(freeSlot, late.Player, "the late client got the free slot");
                Check(late.Tick > 120, "a mid-match snapshot: tick " + late.Tick);
                Equal(dumps + 1, m.ServerGame.DumpsProvided, "the server's engine was asked for one more snapshot");
                Equal(4, OfKind(m.ServerGame, TwSessionEventKind.PlayerJoined).Count, "server: a fourth PLAYER_JOINED");
                for (int i = 0; i < 3; i++)
                {
                    // Players that joined after client i did appear too (how the first three
                    // joins interleave depends on timing); never its own slot.
                    int newcomer = 0;
                    foreach (TwSessionEvent e in OfKind(m.ClientGames[i], TwSessionEventKind.PlayerJoined))
                    {
                        Check(e.Data.Relay.Player != m.LatestJoin(i).Player, "client " + i + " is not told about itself");
                        Check(e.Data.Relay.Tick >= m.LatestJoin(i).Tick, "a player appearing after client " + i + " joined");
                        if (e.Data.Relay.Player == freeSlot)
                        {
                            newcomer++;
                            Equal(late.Tick, e.Data.Relay.Tick, "in the canonical steps from the late client's join tick");
                        }
                    }
                    Equal(1, newcomer, "client " + i + " saw the late player appear once (" + Kinds(m.ClientGames[i]) + ")");
                }
                Check(m.AssertInSync(3) > 40, "the late client is in sync");
                GameOk(m.ClientGames[3], "client 3");

                // Client 0 leaves (disposes its session): the server frees its slot at once; the
                // other clients see the player gone from the canonical steps.
                uint leaving = m.LatestJoin(0).Player;
                m.Clients[0].Dispose();
                m.RunFor(2000, () => OfKind(m.ServerGame, TwSessionEventKind.PlayerSlotFreed).Count > 0 &&
                                     OfKind(m.ClientGames[1], TwSessionEventKind.PlayerLeft).Count > 0 &&
                                     OfKind(m.ClientGames[2], TwSessionEventKind.PlayerLeft).Count > 0 &&
                                     OfKind(m.ClientGames[3], TwSessionEventKind.PlayerLeft).Count > 0);
                List<TwSessionEvent> left = OfKind(m.ServerGame, TwSessionEventKind.PlayerLeft);
                Equal(1, left.Count, "server: one PLAYER_LEFT (" + Kinds(m.ServerGame) + ")");
                Equal(leaving, left[0].Data.Relay.Player, "the leaving player's slot");
                Equal(TwDisconnectReason.Client, left[0].Data.Relay.DisconnectReason, "it said goodbye");
                List<TwSessionEvent> freed = OfKind(m.ServerGame, TwSessionEventKind.PlayerSlotFreed);
                Equal(1, freed.Count, "server: PLAYER_SLOT_FREED");
                Equal(leaving, freed[0].Data.Relay.Player, "the freed slot");
                Check(!m.Server.TryGetPlayerStats(leaving, out none), "no figures for the freed slot");
                Equal(3u, StatsOf(m.Server).Players, "3 players left");
                for (int i = 1; i < 4; i++)
                {
                    bool seen = false;
                    uint tick = 0;
                    foreach (TwSessionEvent e in OfKind(m.ClientGames[i], TwSessionEventKind.PlayerLeft))
                    {
                        if (e.Data.Relay.Player == leaving)
                        {
                            seen = true;
                            tick = e.Data.Relay.Tick;
                        }
                    }
                    Check(seen, "client " + i + " saw player " + leaving + " leave (" + Kinds(m.ClientGames[i]) + ")");
                    Check(tick > m.LatestJoin(i).Tick, "from a tick after its join: " + tick);
                    GameOk(m.ClientGames[i], "client " + i);
                    Check(m.AssertInSync(i) > 40, "client " + i + " still in sync");
                }
            }
        }

        private static void RelayDesyncAndResnapshot()
        {
            using (RelayMatch m = new RelayMatch(Link(10000, 2000, 0.0), c => { c.DesyncInterval = 10; return c; }))
            {
                m.AddClient(null);
                m.AddClient(null);
                m.RunFor(10000, m.AllSynchronized);
                Check(m.AllSynchronized(), "both clients caught up");
                m.RunFor(500, null);
                // From a few ticks on, client 1's engine simulates player 0 differently.
                long from = StatsOf(m.Clients[1]).CurrentTick + 5;
                m.ClientGames[1].DesyncFrom = from;
                bool asked = false;
                m.RunFor(6000, () =>
                {
                    if (!asked && m.ClientGames[1].Count(TwSessionEventKind.Desync) > 0)
                    {
                        m.ClientGames[1].DesyncFrom = -1; // the engine bug is fixed: ask for the server's state
                        Equal(TwResult.Ok, m.Clients[1].RequestSnapshot(), "RequestSnapshot after the desync");
                        asked = true;
                    }
                    return asked && m.ClientGames[1].Count(TwSessionEventKind.Joined) == 2 &&
                           StatsOf(m.Clients[1]).ConfirmedTick > m.LatestJoin(1).Tick + 90;
                });
                SessionGame g = m.ClientGames[1];
                Check(asked, "client 1 saw a DESYNC (" + Kinds(g) + ")");
                TwSessionEventDesync d = OfKind(g, TwSessionEventKind.Desync)[0].Data.Desync;
                Check(d.Tick >= from && d.Tick < from + 40, "found soon after it began at " + from + ": tick " + d.Tick);
                ulong mine, server;
                Check(g.TryGetSum(d.Tick, out mine), "the client has the tick's checksum");
                Check(m.ServerGame.TryGetSum(d.Tick, out server), "the server has the tick's checksum");
                Equal(mine, d.LocalChecksum, "the local checksum is the client's");
                Equal(server, d.RemoteChecksum, "the remote checksum is the server's");
                Check(d.LocalChecksum != d.RemoteChecksum, "they differ");
                List<TwSessionEvent> resync = OfKind(g, TwSessionEventKind.Resyncing);
                Equal(1, resync.Count, "RESYNCING (" + Kinds(g) + ")");
                Equal(TwConstants.NoPlayer, resync[0].Data.Relay.Player, "RESYNCING names no player");
                int at = g.Events.IndexOf(resync[0]);
                Check(g.Events.FindIndex(at, e => e.Kind == TwSessionEventKind.Joined) > at, "JOINED after RESYNCING");
                Equal(2, g.Count(TwSessionEventKind.Joined), "joined twice: the start and the resync");
                Equal(1u, StatsOf(m.Clients[1]).Resyncs, "client: one resync");
                Equal(1u, StatsOf(m.Server).Resyncs, "server: the resync, seen");
                Equal(0, OfKind(m.ServerGame, TwSessionEventKind.PlayerReconnected).Count, "the same connection and slot");
                Check(m.AssertInSync(1) > 60, "in sync after the new snapshot");
                GameOk(g, "client 1");
                Equal(0, m.ClientGames[0].Count(TwSessionEventKind.Desync), "the other client never desynced");
                m.AssertInSync(0);
                GameOk(m.ServerGame, "server");
                GameOk(m.ClientGames[0], "client 0");
            }
        }
    }
}
