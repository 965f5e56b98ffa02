// The session tests: TwSession (P2P, SYNCTEST, SPECTATOR, REPLAY) through the
// idiomatic layer, over real UDP on 127.0.0.1 with the link simulator, driving the
// deterministic game of SessionGame.cs. Part of the test program (Program is partial);
// the relay modes' tests are in SessionRelayTests.cs, the allocation tests in
// SessionAllocationTests.cs.

using System;
using System.IO;
using Tickwire;
using Tickwire.Native;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        private static void RunSessionTests()
        {
            Run("session: config defaults and the bind address", SessionConfigDefaults);
            Run("session: create and destroy in every mode", SessionCreateAndDestroy);
            Run("session: setup errors throw TickwireException with the message", SessionSetupErrors);
            Run("session: per-frame errors return a code and set the last error", SessionFrameErrors);
            Run("session: two P2P peers over 127.0.0.1 agree on every confirmed tick", SessionP2PAgree);
            Run("session: synctest catches injected nondeterminism", SessionSyncTest);
            Run("session: a recorded replay reproduces the checksums (bytes and file)", SessionReplayRoundTrip);
            Run("session: a spectator joining mid-match ends in sync", SessionSpectator);
            Run("session: a desync is reported and dumped; a leaving peer is disconnected", SessionDesyncAndDisconnect);
            Run("session: DisconnectPlayer drops a remote player on purpose; both sides see KickedByEngine; the match goes on", SessionDisconnectPlayer);
            Run("session: SetTimeouts: 0 never drops a silent peer; changed while running, a shorter one drops it", SessionSetTimeouts);
            Run("session: SetLoading: P2P only, any time (before Start, while running)", SessionSetLoading);
            Run("session: panic inside a call: PANIC code, session poisoned, no crash", SessionPanic);
            Run("session: a call while another thread is inside one gets Busy, no crash", SessionBusy);
            Run("session: use after Dispose: ObjectDisposedException, no crash", SessionUseAfterDispose);
            Run("session: DisposeAll releases every live session", SessionDisposeAll);
            Run("session and host: forgotten ones leave no entries in the live lists", LiveListsForgetCollectedHandles);
            Run("session allocation: 0 bytes over 100,000 synctest frames of push+advance+poll", SessionZeroAllocationSyncTest);
            Run("session allocation: 0 bytes over a P2P pair's frames over UDP", SessionZeroAllocationP2P);
            RunRelayTests();
            RunSessionMessageTests();
            RunCarrierTests();
            RunRendezvousTests();
        }

        // --- helpers ---------------------------------------------------------------------------

        private static TwSessionConfig SessionConfig(TwSessionMode mode)
        {
            TwSessionConfig c = TwSessionConfig.Default(mode);
            c.NumPlayers = 2;
            c.InputSize = SessionGame.InputSize;
            c.Host.SimSeed = 7;
            c.SetBindAddress("127.0.0.1:0");
            return c;
        }

        private static TwLinkSimConfig Link(ulong latencyUs, double jitterUs, double loss)
        {
            TwLinkSimConfig c = TwLinkSimConfig.Default();
            c.LatencyUs = latencyUs;
            if (jitterUs > 0)
            {
                c.JitterKind = TwJitterKind.Uniform;
                c.JitterUs = jitterUs;
            }
            if (loss > 0)
            {
                c.LossKind = TwLossKind.Bernoulli;
                c.LossProbability = loss;
            }
            return c;
        }

        private static TwSessionStats StatsOf(TwSession s)
        {
            TwSessionStats st;
            Equal(TwResult.Ok, s.GetStats(out st), "GetStats");
            return st;
        }

        private static void GameOk(SessionGame g, string who)
        {
            Equal(TwResult.Ok, g.Failure, who + ": the engine's calls (first failure: " + g.FailureWhat + ")");
            Equal(0L, g.FlagViolations, who + ": PREDICTED / AUTHORITATIVE flags agree with the input statuses");
        }

        private static string TempPath(string name)
        {
            return Path.Combine(Path.GetTempPath(), "tickwire-cs-" + name + "-" + Guid.NewGuid().ToString("N"));
        }

        /// <summary>Two P2P peers on 127.0.0.1, player 0 on A, player 1 on B, a simulated link each way; started.</summary>
        private sealed class SessionPair : IDisposable
        {
            public TwSession A;
            public TwSession B;
            public SessionGame GameA;
            public SessionGame GameB;

            public SessionPair(ulong latencyUs, double jitterUs, double loss, Action<TwSession> setupA)
            {
                try
                {
                    TwSessionConfig cfg = SessionConfig(TwSessionMode.P2P);
                    A = new TwSession(cfg);
                    cfg.Host.SimSeed = 8;
                    B = new TwSession(cfg);
                    TwLinkSimConfig sim = Link(latencyUs, jitterUs, loss);
                    A.SetLinkSim(TwDirection.Outbound, sim);
                    B.SetLinkSim(TwDirection.Outbound, sim);
                    // Every peer lists the same players in the same order.
                    A.AddLocalPlayer(0);
                    A.AddRemotePlayer(1, B.LocalAddress);
                    B.AddRemotePlayer(0, A.LocalAddress);
                    B.AddLocalPlayer(1);
                    if (setupA != null)
                    {
                        setupA(A);
                    }
                    GameA = new SessionGame(2, A.StateSlots);
                    GameB = new SessionGame(2, B.StateSlots);
                    A.Start();
                    B.Start();
                }
                catch
                {
                    Dispose();
                    throw;
                }
            }

            public void Frame()
            {
                GameA.Frame(A, 0);
                GameB.Frame(B, 1);
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

            /// <summary>
            /// Checks equal checksums at every tick before both peers' confirmed tick, and
            /// that peer A saved each of them; returns that tick.
            /// </summary>
            public uint AssertInSync()
            {
                // Not the confirmed ticks read now: inputs received after a peer's last
                // advance are confirmed already, but their corrections wait for its next one.
                uint confirmed = Math.Min(GameA.ConfirmedAtLastAdvance, GameB.ConfirmedAtLastAdvance);
                Check(confirmed < SessionGame.History, "the history holds every confirmed tick");
                for (uint t = 0; t < confirmed; t++)
                {
                    ulong a, b;
                    Check(GameA.TryGetSum(t, out a), "peer A saved a checksum for confirmed tick " + t);
                    Check(GameB.TryGetSum(t, out b), "peer B saved a checksum for confirmed tick " + t);
                    Equal(a, b, "checksum of confirmed tick " + t);
                }
                return confirmed;
            }

            public void Dispose()
            {
                if (A != null)
                {
                    A.Dispose();
                }
                if (B != null)
                {
                    B.Dispose();
                }
            }
        }

        // --- config, lifecycle, errors ------------------------------------------------------------

        private static void SessionConfigDefaults()
        {
            TwSessionConfig c = TwSessionConfig.Default();
            Equal(320u, c.StructSize, "struct_size");
            Equal(TwSessionMode.P2P, c.Mode, "mode");
            Equal(2u, c.NumPlayers, "players");
            Equal(2u, c.InputSize, "input size");
            Check(Math.Abs(c.TickRateHz - 60.0) < 1e-6, "60 Hz: " + c.TickRateHz);
            Equal(8u, c.MaxPrediction, "max prediction");
            Equal(0u, c.InputDelay, "input delay");
            Equal(2u, c.CheckDistance, "check distance");
            Equal(TwPrediction.RepeatLast, c.Prediction, "prediction");
            Check(c.DisconnectNotifyMs < c.DisconnectTimeoutMs, "notify before the timeout");
            Equal(96u, c.Host.StructSize, "the embedded host config is initialized");
            Equal("0.0.0.0:0", c.GetBindAddress(), "bind address");
            Equal(1500u, c.ProgressTimeoutMs, "progress_timeout_ms (took the place of reserved0)");
            Equal(250u, c.MaxCatchUpMs, "max_catch_up_ms");
            Equal(10000u, c.LoadingGraceMs, "loading_grace_ms (took the place of the last reserved bytes)");
            Equal(TwSessionMode.SyncTest, TwSessionConfig.Default(TwSessionMode.SyncTest).Mode, "Default(mode) sets the mode");

            c.SetBindAddress("[2001:db8::1234:5678]:65000");
            c.SetBindAddress("127.0.0.1:7000");
            Equal("127.0.0.1:7000", c.GetBindAddress(), "a shorter address clears the longer one's tail");
            Equal((byte)0, c.BindAddress[14], "NUL-terminated");
            Equal((byte)0, c.BindAddress[20], "tail cleared");
            c.SetBindAddress(new string('9', 63));
            Throws<ArgumentException>(() => c.SetBindAddress(new string('9', 64)), "64 bytes do not fit with the NUL");
            Throws<ArgumentNullException>(() => c.SetBindAddress(null), "null");
        }

        private static void SessionCreateAndDestroy()
        {
            TwSession.DisposeAll();
            TwSessionConfig p2pConfig = SessionConfig(TwSessionMode.P2P);
            TwSession p2p = new TwSession(p2pConfig);
            string addr = p2p.LocalAddress;
            Check(addr.StartsWith("127.0.0.1:", StringComparison.Ordinal) && int.Parse(addr.Substring(10)) > 0, "bound to a real port: " + addr);
            Equal(TwSessionMode.P2P, p2p.Mode, "mode");
            Equal(2, p2p.NumPlayers, "players");
            Equal(SessionGame.InputSize, p2p.InputSize, "input size");
            Equal(8 + 2 + 8, p2p.StateSlots, "P2P: max_prediction + 2 + the desync-check slots");
            TwSessionStats st = StatsOf(p2p);
            Equal(0u, st.Running, "not running before Start");
            Equal(TwSessionMode.P2P, st.Mode, "stats mode");
            Equal((uint)p2p.StateSlots, st.StateSlots, "stats slots");
            int due;
            Equal(TwResult.InvalidState, p2p.TicksDue(out due), "TicksDue before Start");
            TwSessionEvent ev;
            Equal(TwResult.Empty, p2p.PollEvent(out ev), "no events before Start");
            TwRequest rq;
            Equal(TwResult.Empty, p2p.PollRequest(out rq), "no requests before Start");

            TwSessionConfig stc = SessionConfig(TwSessionMode.SyncTest);
            stc.CheckDistance = 3;
            TwSession synctest = new TwSession(stc);
            Equal(2 * (3 + 2), synctest.StateSlots, "SYNCTEST: check_distance + 2, twice (saved and resimulated states)");
            TickwireException e = ThrowsTw(TwResult.InvalidState, () => { string s = synctest.LocalAddress; }, "no socket in SYNCTEST");
            Contains(e.NativeMessage, "tw_session_local_address", "names the function");
            TwSession replay = new TwSession(SessionConfig(TwSessionMode.Replay));
            Equal(0, replay.StateSlots, "REPLAY never saves");
            TwSession spectator = new TwSession(SessionConfig(TwSessionMode.Spectator));
            Equal(0, spectator.StateSlots, "SPECTATOR never saves");
            Check(spectator.LocalAddress.StartsWith("127.0.0.1:", StringComparison.Ordinal), "a spectator has a socket");
            Equal(4, TwSession.LiveCount, "four live sessions");

            p2p.Dispose();
            Check(p2p.IsDisposed && p2p.Handle.IsClosed, "disposed");
            // The port is free again once Dispose returns: the socket is closed.
            p2pConfig.SetBindAddress(addr);
            using (TwSession again = new TwSession(p2pConfig))
            {
                Equal(addr, again.LocalAddress, "the same port binds again");
            }
            synctest.Dispose();
            replay.Dispose();
            spectator.Dispose();
            Equal(0, TwSession.LiveCount, "none live");
        }

        private static TwSessionConfig Tweaked(TwSessionMode mode, Func<TwSessionConfig, TwSessionConfig> change)
        {
            return change(SessionConfig(mode));
        }

        private static void SessionSetupErrors()
        {
            TickwireException e = ThrowsTw(TwResult.InvalidArgument,
                () => new TwSession(Tweaked(TwSessionMode.P2P, c => { c.Mode = (TwSessionMode)99; return c; })), "mode 99");
            Contains(e.NativeMessage, "tw_session_create", "names the function");
            Contains(e.NativeMessage, "mode 99", "names the field and value");
            ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.SyncTest, c => { c.NumPlayers = 0; return c; })), "0 players");
            ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.SyncTest, c => { c.InputSize = TwConstants.MaxInputSize + 1; return c; })), "256-byte inputs");
            e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.SyncTest, c => { c.TickRateHz = 0; return c; })), "0 Hz");
            Contains(e.NativeMessage, "tick_rate_hz", "names the field");
            e = ThrowsTw(TwResult.VersionMismatch, () => new TwSession(Tweaked(TwSessionMode.SyncTest, c => { c.StructSize = 12; return c; })), "struct_size 12");
            Contains(e.NativeMessage, "struct_size", "names the field");
            ThrowsTw(TwResult.VersionMismatch, () => new TwSession(new TwSessionConfig()), "a zeroed config (forgot Default())");
            e = ThrowsTw(TwResult.VersionMismatch, () => new TwSession(Tweaked(TwSessionMode.P2P, c => { c.Host.StructSize = 8; return c; })), "host.struct_size 8");
            Contains(e.NativeMessage, "host.struct_size", "names the nested field");
            // The former reserved bytes are P2P settings now: other modes ignore them, 0 is the
            // behaviour from before each field.
            new TwSession(Tweaked(TwSessionMode.SyncTest, c => { c.ProgressTimeoutMs = 7; c.LoadingGraceMs = 1u << 24; return c; })).Dispose();
            new TwSession(Tweaked(TwSessionMode.P2P, c => { c.ProgressTimeoutMs = 0; c.LoadingGraceMs = 0; return c; })).Dispose();
            e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(Tweaked(TwSessionMode.P2P, c => { c.SetBindAddress("not an address"); return c; })), "bad bind address");
            Contains(e.NativeMessage, "bind_address", "names the field");

            using (TwSession p = new TwSession(SessionConfig(TwSessionMode.P2P)))
            {
                ThrowsTw(TwResult.AddressInUse, () => new TwSession(Tweaked(TwSessionMode.P2P, c => { c.SetBindAddress(p.LocalAddress); return c; })), "bind a port in use");
                e = ThrowsTw(TwResult.InvalidArgument, () => p.AddLocalPlayer(2), "player 2 of 2");
                Contains(e.NativeMessage, "tw_session_add_local_player", "names the function");
                p.AddLocalPlayer(0);
                ThrowsTw(TwResult.InvalidArgument, () => p.AddLocalPlayer(0), "player 0 added twice");
                e = ThrowsTw(TwResult.InvalidArgument, () => p.AddRemotePlayer(1, "nowhere"), "an address that is no address");
                Contains(e.NativeMessage, "tw_session_add_remote_player", "names the function");
                ThrowsTw(TwResult.InvalidArgument, () => p.AddRemotePlayer(1, "127.0.0.1:0"), "port 0");
                // A null address is a player met through a rendezvous: without one, the library refuses it.
                e = ThrowsTw(TwResult.NullArgument, () => p.AddRemotePlayer(1, null), "null address without a rendezvous");
                Contains(e.NativeMessage, "tw_session_add_remote_player", "names the function");
                e = ThrowsTw(TwResult.InvalidState, () => p.Start(), "start with player 1 missing");
                Contains(e.NativeMessage, "tw_session_start", "names the function");
                ThrowsTw(TwResult.InvalidState, () => p.Spectate("127.0.0.1:9"), "Spectate is for SPECTATOR sessions");
                ThrowsTw(TwResult.InvalidState, () => p.LoadReplay(new byte[16]), "LoadReplay is for REPLAY sessions");
                ThrowsTw(TwResult.InvalidArgument, () => p.SetInputDelay(33), "input delay 33");
                ThrowsTw(TwResult.InvalidArgument, () => p.SetPlayerInputDelay(0, 33), "player input delay 33");
                ThrowsTw(TwResult.InvalidArgument, () => p.SetPlayerInputDelay(9, 1), "no player 9");
                p.SetPlayerInputDelay(0, 2);
                Equal(2u, StatsOf(p).InputDelay, "player 0's delay, set before start");
                ThrowsTw(TwResult.InvalidArgument, () => p.SetPrediction(0, new byte[1]), "a 1-byte prediction for 2-byte inputs");
                ThrowsTw(TwResult.InvalidArgument, () => p.SetPrediction(0, ReadOnlySpan<byte>.Empty), "an empty prediction");
                p.SetPrediction(1, new byte[] { 0, 0 });
                p.ClearPrediction(1);
                TwLinkSimConfig bad = TwLinkSimConfig.Default();
                bad.LossKind = TwLossKind.Bernoulli;
                bad.LossProbability = 2.0;
                ThrowsTw(TwResult.InvalidArgument, () => p.SetLinkSim(TwDirection.Inbound, bad), "loss probability 2");
                ThrowsTw(TwResult.InvalidState, () => p.CopyReplay(), "no recording");
            }

            using (TwSession r = new TwSession(SessionConfig(TwSessionMode.Replay)))
            {
                e = ThrowsTw(TwResult.InvalidArgument, () => r.LoadReplay(new byte[] { 1, 2, 3, 4, 5, 6, 7, 8 }), "8 bytes that are no replay");
                Contains(e.NativeMessage, "tw_session_load_replay", "names the function");
                e = ThrowsTw(TwResult.Io, () => r.LoadReplayFile(TempPath("missing") + ".twrp"), "a file that does not exist");
                Contains(e.NativeMessage, "tw_session_load_replay_file", "names the function");
                ThrowsTw(TwResult.InvalidState, () => r.Start(), "start without a replay");
            }

            using (TwSession s = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
            {
                ThrowsTw(TwResult.InvalidState, () => s.SetLinkSim(TwDirection.Outbound, TwLinkSimConfig.Default()), "no socket to simulate");
                ThrowsTw(TwResult.InvalidState, () => s.AddLocalPlayer(0), "players are for P2P");
                ThrowsTw(TwResult.InvalidState, () => s.AddSpectator("127.0.0.1:9"), "spectators are for P2P");
                ThrowsTw(TwResult.InvalidState, () => s.StartRecording(new byte[4]), "recording is for P2P");
                ThrowsTw(TwResult.InvalidState, () => s.SaveReplay(TempPath("never") + ".twrp"), "no recording to save");
                s.Start();
                ThrowsTw(TwResult.InvalidState, () => s.Start(), "started twice");
            }
        }

        private static void SessionFrameErrors()
        {
            using (TwSession s = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
            {
                byte[] input = { 1, 0 };
                Equal(TwResult.InvalidState, s.PushInput(0, input), "push before Start");
                Contains(TwLibrary.LastErrorMessage(), "tw_session_push_input", "the last error names the function");
                Equal(TwResult.InvalidState, s.Advance(), "advance before Start");
                s.Start();
                int n;
                Equal(TwResult.InvalidArgument, s.PushInput(0, new byte[3]), "3 bytes for a 2-byte input");
                Contains(TwLibrary.LastErrorMessage(), "tw_session_push_input", "names the function");
                Equal(TwResult.InvalidArgument, s.PushInput(7, input), "no player 7");
                Equal(TwResult.InvalidState, s.ReadInputs(new byte[8], out n), "no request to read inputs from");
                Contains(TwLibrary.LastErrorMessage(), "tw_session_request_inputs", "names the function");
                Equal(0, n, "no length on failure");
                Equal(TwResult.InvalidArgument, s.ConfirmSave(999, 1), "no save of tick 999 pending");
                Equal(TwResult.InvalidArgument, s.ProvideState(0, input), "no DUMP_STATE of tick 0 waiting in SYNCTEST");
                TwPeerStats ps;
                Equal(TwResult.InvalidArgument, s.GetPeerStats(0, out ps), "peer 0");
                Equal(TwResult.UnknownPeer, s.GetPeerStats(5, out ps), "no peers in SYNCTEST");

                Equal(TwResult.Ok, s.PushInput(0, input), "push player 0");
                Equal(TwResult.Ok, s.PushInput(1, input), "push player 1");
                Equal(TwResult.Ok, s.Advance(), "advance tick 0");
                TwRequest r;
                int polled = 0;
                bool sawAdvance = false;
                while (s.TryPollRequest(out r))
                {
                    polled++;
                    if (r.Kind == TwRequestKind.Save)
                    {
                        Equal(TwResult.Ok, s.ConfirmSave(r.Tick, 1234), "confirm the save");
                        Equal(TwResult.InvalidState, s.ReadInputs(new byte[8], out n), "a SAVE has no inputs");
                    }
                    if (r.Kind != TwRequestKind.Advance)
                    {
                        continue;
                    }
                    sawAdvance = true;
                    Equal(0u, r.Tick, "tick");
                    Equal(2u, r.NumPlayers, "players");
                    Equal(2u, r.InputSize, "input size");
                    Equal(4ul, r.DataLen, "data length");
                    Span<byte> one = stackalloc byte[1];
                    Equal(TwResult.BufferTooSmall, s.ReadInputs(one, out n), "1-byte buffer");
                    Equal(4, n, "the size needed");
                    Equal(TwResult.BufferTooSmall, s.ReadInputs(Span<byte>.Empty, out n), "empty buffer (NULL, 0) asks for the size");
                    Equal(4, n, "the size needed again");
                    Span<byte> four = stackalloc byte[4];
                    Equal(TwResult.Ok, s.ReadInputs(four, out n), "exact buffer");
                    Equal(4, n, "length");
                    Check(four[0] == 1 && four[1] == 0 && four[2] == 1 && four[3] == 0, "both players' inputs, in player order");
                    TwInputStatus* st = stackalloc TwInputStatus[2];
                    Equal(TwResult.Ok, s.ReadInputStatus(new Span<TwInputStatus>(st, 2)), "typed statuses");
                    Equal(TwInputStatus.Confirmed, st[0], "player 0 confirmed");
                    Equal(TwInputStatus.Confirmed, st[1], "player 1 confirmed");
                    Equal(TwResult.InvalidState, s.ReadState(new byte[64], out n), "an ADVANCE has no state");
                    Contains(TwLibrary.LastErrorMessage(), "tw_session_request_state", "names the function");
                }
                Check(sawAdvance && polled >= 2, "tick 0 gave a SAVE and an ADVANCE (" + polled + " requests)");
                Equal(TwResult.Empty, s.PollRequest(out r), "drained");

                // The requests of an advance must all be polled before the next one.
                s.PushInput(0, input);
                s.PushInput(1, input);
                Equal(TwResult.Ok, s.Advance(), "advance tick 1");
                Check(s.TryPollRequest(out r), "a first request");
                Equal(TwResult.InvalidState, s.Advance(), "advance with requests left unpolled");
                Contains(TwLibrary.LastErrorMessage(), "tw_session_advance", "names the function");
            }
        }

        // --- the topologies -------------------------------------------------------------------------

        private static void SessionP2PAgree()
        {
            using (SessionPair pair = new SessionPair(30000, 10000, 0.02, null))
            {
                pair.B.SetInputDelay(2);
                pair.RunFor(4000, null);
                GameOk(pair.GameA, "peer A");
                GameOk(pair.GameB, "peer B");
                uint confirmed = pair.AssertInSync();
                TwSessionStats sa = StatsOf(pair.A);
                TwSessionStats sb = StatsOf(pair.B);
                Console.WriteLine("  confirmed " + confirmed + "; A: tick " + sa.CurrentTick + ", rollbacks " + sa.Rollbacks +
                                  ", resimulated " + sa.ResimulatedTicks + ", longest " + sa.MaxRollback + ", ahead " +
                                  sa.FramesAhead.ToString("F2") + ", checks " + sa.ChecksCompared + "; B: rollbacks " +
                                  sb.Rollbacks + ", checks " + sb.ChecksCompared + ", input delay " + sb.InputDelay);
                // About 4 s at 60 Hz, less the connection time and the latency.
                Check(confirmed > 120, "ticks confirmed: " + confirmed);
                Check(sa.Rollbacks + sb.Rollbacks > 5, "predictions were wrong and rolled back");
                Check(pair.GameA.Resimulated > 0 && pair.GameA.Predicted > 0, "RESIMULATING and PREDICTED advances seen");
                Check(pair.GameA.Authoritative > 0, "AUTHORITATIVE advances seen");
                Check(sa.ChecksCompared > 5 && sb.ChecksCompared > 5, "checksums were compared with the peer");
                Equal(0ul, sa.Desyncs + sb.Desyncs, "no desyncs");
                Equal(1u, sa.Running, "A running");
                Equal(1u, sb.ConnectedPeers, "B connected to one peer");
                Equal(2u, sb.InputDelay, "B's input delay");
                Equal(0u, sa.InputDelay, "A's input delay");
                Check(sa.BytesSent > 0 && sa.BytesReceived > 0, "bytes counted");
                Check(sa.TimeScale > 0.5 && sa.TimeScale < 1.5, "time scale near 1: " + sa.TimeScale);

                Equal(1, pair.GameA.Count(TwSessionEventKind.Synchronized), "A: one SYNCHRONIZED");
                // Connection progress: connecting, connected, then synchronized 1 of 1.
                Equal(2, pair.GameA.Count(TwSessionEventKind.SynchronizingWithPeer), "A: SYNCHRONIZING_WITH_PEER twice");
                Equal(1, pair.GameA.Count(TwSessionEventKind.SynchronizedWithPeer), "A: one SYNCHRONIZED_WITH_PEER");
                TwSessionEvent synced;
                Check(pair.GameA.Find(TwSessionEventKind.SynchronizedWithPeer, out synced), "A: SYNCHRONIZED_WITH_PEER");
                Equal(1u, synced.Data.Progress.Player, "synchronized with player 1's peer");
                Equal(1u, synced.Data.Progress.Synchronized, "1 of");
                Equal(1u, synced.Data.Progress.Total, "1 remote peer");
                Equal(2u, synced.Data.Progress.Step, "step 2: synchronized");
                Equal(1, pair.GameB.Count(TwSessionEventKind.Synchronized), "B: one SYNCHRONIZED");
                Equal(0, pair.GameA.Count(TwSessionEventKind.Desync), "A: no DESYNC");
                TwSessionEvent connected;
                Check(pair.GameA.Find(TwSessionEventKind.PeerConnected, out connected), "A: PEER_CONNECTED");
                Equal(1u, connected.Data.Peer.Player, "A's connection is to player 1");
                Check(pair.GameB.Find(TwSessionEventKind.PeerConnected, out connected), "B: PEER_CONNECTED");
                Equal(0u, connected.Data.Peer.Player, "B's connection is to player 0");
                Check(pair.GameA.Find(TwSessionEventKind.PeerConnected, out connected), "A: PEER_CONNECTED");
                uint peer;
                Equal(TwResult.Ok, pair.A.GetPlayerPeer(1, out peer), "player 1's peer");
                Equal(connected.Peer, peer, "the peer of player 1 is the connection of the event");
                Equal(TwResult.Ok, pair.A.GetPlayerPeer(0, out peer), "player 0's peer");
                Equal(0u, peer, "a local player has no connection");
                TwPeerStats ps;
                Equal(TwResult.Ok, pair.A.GetPeerStats(connected.Peer, out ps), "peer stats");
                Check(ps.SrttUs > 40000, "the simulated 2 x 30 ms shows in the RTT: " + ps.SrttUs);
                // The net overlay (GGPO's ggpo_get_network_stats): the same connection,
                // the round trip, and about 30 ms of B's inputs predicted at A (no delay).
                TwNetworkStats ns;
                Equal(TwResult.Ok, pair.A.GetNetworkStats(1, out ns), "network stats of player 1");
                Console.WriteLine("  A's overlay of player 1: rtt " + ns.RttUs.ToString("F0") + " us, kbps " +
                                  ns.KbpsSent.ToString("F1") + "/" + ns.KbpsReceived.ToString("F1") + ", advantage " +
                                  ns.LocalFrameAdvantage.ToString("F2") + "/" + ns.RemoteFrameAdvantage.ToString("F2") +
                                  ", send queue " + ns.SendQueue + ", recv queue " + ns.RecvQueue + ", predicted " +
                                  ns.PredictedTicks);
                Equal(1u, ns.Player, "the player asked about");
                Equal(connected.Peer, ns.Peer, "its connection");
                Check(ns.RttUs > 40000, "the RTT: " + ns.RttUs);
                Check(ns.KbpsSent > 0 && ns.KbpsReceived > 0, "inputs flow both ways");
                Check(ns.SendQueue >= 1 && ns.SendQueue <= 12, "about a round trip of A's inputs unacknowledged: " + ns.SendQueue);
                Check(Math.Abs(ns.FramesAhead) < 2, "in step: " + ns.FramesAhead);
                Equal(TwResult.InvalidArgument, pair.A.GetNetworkStats(0, out ns), "a local player has no overlay");
                Equal(TwResult.InvalidArgument, pair.A.GetNetworkStats(9, out ns), "no such player");
            }
        }

        private static void SessionSyncTest()
        {
            TwSessionConfig cfg = SessionConfig(TwSessionMode.SyncTest);
            cfg.CheckDistance = 3;
            for (int pass = 0; pass < 2; pass++)
            {
                bool nondeterministic = pass == 1;
                using (TwSession s = new TwSession(cfg))
                {
                    SessionGame g = new SessionGame(2, s.StateSlots);
                    g.Nondeterministic = nondeterministic;
                    s.Start();
                    for (uint t = 0; t < 300; t++)
                    {
                        g.SyncTestTick(s, t);
                    }
                    GameOk(g, "synctest");
                    TwSessionStats st = StatsOf(s);
                    Equal(300u, st.CurrentTick, "ticks run");
                    Equal(TwSessionMode.SyncTest, st.Mode, "mode");
                    // Tick c re-simulates the 3 ticks up to it once c + 1 >= 3: every tick from 2 on.
                    Equal(3L * (300 - 2), g.Resimulated, "every tick rolled back 3 ticks");
                    if (!nondeterministic)
                    {
                        Equal(0ul, st.SynctestMismatches, "a deterministic game passes");
                        Equal(0, g.Events.Count, "no events");
                        continue;
                    }
                    Check(st.SynctestMismatches > 10, "nondeterminism caught: " + st.SynctestMismatches);
                    TwSessionEvent ev;
                    Check(g.Find(TwSessionEventKind.SynctestMismatch, out ev), "a SYNCTEST_MISMATCH event");
                    TwSessionEventMismatch m = ev.Data.SynctestMismatch;
                    Check(m.ExpectedChecksum != m.ActualChecksum, "the checksums differ");
                    Check(m.Tick > 0 && m.Tick < 20, "caught early: tick " + m.Tick);
                    Equal(st.SynctestMismatches, (ulong)g.Count(TwSessionEventKind.SynctestMismatch), "one event per mismatch");
                    // Both states of the first mismatch, held until taken (GGPO's log_game_state).
                    Equal(1, g.Count(TwSessionEventKind.SynctestStatesReady), "one pair captured, held until taken");
                    byte[] saved = s.TakeSynctestState(TwSynctestState.Saved);
                    byte[] resimulated = s.TakeSynctestState(TwSynctestState.Resimulated);
                    Check(saved != null && resimulated != null, "both states handed over");
                    Equal(null, s.TakeSynctestState(TwSynctestState.Saved), "taken once");
                    SessionGame probe = new SessionGame(2, 1);
                    Buffer.BlockCopy(saved, 0, probe.State, 0, saved.Length);
                    Equal(m.ExpectedChecksum, probe.Checksum(), "the saved state is the one first simulated");
                    Buffer.BlockCopy(resimulated, 0, probe.State, 0, resimulated.Length);
                    Equal(m.ActualChecksum, probe.Checksum(), "the resimulated state is the one compared");
                }
            }
        }

        private static void SessionReplayRoundTrip()
        {
            byte[] initial = new SessionGame(2, 1).Serialize();
            byte[] bytes;
            string path = TempPath("replay") + ".twrp";
            SessionGame recorded;
            ulong finalSum;
            uint finalTick;
            using (SessionPair pair = new SessionPair(20000, 5000, 0.02, a => a.StartRecording(initial)))
            {
                pair.RunFor(3000, null);
                GameOk(pair.GameA, "peer A");
                bytes = pair.A.CopyReplay();
                Check(bytes.Length > 100, "a replay of some size: " + bytes.Length);
                int need;
                Span<byte> one = stackalloc byte[1];
                Equal(TwResult.BufferTooSmall, pair.A.CopyReplay(one, out need), "1-byte buffer");
                Equal(bytes.Length, need, "the size needed is the replay's");
                pair.A.SaveReplay(path);
                Equal(bytes.Length, (int)new FileInfo(path).Length, "the file holds the same replay");
                recorded = pair.GameA;
                finalSum = recorded.Checksum();
                finalTick = StatsOf(pair.A).CurrentTick;
            }

            for (int pass = 0; pass < 2; pass++)
            {
                bool fromFile = pass == 0;
                using (TwSession s = new TwSession(SessionConfig(TwSessionMode.Replay)))
                {
                    if (fromFile)
                    {
                        s.LoadReplayFile(path);
                    }
                    else
                    {
                        s.LoadReplay(bytes);
                    }
                    s.Start();
                    SessionGame g = new SessionGame(2, 1);
                    for (int i = 0; i < g.State.Length; i++)
                    {
                        g.State[i] = -7; // only the RESTORE brings the recorded start back
                    }
                    int compared = 0;
                    uint end;
                    Timer sw = Timer.StartNew();
                    while (true)
                    {
                        Check(sw.ElapsedMilliseconds < DeadlineMs, "the replay finishes");
                        TwResult r = s.Advance();
                        g.RunRequests(s);
                        if (r == TwResult.Finished)
                        {
                            end = StatsOf(s).CurrentTick;
                            break;
                        }
                        Equal(TwResult.Ok, r, "advance");
                        uint t = StatsOf(s).CurrentTick;
                        ulong sum;
                        if (recorded.TryGetSum(t, out sum))
                        {
                            Equal(sum, g.Checksum(), "state at the start of tick " + t + (fromFile ? " (file)" : " (bytes)"));
                            compared++;
                        }
                    }
                    GameOk(g, "replay");
                    Equal(0L, g.RestoredAt, "the initial state came back as a RESTORE of tick 0");
                    Check(end > 100, "a few seconds recorded: " + end + " ticks");
                    Check(compared + 1 >= end, "compared " + compared + " of " + end + " ticks");
                    ulong expected;
                    if (!recorded.TryGetSum(end, out expected))
                    {
                        Equal(finalTick, end, "a tick without a save is the recorder's current one");
                        expected = finalSum;
                    }
                    Equal(expected, g.Checksum(), "final checksum at tick " + end);
                    Equal(g.Advances, g.Authoritative, "every replayed tick is final");
                }
            }
            File.Delete(path);
        }

        private static void SessionSpectator()
        {
            TwSessionConfig specCfg = SessionConfig(TwSessionMode.Spectator);
            specCfg.SpectatorCatchupSpeed = 3;
            using (TwSession spec = new TwSession(specCfg))
            {
                string specAddress = spec.LocalAddress;
                using (SessionPair pair = new SessionPair(15000, 5000, 0.01, a => a.AddSpectator(specAddress)))
                {
                    pair.RunFor(1500, null);
                    spec.Spectate(pair.A.LocalAddress);
                    spec.Start();
                    SessionGame g = new SessionGame(2, 1);
                    Array.Clear(g.State, 0, g.State.Length);
                    uint[] ticks = new uint[SessionGame.History];
                    ulong[] sums = new ulong[SessionGame.History];
                    int played = 0;
                    pair.RunFor(3500, () =>
                    {
                        int due;
                        Equal(TwResult.Ok, spec.TicksDue(out due), "spectator TicksDue");
                        for (int i = 0; i < due; i++)
                        {
                            TwResult r = spec.Advance();
                            Check(r >= 0, "spectator advance: " + r);
                            g.LastAdvancedTick = -1;
                            g.RunRequests(spec);
                            if (g.LastAdvancedTick >= 0 && played < ticks.Length)
                            {
                                ticks[played] = (uint)g.LastAdvancedTick + 1;
                                sums[played] = g.LastAdvancedSum;
                                played++;
                            }
                        }
                        g.DrainEvents(spec);
                        return false;
                    });
                    GameOk(g, "spectator");
                    GameOk(pair.GameA, "peer A");
                    Check(g.RestoredAt > 30, "a mid-match snapshot, tick " + g.RestoredAt);
                    Equal(1, pair.GameA.DumpsProvided, "the host engine was asked for the snapshot once");
                    Check(g.Count(TwSessionEventKind.PeerConnected) >= 1, "the spectator saw PEER_CONNECTED");
                    TwSessionEvent ev;
                    Check(pair.GameA.Find(TwSessionEventKind.PeerConnected, out ev), "peer A saw connections");
                    uint hostConfirmed = StatsOf(pair.A).ConfirmedTick;
                    uint specTick = StatsOf(spec).CurrentTick;
                    Check(hostConfirmed >= specTick && hostConfirmed - specTick <= 15,
                          "caught up: host confirmed " + hostConfirmed + ", spectator at " + specTick);
                    int compared = 0;
                    for (int i = 0; i < played; i++)
                    {
                        ulong h;
                        if (pair.GameA.TryGetSum(ticks[i], out h))
                        {
                            Equal(h, sums[i], "spectator state at tick " + ticks[i]);
                            compared++;
                        }
                    }
                    Check(compared > 100, "compared " + compared + " ticks");
                    pair.AssertInSync();
                }
            }
        }

        private static void SessionDesyncAndDisconnect()
        {
            string path = TempPath("desync") + ".twds";
            SessionPair pair = new SessionPair(10000, 2000, 0.0, null);
            try
            {
                pair.GameB.DesyncFrom = 120;
                byte[] dump = null;
                pair.RunFor(8000, () =>
                {
                    if (dump == null && pair.GameA.Count(TwSessionEventKind.DesyncDumpReady) > 0)
                    {
                        int need;
                        Span<byte> one = stackalloc byte[1];
                        Equal(TwResult.BufferTooSmall, pair.A.TakeDesyncDump(one, out need), "a 1-byte buffer is too small for a dump");
                        dump = pair.A.TakeDesyncDump();
                        Check(dump != null, "a dump was ready");
                        Equal(need, dump.Length, "the size asked for");
                        Equal(TwResult.Empty, pair.A.TakeDesyncDump(new byte[need], out need), "released by the take");
                        Check(pair.A.TakeDesyncDump() == null, "nothing ready any more");
                    }
                    return dump != null && pair.GameB.Count(TwSessionEventKind.DesyncDumpReady) > 0;
                });
                TwSessionEvent desync;
                Check(pair.GameA.Find(TwSessionEventKind.Desync, out desync), "peer A saw the desync");
                TwSessionEventDesync d = desync.Data.Desync;
                Check(d.Tick >= 120 && d.Tick < 200, "found soon after it began: tick " + d.Tick);
                Check(d.LocalChecksum != d.RemoteChecksum, "the checksums differ");
                ulong sa, sb;
                Check(pair.GameA.TryGetSum(d.Tick, out sa), "peer A saved the tick");
                Check(pair.GameB.TryGetSum(d.Tick, out sb), "peer B saved the tick");
                Equal(sa, d.LocalChecksum, "the local checksum is A's");
                Equal(sb, d.RemoteChecksum, "the remote checksum is B's");
                Check(dump != null && dump.Length > 4, "a dump");
                Equal("TWDS", System.Text.Encoding.ASCII.GetString(dump, 0, 4), "the dump's magic");
                Check(pair.GameA.DumpsProvided >= 1, "peer A's engine provided its state for the dump");
                Check(StatsOf(pair.A).Desyncs >= 1, "counted in the stats");
                Check(pair.GameB.Count(TwSessionEventKind.Desync) > 0, "peer B saw it too");
                Check(pair.B.WriteDesyncDump(path), "peer B's dump written to a file");
                Equal("TWDS", System.Text.Encoding.ASCII.GetString(File.ReadAllBytes(path), 0, 4), "the file's magic");
                Check(!pair.B.WriteDesyncDump(path), "released by the write");
                File.Delete(path);

                // Peer B leaves: A is told, agrees on a disconnect tick for player 1, and goes on.
                pair.B.Dispose();
                uint before = StatsOf(pair.A).CurrentTick;
                Timer sw = Timer.StartNew();
                while (sw.ElapsedMilliseconds < 1500)
                {
                    pair.GameA.Frame(pair.A, 0);
                    System.Threading.Thread.Sleep(2);
                }
                GameOk(pair.GameA, "peer A");
                Check(pair.GameA.Count(TwSessionEventKind.PeerDisconnected) == 1, "PEER_DISCONNECTED");
                TwSessionEvent pd;
                Check(pair.GameA.Find(TwSessionEventKind.PlayerDisconnected, out pd), "PLAYER_DISCONNECTED");
                Equal(1u, pd.Data.Player.Player, "player 1 left");
                Check(pd.Data.Player.Tick > 0, "from a tick on: " + pd.Data.Player.Tick);
                Check(StatsOf(pair.A).CurrentTick > before + 30, "the survivor keeps simulating");
                Equal(0u, StatsOf(pair.A).ConnectedPeers, "no connections left");
            }
            finally
            {
                pair.Dispose();
            }
        }

        private static void SessionDisconnectPlayer()
        {
            SessionPair pair = new SessionPair(10000, 2000, 0.0, null);
            try
            {
                Equal(TwResult.InvalidState, pair.A.DisconnectPlayer(1), "not running yet");
                Contains(TwLibrary.LastErrorMessage(), "not running", "the message says why");
                pair.RunFor(4000, () => pair.GameA.Count(TwSessionEventKind.Synchronized) > 0 &&
                                        pair.GameB.Count(TwSessionEventKind.Synchronized) > 0 &&
                                        StatsOf(pair.A).CurrentTick > 30);
                Equal(0L, pair.GameA.DisconnectedInputs, "nobody disconnected yet");
                Equal(TwResult.InvalidArgument, pair.A.DisconnectPlayer(0), "a local player");
                Contains(TwLibrary.LastErrorMessage(), "player 0 plays on this machine", "the message says why");
                Equal(TwResult.InvalidArgument, pair.A.DisconnectPlayer(2), "no such player");
                Contains(TwLibrary.LastErrorMessage(), "tw_session_disconnect_player", "names the function");
                Equal(TwResult.Ok, pair.A.DisconnectPlayer(1), "drop player 1");
                Equal(TwResult.InvalidState, pair.A.DisconnectPlayer(1), "already gone");
                Contains(TwLibrary.LastErrorMessage(), "already disconnected", "the message says why");
                uint before = StatsOf(pair.A).CurrentTick;
                pair.RunFor(1000, null);
                GameOk(pair.GameA, "peer A");
                TwSessionEvent pd;
                Check(pair.GameA.Find(TwSessionEventKind.PeerDisconnected, out pd), "A: PEER_DISCONNECTED");
                Equal((uint)TwDisconnectReason.KickedByEngine, pd.Data.Peer.Reason, "A: dropped by its engine");
                Equal(1, pair.GameA.Count(TwSessionEventKind.PeerDisconnected), "once");
                Check(pair.GameB.Find(TwSessionEventKind.PeerDisconnected, out pd), "B: PEER_DISCONNECTED");
                Equal((uint)TwDisconnectReason.KickedByEngine, pd.Data.Peer.Reason, "B is told why");
                Check(StatsOf(pair.A).CurrentTick > before + 30, "the match goes on");
                Check(pair.GameA.DisconnectedInputs > 30, "player 1's inputs are marked disconnected: " + pair.GameA.DisconnectedInputs);
            }
            finally
            {
                pair.Dispose();
            }
        }

        private static void SessionSetTimeouts()
        {
            using (TwSession sync = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
            {
                ThrowsTw(TwResult.InvalidState, () => sync.SetTimeouts(1000, 500), "not P2P");
            }
            // Before Start it replaces the configured values: never dropped, noticed after 300 ms.
            SessionPair pair = new SessionPair(10000, 2000, 0.0, a => a.SetTimeouts(0, 300));
            try
            {
                TickwireException e = ThrowsTw(TwResult.InvalidArgument, () => pair.A.SetTimeouts(800, 800), "notice not below the drop");
                Contains(e.NativeMessage, "disconnect_notify_ms (800) must be below disconnect_timeout_ms (800)", "names the arguments");
                pair.RunFor(4000, () => pair.GameA.Count(TwSessionEventKind.Synchronized) > 0 &&
                                        pair.GameB.Count(TwSessionEventKind.Synchronized) > 0 &&
                                        StatsOf(pair.A).CurrentTick > 30);
                // B goes silent: everything it sends is lost.
                pair.B.SetLinkSim(TwDirection.Outbound, Link(0, 0, 1.0));
                pair.RunFor(2000, null);
                TwSessionEvent ev;
                Check(pair.GameA.Find(TwSessionEventKind.PeerInterrupted, out ev), "A: PEER_INTERRUPTED after 300 ms");
                Equal(ulong.MaxValue, ev.Data.Peer.DisconnectInUs, "never dropped");
                Equal(0, pair.GameA.Count(TwSessionEventKind.PeerDisconnected), "timeout 0: not dropped after 2 s of silence");
                // Changed while running: a silent peer is dropped after 800 ms.
                pair.A.SetTimeouts(800, 300);
                Timer sw = Timer.StartNew();
                pair.RunFor(3000, () => pair.GameA.Count(TwSessionEventKind.PeerDisconnected) > 0);
                Equal(1, pair.GameA.Count(TwSessionEventKind.PeerDisconnected), "dropped once the timeout is 800 ms");
                Check(sw.ElapsedMilliseconds < 2000, "soon after the change: " + sw.ElapsedMilliseconds + " ms");
                Check(pair.GameA.Find(TwSessionEventKind.PeerDisconnected, out ev), "PEER_DISCONNECTED");
                Equal((uint)TwDisconnectReason.Timeout, ev.Data.Peer.Reason, "for silence");
            }
            finally
            {
                pair.Dispose();
            }
        }

        private static void SessionSetLoading()
        {
            using (TwSession sync = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
            {
                TickwireException e = ThrowsTw(TwResult.InvalidState, () => sync.SetLoading(true), "not P2P");
                Contains(e.NativeMessage, "tw_session_set_loading", "names the function");
                sync.Start();
                ThrowsTw(TwResult.InvalidState, () => sync.SetLoading(false), "not P2P, running");
            }
            using (TwSession replay = new TwSession(SessionConfig(TwSessionMode.Replay)))
            {
                ThrowsTw(TwResult.InvalidState, () => replay.SetLoading(true), "REPLAY is not P2P");
            }
            using (TwSession spectator = new TwSession(SessionConfig(TwSessionMode.Spectator)))
            {
                ThrowsTw(TwResult.InvalidState, () => spectator.SetLoading(true), "SPECTATOR is not P2P");
            }
            using (TwSession server = new TwSession(TwSessionConfig.RelayServer(2, SessionGame.InputSize, "127.0.0.1:0")))
            {
                ThrowsTw(TwResult.InvalidState, () => server.SetLoading(true), "RELAY_SERVER is not P2P");
            }
            // Before Start (it applies from the start), and back.
            SessionPair pair = new SessionPair(10000, 2000, 0.0, a => { a.SetLoading(true); a.SetLoading(false); a.SetLoading(true); });
            try
            {
                // While running: announced and ended on both sides; the match goes on.
                pair.RunFor(4000, () => pair.GameA.Count(TwSessionEventKind.Synchronized) > 0 &&
                                        pair.GameB.Count(TwSessionEventKind.Synchronized) > 0 &&
                                        StatsOf(pair.A).CurrentTick > 30);
                pair.A.SetLoading(false);
                pair.B.SetLoading(true);
                pair.B.SetLoading(false);
                uint before = StatsOf(pair.A).CurrentTick;
                pair.RunFor(4000, () => StatsOf(pair.A).CurrentTick > before + 30);
                Check(StatsOf(pair.A).CurrentTick > before + 30, "the match goes on after SetLoading(false)");
                Equal(0, pair.GameA.Count(TwSessionEventKind.PeerDisconnected), "A dropped no peer");
                Equal(0, pair.GameB.Count(TwSessionEventKind.PeerDisconnected), "B dropped no peer");
                Equal(0, pair.GameA.Count(TwSessionEventKind.NoProgress), "A: no NO_PROGRESS");
                Equal(0, pair.GameB.Count(TwSessionEventKind.NoProgress), "B: no NO_PROGRESS");
            }
            finally
            {
                pair.Dispose();
            }
            TwSession gone = new TwSession(SessionConfig(TwSessionMode.P2P));
            gone.Dispose();
            Throws<ObjectDisposedException>(() => gone.SetLoading(true), "after Dispose");
        }

        // --- failure paths and lifetime ---------------------------------------------------------

        private static void SessionPanic()
        {
            using (TwSession s = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
            {
                Equal(TwResult.Panic, TestHooks.tw_debug_session_panic(s.Handle), "a panic inside a session call (test only)");
                Contains(TwLibrary.LastErrorMessage(), "panic: ", "the last error says it panicked");
                TwSessionEvent ev;
                Equal(TwResult.Panic, s.PollEvent(out ev), "poll on a poisoned session");
                Check(!s.TryPollEvent(out ev), "TryPollEvent is false on an error");
                Equal(TwResult.Panic, s.Advance(), "advance on a poisoned session");
                TwSessionStats st;
                Equal(TwResult.Panic, s.GetStats(out st), "stats on a poisoned session");
                ThrowsTw(TwResult.Panic, () => s.Start(), "Start on a poisoned session");
            }
        }

        private static void SessionBusy()
        {
            using (TwSession s = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
            {
                TwResult held = TwResult.Panic;
                var holder = new System.Threading.Thread(() =>
                {
                    // Retried while this thread's own call holds the session.
                    do
                    {
                        held = TestHooks.tw_debug_hold_session(s.Handle, 300);
                    } while (held == TwResult.Busy);
                });
                holder.Start();
                TwResult r = TwResult.Ok;
                TwSessionEvent ev;
                Timer clock = Timer.StartNew(); // not Stopwatch: System.dll is not AOT-compiled
                while (clock.ElapsedMilliseconds < 5000)
                {
                    r = s.PollEvent(out ev);
                    if (r == TwResult.Busy)
                    {
                        break;
                    }
                    System.Threading.Thread.Sleep(1);
                }
                string message = TwLibrary.LastErrorMessage();
                holder.Join();
                Equal(TwResult.Busy, r, "PollEvent while another thread is inside a call on the session");
                Contains(message, "session is in use by another call", "the last error says why");
                Equal(TwResult.Ok, held, "the other thread's call");
                Check(s.PollEvent(out ev) != TwResult.Busy, "free again once that call returned");
            }
        }

        private static void SessionUseAfterDispose()
        {
            TwSession s = new TwSession(SessionConfig(TwSessionMode.P2P));
            string address = s.LocalAddress; // cached from here on
            Check(address.StartsWith("127.0.0.1:", StringComparison.Ordinal), "bound: " + address);
            s.Dispose();
            s.Dispose(); // twice is fine
            Check(s.IsDisposed, "IsDisposed answers after Dispose");
            // The properties known from creation answered after Dispose.
            Throws<ObjectDisposedException>(() => { TwSessionMode m = s.Mode; }, "Mode");
            Throws<ObjectDisposedException>(() => { int x = s.NumPlayers; }, "NumPlayers");
            Throws<ObjectDisposedException>(() => { int x = s.InputSize; }, "InputSize");
            Throws<ObjectDisposedException>(() => { int x = s.StateSlots; }, "StateSlots");
            Throws<ObjectDisposedException>(() => { string a = s.LocalAddress; }, "LocalAddress, cached before Dispose");
            byte[] b = new byte[8];
            int n;
            int due;
            uint peer;
            TwRequest r;
            TwSessionEvent ev;
            TwSessionStats st;
            TwPeerStats ps;
            Throws<ObjectDisposedException>(() => s.AddLocalPlayer(0), "AddLocalPlayer");
            Throws<ObjectDisposedException>(() => s.AddRemotePlayer(1, "127.0.0.1:9"), "AddRemotePlayer");
            Throws<ObjectDisposedException>(() => s.AddSpectator("127.0.0.1:9"), "AddSpectator");
            Throws<ObjectDisposedException>(() => s.Spectate("127.0.0.1:9"), "Spectate");
            Throws<ObjectDisposedException>(() => s.LoadReplay(b), "LoadReplay");
            Throws<ObjectDisposedException>(() => s.LoadReplayFile("x"), "LoadReplayFile");
            Throws<ObjectDisposedException>(() => s.SetLinkSim(TwDirection.Inbound, TwLinkSimConfig.Default()), "SetLinkSim");
            Throws<ObjectDisposedException>(() => s.ClearLinkSim(TwDirection.Inbound), "ClearLinkSim");
            Throws<ObjectDisposedException>(() => s.Start(), "Start");
            Throws<ObjectDisposedException>(() => s.StartRecording(b), "StartRecording");
            Throws<ObjectDisposedException>(() => s.SetInputDelay(1), "SetInputDelay");
            Throws<ObjectDisposedException>(() => s.SetPlayerInputDelay(0, 1), "SetPlayerInputDelay");
            Throws<ObjectDisposedException>(() => s.SetPrediction(0, b), "SetPrediction");
            Throws<ObjectDisposedException>(() => s.ClearPrediction(0), "ClearPrediction");
            Throws<ObjectDisposedException>(() => { string a = s.LocalAddress; }, "LocalAddress");
            Throws<ObjectDisposedException>(() => s.TicksDue(out due), "TicksDue");
            Throws<ObjectDisposedException>(() => s.PushInput(0, b), "PushInput");
            Throws<ObjectDisposedException>(() => s.Advance(), "Advance");
            Throws<ObjectDisposedException>(() => s.PollRequest(out r), "PollRequest");
            Throws<ObjectDisposedException>(() => s.TryPollRequest(out r), "TryPollRequest");
            Throws<ObjectDisposedException>(() => s.ReadInputs(b, out n), "ReadInputs");
            Throws<ObjectDisposedException>(() => s.ReadInputStatus(b, out n), "ReadInputStatus");
            Throws<ObjectDisposedException>(() => s.ReadState(b, out n), "ReadState");
            Throws<ObjectDisposedException>(() => s.ConfirmSave(0, 0), "ConfirmSave");
            Throws<ObjectDisposedException>(() => s.ProvideState(0, b), "ProvideState");
            Throws<ObjectDisposedException>(() => s.PollEvent(out ev), "PollEvent");
            Throws<ObjectDisposedException>(() => s.TryPollEvent(out ev), "TryPollEvent");
            Throws<ObjectDisposedException>(() => s.GetStats(out st), "GetStats");
            Throws<ObjectDisposedException>(() => s.GetPeerStats(1, out ps), "GetPeerStats");
            Throws<ObjectDisposedException>(() => s.GetPlayerPeer(1, out peer), "GetPlayerPeer");
            TwNetworkStats ns;
            Throws<ObjectDisposedException>(() => s.GetNetworkStats(1, out ns), "GetNetworkStats");
            Throws<ObjectDisposedException>(() => s.TakeDesyncDump(b, out n), "TakeDesyncDump(span)");
            Throws<ObjectDisposedException>(() => s.TakeDesyncDump(), "TakeDesyncDump()");
            Throws<ObjectDisposedException>(() => s.WriteDesyncDump("x"), "WriteDesyncDump");
            Throws<ObjectDisposedException>(() => s.CopyReplay(b, out n), "CopyReplay(span)");
            Throws<ObjectDisposedException>(() => s.CopyReplay(), "CopyReplay()");
            Throws<ObjectDisposedException>(() => s.SaveReplay("x"), "SaveReplay");
            TwRelayPlayerStats rs;
            Throws<ObjectDisposedException>(() => s.SetServer("127.0.0.1:9"), "SetServer");
            Throws<ObjectDisposedException>(() => s.RequestSnapshot(), "RequestSnapshot");
            Throws<ObjectDisposedException>(() => s.GetPlayerStats(0, out rs), "GetPlayerStats");
            Throws<ObjectDisposedException>(() => s.TryGetPlayerStats(0, out rs), "TryGetPlayerStats");
            // The raw layer refuses a closed handle too (the SafeHandle marshaller).
            Throws<ObjectDisposedException>(() => TwNative.tw_session_advance(s.Handle), "raw tw_session_advance on a closed handle");
        }

        // Created in their own frame, so that nothing on the caller's stack keeps them.
        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        private static void ForgetSessionsAndHosts(int sessions, int hosts)
        {
            for (int i = 0; i < sessions; i++)
            {
                new TwSession(SessionConfig(TwSessionMode.SyncTest));
            }
            for (int i = 0; i < hosts; i++)
            {
                new TwHost("127.0.0.1:0");
            }
        }

        private static void LiveListsForgetCollectedHandles()
        {
            TwSession.DisposeAll();
            TwHost.DisposeAll();
            Equal(0, TwSession.LiveEntries, "no session entries to begin with");
            Equal(0, TwHost.LiveEntries, "no host entries to begin with");
            // A session or host the game forgot (never disposed) is finalized,
            // but its weak entry stayed in the live list for good: the list only grew.
            ForgetSessionsAndHosts(200, 20);
            for (int i = 0; i < 3; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            // (Mono's GC scans stacks conservatively: a few may survive a while.)
            Check(TwSession.LiveCount <= 5, "the forgotten sessions were finalized: " + TwSession.LiveCount + " left");
            using (TwSession s = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
            using (TwHost h = new TwHost("127.0.0.1:0"))
            {
                Check(TwSession.LiveEntries <= 6, "session entries pruned: " + TwSession.LiveEntries + " of 201");
                Check(TwHost.LiveEntries <= 6, "host entries pruned: " + TwHost.LiveEntries + " of 21");
                Check(TwSession.LiveCount >= 1 && TwHost.LiveCount >= 1, "the live ones are counted");
            }
            TwSession.DisposeAll();
            TwHost.DisposeAll();
        }

        private static void SessionDisposeAll()
        {
            TwSession.DisposeAll();
            Equal(0, TwSession.LiveCount, "no live sessions to begin with");
            TwSession a = new TwSession(SessionConfig(TwSessionMode.P2P));
            TwSession b = new TwSession(SessionConfig(TwSessionMode.SyncTest));
            TwSession c = new TwSession(SessionConfig(TwSessionMode.Replay));
            c.Dispose();
            Equal(2, TwSession.LiveCount, "two live sessions");
            using (TwHost h = new TwHost("127.0.0.1:0"))
            {
                TwSession.DisposeAll();
                Check(!h.IsDisposed, "TwSession.DisposeAll leaves hosts alone");
            }
            Check(a.IsDisposed && b.IsDisposed, "both disposed");
            Equal(0, TwSession.LiveCount, "none live");
            a.Dispose(); // still fine
        }
    }
}
