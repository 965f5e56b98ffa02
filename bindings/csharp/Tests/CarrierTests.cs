// The external carrier tests: sessions bound to "remote:<id>" whose datagrams an
// in-memory carrier written here moves with TwDatagramBatch (pull from one, push into
// the other), losing some (seeded) and holding some back a frame or two (jitter, so they
// arrive out of order). A P2P pair agrees on every confirmed tick and its frames,
// the carrier's pulls and pushes included, allocate nothing; a relay server and two
// predicting clients agree on every authoritative tick. Part of the test program
// (Program is partial).

using System;
using System.Runtime.CompilerServices;
using Tickwire;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        private static void RunCarrierTests()
        {
            Run("carrier: TwDatagramBatch adds, copies, refuses what does not fit, and a UDP session refuses pushes", CarrierBatchBasics);
            Run("carrier: a P2P pair on remote:1 and remote:2 over an in-memory carrier (loss, jitter) agrees on every confirmed tick; 0 bytes a frame", CarrierP2PAgrees);
            Run("carrier: a relay server and 2 predicting clients over the in-memory carrier agree on every authoritative tick", CarrierRelayAgrees);
        }

        /// <summary>
        /// An in-memory carrier between sessions bound to "remote:&lt;id&gt;": each Step pulls
        /// every session's datagrams, drops a fraction (seeded), delays some by one or two
        /// steps, and pushes what is due into its destination. Everything preallocated: a
        /// step allocates nothing.
        /// </summary>
        private sealed class MemoryCarrier : IDisposable
        {
            private const int Slots = 4096;
            private readonly TwSession[] _sessions = new TwSession[8];
            private readonly ulong[] _ids = new ulong[8];
            private int _endpoints;
            private readonly TwDatagramBatch _out = new TwDatagramBatch(32);
            private readonly TwDatagramBatch _in = new TwDatagramBatch(32);
            // In flight: a pool of slots, and the indices of the busy ones in send order.
            private readonly byte[][] _bytes = new byte[Slots][];
            private readonly int[] _len = new int[Slots];
            private readonly ulong[] _from = new ulong[Slots];
            private readonly ulong[] _to = new ulong[Slots];
            private readonly long[] _due = new long[Slots];
            private readonly int[] _free = new int[Slots];
            private int _freeCount;
            private readonly int[] _busy = new int[Slots];
            private int _busyCount;
            private ulong _rng;
            private readonly double _loss;
            private readonly double _hold;
            private long _step;
            public long Carried;
            public long Dropped;
            public long Held;
            public long Overflow;
            public long Unknown;
            public int Largest;
            public int MaxDatagram = TwConstants.MaxDatagramSize;

            public MemoryCarrier(ulong seed, double loss, double hold)
            {
                _rng = seed;
                _loss = loss;
                _hold = hold;
                for (int i = 0; i < Slots; i++)
                {
                    _bytes[i] = new byte[TwConstants.MaxDatagramSize];
                    _free[i] = Slots - 1 - i;
                }
                _freeCount = Slots;
            }

            public void Attach(ulong id, TwSession s)
            {
                _ids[_endpoints] = id;
                _sessions[_endpoints] = s;
                _endpoints++;
            }

            /// <summary>xorshift64*: a uniform double in [0, 1).</summary>
            private double Next()
            {
                _rng ^= _rng >> 12;
                _rng ^= _rng << 25;
                _rng ^= _rng >> 27;
                return ((_rng * 2685821657736338717UL) >> 11) * (1.0 / (1UL << 53));
            }

            [MethodImpl(MethodImplOptions.NoInlining)]
            public void Step()
            {
                _step++;
                for (int e = 0; e < _endpoints; e++)
                {
                    if (_sessions[e].IsDisposed)
                    {
                        continue;
                    }
                    do
                    {
                        _out.Pull(_sessions[e]);
                        for (int i = 0; i < _out.Count; i++)
                        {
                            int len = _out.Length(i);
                            Largest = Math.Max(Largest, len);
                            if (Next() < _loss)
                            {
                                Dropped++;
                                continue;
                            }
                            if (_freeCount == 0)
                            {
                                Overflow++;
                                continue;
                            }
                            int slot = _free[--_freeCount];
                            _out.Copy(i, _bytes[slot], 0);
                            _len[slot] = len;
                            _from[slot] = _ids[e];
                            _to[slot] = _out.Remote(i);
                            long delay = 0;
                            if (Next() < _hold)
                            {
                                delay = Next() < 0.5 ? 1 : 2;
                                Held++;
                            }
                            _due[slot] = _step + delay;
                            _busy[_busyCount++] = slot;
                        }
                    } while (_out.MayHaveMore);
                }
                for (int e = 0; e < _endpoints; e++)
                {
                    TwSession s = _sessions[e];
                    _in.Clear();
                    int kept = 0;
                    for (int k = 0; k < _busyCount; k++)
                    {
                        int slot = _busy[k];
                        bool unknown = false;
                        if (_to[slot] != _ids[e])
                        {
                            // Addressed to no endpoint at all: lost (counted once, by endpoint 0).
                            unknown = e == 0 && IndexOf(_to[slot]) < 0;
                        }
                        else if (_due[slot] <= _step)
                        {
                            if (!s.IsDisposed)
                            {
                                if (!_in.Add(_from[slot], _bytes[slot], 0, _len[slot], 0))
                                {
                                    _in.Push(s);
                                    _in.Add(_from[slot], _bytes[slot], 0, _len[slot], 0);
                                }
                                Carried++;
                            }
                            _free[_freeCount++] = slot;
                            continue;
                        }
                        if (unknown)
                        {
                            Unknown++;
                            _free[_freeCount++] = slot;
                            continue;
                        }
                        _busy[kept++] = slot;
                    }
                    _busyCount = kept;
                    if (_in.Count > 0)
                    {
                        _in.Push(s);
                    }
                }
            }

            private int IndexOf(ulong id)
            {
                for (int e = 0; e < _endpoints; e++)
                {
                    if (_ids[e] == id)
                    {
                        return e;
                    }
                }
                return -1;
            }

            public void Dispose()
            {
                _out.Dispose();
                _in.Dispose();
            }
        }

        private static void CarrierBatchBasics()
        {
            using (TwDatagramBatch b = new TwDatagramBatch(2, TwConstants.MaxDatagramSize + 10))
            {
                Equal(2, b.Capacity, "capacity");
                Equal(1210, b.BufferBytes, "buffer bytes");
                byte[] src = { 1, 2, 3, 4, 5 };
                Check(b.Add(7, src, 1, 3, 250), "a 3-byte datagram fits");
                Equal(1, b.Count, "one item");
                Equal(7UL, b.Remote(0), "remote");
                Equal(3, b.Length(0), "length");
                Equal(250u, b.AgeUs(0), "age");
                byte[] dst = new byte[4];
                Equal(3, b.Copy(0, dst, 1), "copied");
                Equal((byte)2, dst[1], "byte 0");
                Equal((byte)4, dst[3], "byte 2");
                Equal((byte)3, b.Span(0)[1], "span");
                Throws<ArgumentOutOfRangeException>(() => b.Copy(0, dst, 2), "a copy that does not fit throws");
                Throws<ArgumentOutOfRangeException>(() => b.Remote(1), "no item 1");
                Throws<ArgumentOutOfRangeException>(() => b.Add(1, src, 4, 2, 0), "a range outside src throws");
                Check(!b.Add(8, new byte[1208], 0, 1208, 0), "1208 bytes with 1207 left: refused");
                Equal(1, b.Count, "nothing added");
                Check(b.Add(8, new ReadOnlySpan<byte>(src), 0), "a span fits");
                Check(!b.Add(9, src, 0, 1, 0), "no item left: refused");
                Check(b.Data(1) != IntPtr.Zero, "data points into the pinned buffer");
                b.Clear();
                Equal(0, b.Count, "cleared");
                Check(b.Add(8, new byte[TwConstants.MaxDatagramSize], 0, TwConstants.MaxDatagramSize, 0), "a largest datagram fits after Clear");
            }
            TwDatagramBatch d = new TwDatagramBatch(1);
            d.Dispose();
            d.Dispose();
            Check(d.IsDisposed, "disposed");
            Throws<ObjectDisposedException>(() => d.Add(1, new byte[1], 0, 1, 0), "Add after Dispose");
            Throws<ArgumentOutOfRangeException>(() => new TwDatagramBatch(4, 100), "a buffer under one largest datagram");
            // A UDP session and a SYNCTEST session have nothing to push or pull: InvalidState, thrown by the batch.
            using (TwDatagramBatch b = new TwDatagramBatch(4))
            using (TwSession udp = new TwSession(SessionConfig(TwSessionMode.P2P)))
            using (TwSession st = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
            {
                foreach (TwSession s in new[] { udp, st })
                {
                    int n;
                    Equal(TwResult.InvalidState, s.PushDatagrams(new TwDatagram[0], out n), s.Mode + ": push");
                    TickwireException e = Throws<TickwireException>(() => b.Pull(s), s.Mode + ": the batch's pull throws");
                    Equal(TwResult.InvalidState, e.Code, s.Mode + ": InvalidState");
                }
            }
            // A max_datagram_size on a UDP session is refused; out of 1105..=1200 on a remote one too.
            TwSessionConfig bad = SessionConfig(TwSessionMode.P2P);
            bad.Host.MaxDatagramSize = 1170;
            Throws<TickwireException>(() => new TwSession(bad).Dispose(), "max_datagram_size on a UDP session");
            bad.SetBindAddress("remote:5");
            bad.Host.MaxDatagramSize = TwConstants.MinCarrierDatagramSize - 1;
            Throws<TickwireException>(() => new TwSession(bad).Dispose(), "max_datagram_size under the minimum");
        }

        private static TwSessionConfig CarrierP2PConfig(ulong id)
        {
            TwSessionConfig c = SessionConfig(TwSessionMode.P2P);
            c.SetBindAddress("remote:" + id);
            c.Host.MaxDatagramSize = 1170; // as over EOS P2P
            return c;
        }

        /// <summary>Frames of both peers and a carrier step, 1 ms apart (the sleep allocates nothing).</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void CarrierPairFrames(TwSession a, SessionGame ga, TwSession b, SessionGame gb, MemoryCarrier carrier, int count)
        {
            for (int i = 0; i < count; i++)
            {
                ga.Frame(a, 0);
                gb.Frame(b, 1);
                carrier.Step();
                System.Threading.Thread.Sleep(1);
            }
        }

        private static void CarrierP2PAgrees()
        {
            AllocationProbeWorks();
            using (MemoryCarrier carrier = new MemoryCarrier(0x5eed, 0.05, 0.2))
            using (TwSession a = new TwSession(CarrierP2PConfig(1)))
            using (TwSession b = new TwSession(CarrierP2PConfig(2)))
            {
                Equal("remote:1", a.LocalAddress, "A's address is its remote");
                carrier.Attach(1, a);
                carrier.Attach(2, b);
                a.AddLocalPlayer(0);
                a.AddRemotePlayer(1, "remote:2");
                b.AddRemotePlayer(0, "remote:1");
                b.AddLocalPlayer(1);
                SessionGame ga = new SessionGame(2, a.StateSlots);
                SessionGame gb = new SessionGame(2, b.StateSlots);
                ga.RecordEvents = false;
                gb.RecordEvents = false;
                a.Start();
                b.Start();
                // Warm-up: connected, synchronized and simulating (JIT, entry points, rollbacks).
                Timer sw = Timer.StartNew();
                while (sw.ElapsedMilliseconds < DeadlineMs && Math.Min(StatsOf(a).CurrentTick, StatsOf(b).CurrentTick) < 60)
                {
                    CarrierPairFrames(a, ga, b, gb, carrier, 1);
                }
                Check(StatsOf(a).CurrentTick >= 60, "the pair runs over the carrier before the measurement");
                CarrierPairFrames(a, ga, b, gb, carrier, 100);
                uint tick0 = StatsOf(a).CurrentTick;
                long carried0 = carrier.Carried;
                long resimulated0 = ga.Resimulated + gb.Resimulated;
                const int Frames = 1500;
                sw = Timer.StartNew();
                long before = GC.GetAllocatedBytesForCurrentThread();
                CarrierPairFrames(a, ga, b, gb, carrier, Frames);
                long after = GC.GetAllocatedBytesForCurrentThread();
                long elapsed = sw.ElapsedMilliseconds;
                long delta = after - before;
                uint ticks = StatsOf(a).CurrentTick - tick0;
                long resimulated = ga.Resimulated + gb.Resimulated - resimulated0;
                Console.WriteLine("  allocation: " + delta + " bytes over " + Frames + " frames of a P2P pair over the in-memory carrier (" +
                                  elapsed + " ms; " + ticks + " ticks on peer A, " + (carrier.Carried - carried0) + " datagrams carried, " +
                                  resimulated + " re-simulated ticks on both)");
                // Then on to a few hundred confirmed ticks, if the measurement did not get there.
                sw = Timer.StartNew();
                while (sw.ElapsedMilliseconds < DeadlineMs && Math.Min(ga.ConfirmedAtLastAdvance, gb.ConfirmedAtLastAdvance) < 400)
                {
                    CarrierPairFrames(a, ga, b, gb, carrier, 1);
                }
                GameOk(ga, "peer A");
                GameOk(gb, "peer B");
                Equal(0L, delta, "managed bytes allocated during the measured frames (pull, push, the session loop)");
                Check(ticks > 60, "the pair simulated during the measurement: " + ticks + " ticks");
                uint confirmed = Math.Min(ga.ConfirmedAtLastAdvance, gb.ConfirmedAtLastAdvance);
                Check(confirmed >= 400, "a few hundred confirmed ticks: " + confirmed);
                Check(confirmed < SessionGame.History, "the history holds every confirmed tick");
                for (uint t = 0; t < confirmed; t++)
                {
                    ulong sa, sb;
                    Check(ga.TryGetSum(t, out sa), "peer A saved a checksum for confirmed tick " + t);
                    Check(gb.TryGetSum(t, out sb), "peer B saved a checksum for confirmed tick " + t);
                    Equal(sa, sb, "checksum of confirmed tick " + t);
                }
                Equal(0, ga.Count(TwSessionEventKind.Desync) + gb.Count(TwSessionEventKind.Desync), "no desync");
                Check(carrier.Dropped > 0 && carrier.Held > 0, "the carrier lost " + carrier.Dropped + " and held back " + carrier.Held + " datagrams");
                Check(resimulated > 0, "rollbacks happened during the measurement");
                Check(carrier.Largest <= 1170, "no datagram over the declared 1170 bytes: " + carrier.Largest);
                Equal(0L, carrier.Overflow + carrier.Unknown, "every datagram addressed to an endpoint, the pool never full");
                Console.WriteLine("  carrier: " + carrier.Carried + " carried, " + carrier.Dropped + " lost, " + carrier.Held +
                                  " held back, largest " + carrier.Largest + " bytes; " + confirmed + " confirmed ticks agree");
            }
        }

        private static void CarrierRelayAgrees()
        {
            using (MemoryCarrier carrier = new MemoryCarrier(0xca11, 0.03, 0.2))
            {
                TwSessionConfig sc = TwSessionConfig.RelayServer(RelaySlots, SessionGame.InputSize, "remote:100");
                sc.MaxPrediction = 16;
                TwSession server = new TwSession(sc);
                TwSession[] clients = new TwSession[2];
                try
                {
                    Equal("remote:100", server.LocalAddress, "the server's address is its remote");
                    carrier.Attach(100, server);
                    SessionGame serverGame = new SessionGame((int)sc.NumPlayers, server.StateSlots);
                    serverGame.RecordAfterAdvance = true;
                    server.Start();
                    // The server's first tick is its initial state, which it never records (it
                    // records after each ADVANCE): let it run a few ticks before anyone joins.
                    Timer warm = Timer.StartNew();
                    while (warm.ElapsedMilliseconds < DeadlineMs && StatsOf(server).CurrentTick < 5)
                    {
                        serverGame.RelayFrame(server, 0);
                        System.Threading.Thread.Sleep(2);
                    }
                    SessionGame[] games = new SessionGame[2];
                    for (int i = 0; i < 2; i++)
                    {
                        TwSessionConfig cc = TwSessionConfig.RelayClient(RelaySlots, SessionGame.InputSize, "remote:" + (101 + i));
                        cc.MaxPrediction = 16;
                        clients[i] = new TwSession(cc);
                        clients[i].SetServer("remote:100");
                        clients[i].Start();
                        carrier.Attach(101 + (ulong)i, clients[i]);
                        games[i] = new SessionGame((int)cc.NumPlayers, clients[i].StateSlots);
                        for (int k = 0; k < games[i].State.Length; k++)
                        {
                            games[i].State[k] = -1; // only the server's snapshot (a RESTORE) makes it right
                        }
                    }
                    Timer sw = Timer.StartNew();
                    uint agreed = 0;
                    while (sw.ElapsedMilliseconds < 2 * DeadlineMs)
                    {
                        serverGame.RelayFrame(server, 0);
                        games[0].RelayFrame(clients[0], 0);
                        games[1].RelayFrame(clients[1], 1);
                        carrier.Step();
                        System.Threading.Thread.Sleep(2);
                        if (games[0].Count(TwSessionEventKind.Joined) > 0 && games[1].Count(TwSessionEventKind.Joined) > 0)
                        {
                            agreed = Math.Min(StatsOf(clients[0]).ConfirmedTick - games[0].LastJoined.Tick,
                                              StatsOf(clients[1]).ConfirmedTick - games[1].LastJoined.Tick);
                            if (agreed >= 300)
                            {
                                break;
                            }
                        }
                    }
                    GameOk(serverGame, "server");
                    int[] compared = new int[2];
                    for (int i = 0; i < 2; i++)
                    {
                        GameOk(games[i], "client " + i);
                        Check(games[i].Count(TwSessionEventKind.Joined) > 0, "client " + i + " joined over the carrier");
                        uint from = games[i].LastJoined.Tick;
                        uint to = StatsOf(clients[i]).ConfirmedTick;
                        Check(to - from < SessionGame.History, "the histories hold every compared tick");
                        for (uint t = from; t < to; t++)
                        {
                            ulong sv, cl;
                            Check(serverGame.TryGetSum(t, out sv), "the server has a checksum for tick " + t);
                            Check(games[i].TryGetSum(t, out cl), "client " + i + " saved authoritative tick " + t);
                            Equal(sv, cl, "client " + i + ": the authoritative state at the start of tick " + t);
                            compared[i]++;
                        }
                        Check(compared[i] >= 300, "client " + i + ": a few hundred authoritative ticks compared: " + compared[i]);
                        Check(games[i].Resimulated > 0, "client " + i + " predicted and re-simulated");
                        Equal(0, games[i].Count(TwSessionEventKind.Desync), "client " + i + ": no desync");
                    }
                    Check(carrier.Dropped > 0 && carrier.Held > 0, "the carrier lost " + carrier.Dropped + " and held back " + carrier.Held);
                    Equal(0L, carrier.Overflow + carrier.Unknown, "every datagram addressed to an endpoint, the pool never full");
                    Console.WriteLine("  relay over the carrier: " + compared[0] + " and " + compared[1] + " authoritative ticks agree; " +
                                      carrier.Carried + " datagrams carried, " + carrier.Dropped + " lost, " + carrier.Held + " held back");
                }
                finally
                {
                    foreach (TwSession c in clients)
                    {
                        if (c != null)
                        {
                            c.Dispose();
                        }
                    }
                    server.Dispose();
                }
            }
        }
    }
}
