// The session allocation tests: GC.GetAllocatedBytesForCurrentThread() over the whole
// engine loop (ticks due, push, advance, every request with its data copies, confirm
// save, events, stats; a relay server's per-player figures and identities) must not
// move. Part of the test program (Program is partial).

using System;
using System.Runtime.CompilerServices;
using Tickwire;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        /// <summary>A SYNCTEST session driven for a number of frames; everything preallocated.</summary>
        private sealed class SyncTestLoop
        {
            public TwSession Session;
            public SessionGame Game;
            public uint Tick;
            public long DueTotal;
            public TwResult Unexpected = TwResult.Ok;

            [MethodImpl(MethodImplOptions.NoInlining)]
            public void Frames(int count)
            {
                for (int i = 0; i < count; i++)
                {
                    int due;
                    TwResult r = Session.TicksDue(out due);
                    if (r != TwResult.Ok)
                    {
                        Unexpected = r;
                    }
                    DueTotal += due;
                    Game.SyncTestTick(Session, Tick++);
                    if ((i & 63) == 0)
                    {
                        TwSessionStats st;
                        r = Session.GetStats(out st);
                        if (r != TwResult.Ok || st.CurrentTick != Tick)
                        {
                            Unexpected = r == TwResult.Ok ? TwResult.InvalidState : r;
                        }
                    }
                }
            }
        }

        private static void AllocationProbeWorks()
        {
            long probe0 = GC.GetAllocatedBytesForCurrentThread();
            byte[] garbage = new byte[1000];
            long probe1 = GC.GetAllocatedBytesForCurrentThread();
            Check(probe1 - probe0 >= 1000 && garbage.Length == 1000, "GetAllocatedBytesForCurrentThread sees a 1000-byte array (" + (probe1 - probe0) + ")");
        }

        private static void SessionZeroAllocationSyncTest()
        {
            AllocationProbeWorks();
            using (TwSession s = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
            {
                SyncTestLoop loop = new SyncTestLoop();
                loop.Session = s;
                loop.Game = new SessionGame(2, s.StateSlots);
                loop.Game.RecordEvents = false;
                s.Start();
                loop.Frames(5000); // warm-up: JIT, lazily bound entry points
                long advances0 = loop.Game.Advances;
                long saves0 = loop.Game.Saves;
                const int Frames = 100000;
                Timer sw = Timer.StartNew();
                long before = GC.GetAllocatedBytesForCurrentThread();
                loop.Frames(Frames);
                long after = GC.GetAllocatedBytesForCurrentThread();
                long elapsed = sw.ElapsedMilliseconds;
                long delta = after - before;
                long advances = loop.Game.Advances - advances0;
                Console.WriteLine("  allocation: " + delta + " bytes over " + Frames + " synctest frames (" + elapsed + " ms; " +
                                  advances + " ADVANCE and " + (loop.Game.Saves - saves0) + " SAVE requests run)");
                GameOk(loop.Game, "synctest");
                Equal(TwResult.Ok, loop.Unexpected, "every TicksDue and GetStats OK, the tick as expected");
                Equal(0L, delta, "managed bytes allocated during the measured frames");
                // Default check distance 2: each frame simulates its tick and re-simulates 2.
                Equal(3L * Frames, advances, "ADVANCE requests run in the measured frames");
                Equal(0, loop.Game.Count(TwSessionEventKind.SynctestMismatch), "no mismatches");
            }
        }

        private static void SessionZeroAllocationP2P()
        {
            AllocationProbeWorks();
            using (SessionPair pair = new SessionPair(20000, 5000, 0.02, null))
            {
                pair.GameA.RecordEvents = false;
                pair.GameB.RecordEvents = false;
                // Warm-up: connected, synchronized and simulating (JIT, entry points, rollbacks).
                pair.RunFor(DeadlineMs, () => StatsOf(pair.A).CurrentTick > 60 && StatsOf(pair.B).CurrentTick > 60);
                Check(StatsOf(pair.A).CurrentTick > 60, "the pair runs before the measurement");
                MeasuredPairFrames(pair, 200);
                uint tick0 = StatsOf(pair.A).CurrentTick;
                long rollbacks0 = pair.GameA.Resimulated + pair.GameB.Resimulated;
                const int Frames = 1500;
                Timer sw = Timer.StartNew();
                long before = GC.GetAllocatedBytesForCurrentThread();
                MeasuredPairFrames(pair, Frames);
                long after = GC.GetAllocatedBytesForCurrentThread();
                long elapsed = sw.ElapsedMilliseconds;
                long delta = after - before;
                uint ticks = StatsOf(pair.A).CurrentTick - tick0;
                long resimulated = pair.GameA.Resimulated + pair.GameB.Resimulated - rollbacks0;
                Console.WriteLine("  allocation: " + delta + " bytes over " + Frames + " frames of a P2P pair (" + elapsed +
                                  " ms; " + ticks + " ticks on peer A, " + resimulated + " re-simulated ticks on both)");
                GameOk(pair.GameA, "peer A");
                GameOk(pair.GameB, "peer B");
                Equal(0L, delta, "managed bytes allocated during the measured frames");
                Check(ticks > 60, "the pair simulated during the measurement: " + ticks + " ticks");
                Check(resimulated > 0, "rollbacks happened during the measurement");
                pair.AssertInSync();
            }
        }

        private static void SessionZeroAllocationRelay()
        {
            AllocationProbeWorks();
            using (RelayMatch m = new RelayMatch(Link(15000, 3000, 0.01), null))
            {
                for (int i = 0; i < 3; i++)
                {
                    m.AddClient(null);
                }
                m.ServerGame.RecordEvents = false;
                // Warm-up: joined, caught up and predicting (JIT, entry points, re-predictions).
                m.RunFor(10000, m.AllSynchronized);
                Check(m.AllSynchronized(), "every client caught up before the measurement");
                foreach (SessionGame g in m.ClientGames)
                {
                    g.RecordEvents = false;
                }
                RelayNetGraph graph = new RelayNetGraph(m);
                MeasuredRelayFrames(m, graph, 300);
                uint tick0 = StatsOf(m.Server).CurrentTick;
                long resimulated0 = 0;
                foreach (SessionGame g in m.ClientGames)
                {
                    resimulated0 += g.Resimulated;
                }
                long[] restores0 = { m.ClientGames[0].RestoredAt, m.ClientGames[1].RestoredAt, m.ClientGames[2].RestoredAt };
                const int Frames = 2400;
                // A third of the way in, client 1 asks for a new snapshot: the resync (its
                // RESYNCING and JOINED events, the RESTORE, the catch-up) is measured too.
                graph.SnapshotAt = Frames / 3;
                Timer sw = Timer.StartNew();
                long before = GC.GetAllocatedBytesForCurrentThread();
                MeasuredRelayFrames(m, graph, Frames);
                long after = GC.GetAllocatedBytesForCurrentThread();
                long elapsed = sw.ElapsedMilliseconds;
                long delta = after - before;
                uint ticks = StatsOf(m.Server).CurrentTick - tick0;
                long resimulated = -resimulated0;
                foreach (SessionGame g in m.ClientGames)
                {
                    resimulated += g.Resimulated;
                }
                Console.WriteLine("  allocation: " + delta + " bytes over " + Frames + " frames of a relay server and 3 clients (" +
                                  elapsed + " ms; " + ticks + " server ticks, " + resimulated + " re-simulated ticks on the clients, " +
                                  graph.Reads + " stats reads, a resync of client 1 from tick " + m.ClientGames[1].RestoredAt + ")");
                GameOk(m.ServerGame, "server");
                for (int i = 0; i < 3; i++)
                {
                    GameOk(m.ClientGames[i], "client " + i);
                    m.AssertInSync(i);
                }
                Equal(TwResult.Ok, graph.Failure, "every GetStats, GetPlayerStats and GetPlayerIdentity OK");
                Check(graph.IdentityReads > Frames, "GetPlayerIdentity found players during the measurement: " + graph.IdentityReads);
                Equal(0L, delta, "managed bytes allocated during the measured frames");
                Check(ticks > 60, "the match ran during the measurement: " + ticks + " ticks");
                Check(resimulated > 0, "re-predictions happened during the measurement");
                Equal(TwResult.Ok, graph.SnapshotRequest, "client 1's RequestSnapshot");
                Equal(1, m.ClientGames[1].Count(TwSessionEventKind.Resyncing), "client 1: RESYNCING");
                Equal(2, m.ClientGames[1].Count(TwSessionEventKind.Joined), "client 1: joined again");
                Check(m.ClientGames[1].RestoredAt > restores0[1], "client 1 restored a newer snapshot: tick " + m.ClientGames[1].RestoredAt);
                Check(m.AssertInSync(1) > 60, "client 1 in sync after its resync");
                Equal(restores0[0], m.ClientGames[0].RestoredAt, "no new snapshot for client 0");
                Equal(restores0[2], m.ClientGames[2].RestoredAt, "no new snapshot for client 2");
            }
        }

        /// <summary>What a game's net graph reads every frame: each client's stats, the server's per-player figures.</summary>
        private sealed class RelayNetGraph
        {
            private readonly RelayMatch _m;
            public long Reads;
            /// <summary>GetPlayerIdentity calls that found a player in the slot.</summary>
            public long IdentityReads;
            public double RttSum;
            public TwResult Failure = TwResult.Ok;
            /// <summary>The frame of MeasuredRelayFrames at which client 1 asks for a new snapshot (-1: none).</summary>
            public int SnapshotAt = -1;
            public TwResult SnapshotRequest = TwResult.Empty;

            public RelayNetGraph(RelayMatch m)
            {
                _m = m;
            }

            public void Read()
            {
                TwSessionStats st;
                for (int i = 0; i < _m.Clients.Count; i++)
                {
                    TwResult r = _m.Clients[i].GetStats(out st);
                    if (r != TwResult.Ok)
                    {
                        Failure = r;
                    }
                    RttSum += st.RttUs + st.LeadTicks + st.PredictionDistance;
                    Reads++;
                }
                TwRelayPlayerStats ps;
                for (uint p = 0; p < RelaySlots; p++)
                {
                    TwResult r = _m.Server.GetPlayerStats(p, out ps);
                    if (r != TwResult.Ok && r != TwResult.Empty)
                    {
                        Failure = r;
                    }
                    RttSum += ps.RttUs;
                    Reads++;
                    // A lobby panel that shows who is in each slot reads identities every
                    // frame too: an open match's players proved nothing (Open, client id 0).
                    TwPlayerIdentity id;
                    r = _m.Server.GetPlayerIdentity(p, out id);
                    if ((r != TwResult.Ok && r != TwResult.Empty) || id.Credential != TwCredential.Open || id.ClientId != 0)
                    {
                        Failure = r == TwResult.Ok || r == TwResult.Empty ? TwResult.InvalidState : r;
                    }
                    IdentityReads += r == TwResult.Ok ? 1 : 0;
                }
            }
        }

        /// <summary>Frames of every relay node with a net-graph read, 1 ms apart (the sleep allocates nothing).</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void MeasuredRelayFrames(RelayMatch m, RelayNetGraph graph, int count)
        {
            for (int i = 0; i < count; i++)
            {
                m.Frame();
                graph.Read();
                if (i == graph.SnapshotAt)
                {
                    graph.SnapshotRequest = m.Clients[1].RequestSnapshot();
                }
                System.Threading.Thread.Sleep(1);
            }
        }

        /// <summary>Frames of both peers, 1 ms apart (the sleep allocates nothing).</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void MeasuredPairFrames(SessionPair pair, int count)
        {
            for (int i = 0; i < count; i++)
            {
                pair.Frame();
                // A per-frame call too (no stall announced): allocates nothing.
                pair.A.SetLoading(false);
                System.Threading.Thread.Sleep(1);
            }
        }
    }
}
