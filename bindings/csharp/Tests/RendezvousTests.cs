// The rendezvous tests: P2P peers that meet through an in-process TwRendezvous on
// 127.0.0.1 instead of at addresses given (TwSession.SetRendezvous, tickets from
// TwRendezvous.GenerateTicket, the remote player added with a null address). An open
// match goes Relayed then Direct (loopback has no NAT), agrees on every confirmed tick,
// and its frames (the session loop and the network stats read every frame) allocate
// nothing; a match with a private peer stays Relayed and the rendezvous relays it; a
// ticket minted with another key is refused (RendezvousRefused, BadTicket). Part of the
// test program (Program is partial).

using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Tickwire;
using Tickwire.Native;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        private static void RunRendezvousTests()
        {
            Run("rendezvous: TwMatchClaim, TwRendezvous (address, stats, bad arguments, Dispose) and SetRendezvous's checks", RendezvousBasics);
            Run("rendezvous: a P2P pair met through an in-process TwRendezvous goes Relayed then Direct and agrees on every confirmed tick; network stats say Direct; 0 bytes a frame", RendezvousPairGoesDirect);
            Run("rendezvous: a private peer keeps the pair Relayed through the rendezvous, which counts what it relayed", RendezvousPrivateStaysRelayed);
            Run("rendezvous: a ticket minted with another key is refused (RendezvousRefused, BadTicket)", RendezvousRefusesForeignTicket);
        }

        /// <summary>Two P2P peers (player 0 on A, player 1 on B) met through a rendezvous; started.</summary>
        private sealed class RendezvousPair : IDisposable
        {
            public TwSession A;
            public TwSession B;
            public SessionGame GameA;
            public SessionGame GameB;

            public RendezvousPair(TwRendezvous rendezvous, byte[] key, ulong matchId, bool privateB, TwLinkSimConfig sim)
            {
                try
                {
                    byte[] secret = TwSecurity.GenerateKey(); // the players' secret, from the matchmaker
                    TwSessionConfig cfg = SessionConfig(TwSessionMode.P2P);
                    string address = rendezvous.LocalAddress;
                    using (TwSecurity security = TwSecurity.ForMatch(secret))
                    {
                        A = new TwSession(cfg, security);
                        cfg.Host.SimSeed = 8;
                        B = new TwSession(cfg, security);
                    }
                    A.SetLinkSim(TwDirection.Outbound, sim);
                    B.SetLinkSim(TwDirection.Outbound, sim);
                    // The backend's tickets: one per player, the match claim first in the user data.
                    A.SetRendezvous(address, TwRendezvous.GenerateTicket(key, cfg.Host.ProtocolId, 9000, address, matchId, 0, 2, 600));
                    B.SetRendezvous(address, TwRendezvous.GenerateTicket(key, cfg.Host.ProtocolId, 9001, address, matchId, 1, 2, 600,
                                                                         new byte[] { 1, 2, 3 }), privateB);
                    A.AddLocalPlayer(0);
                    A.AddRendezvousPlayer(1);
                    B.AddRemotePlayer(0, null); // the same as AddRendezvousPlayer
                    B.AddLocalPlayer(1);
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

            /// <summary>Frames (2 ms apart) until done() or ms milliseconds.</summary>
            public void RunUntil(int ms, Func<bool> done)
            {
                Timer sw = Timer.StartNew();
                while (sw.ElapsedMilliseconds < ms && !done())
                {
                    Frame();
                    System.Threading.Thread.Sleep(2);
                }
            }

            /// <summary>Equal checksums at every tick before both peers' confirmed tick; returns that tick.</summary>
            public uint AssertInSync()
            {
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

        private static TwNetworkStats NetworkStatsOf(TwSession s, uint player)
        {
            TwNetworkStats ns;
            Equal(TwResult.Ok, s.GetNetworkStats(player, out ns), "GetNetworkStats(" + player + ")");
            return ns;
        }

        private static void RendezvousBasics()
        {
            // The match claim.
            byte[] claim = TwMatchClaim.Create(77, 1, 2);
            Equal(TwConstants.MatchClaimSize, claim.Length, "a claim's size");
            byte[] room = new byte[TwConstants.MatchClaimSize + 2];
            TwMatchClaim.Write(77, 1, 2, room);
            for (int i = 0; i < claim.Length; i++)
            {
                Equal(claim[i], room[i], "Write and Create write the same byte " + i);
            }
            Equal((byte)0, room[TwConstants.MatchClaimSize], "nothing past the claim");
            ThrowsTw(TwResult.InvalidArgument, () => TwMatchClaim.Write(77, 0, 2, new byte[TwConstants.MatchClaimSize - 1]), "a short buffer");
            ThrowsTw(TwResult.InvalidArgument, () => TwMatchClaim.Create(77, 2, 2), "slot not below players");
            ThrowsTw(TwResult.InvalidArgument, () => TwMatchClaim.Create(77, 0, 9), "9 players");
            ThrowsTw(TwResult.InvalidArgument, () => TwMatchClaim.Create(77, 0, 1), "1 player");

            byte[] key = TwSecurity.GenerateKey();
            uint protocol = TwSessionConfig.Default(TwSessionMode.P2P).Host.ProtocolId;
            ThrowsTw(TwResult.InvalidArgument, () => new TwRendezvous("127.0.0.1:0", new byte[31], protocol), "a 31-byte key");
            ThrowsTw(TwResult.InvalidArgument, () => new TwRendezvous("127.0.0.1:0", new byte[32], protocol), "an all-zero key");
            ThrowsTw(TwResult.InvalidArgument, () => new TwRendezvous("nowhere", key, protocol), "an unparsable address");
            ThrowsTw(TwResult.NullArgument, () => new TwRendezvous("127.0.0.1:0", default(ReadOnlySpan<byte>), protocol), "no key");
            int live0 = TwRendezvous.LiveCount;
            TwRendezvous r = new TwRendezvous("127.0.0.1:0", key, protocol, 16384, 60);
            try
            {
                Equal(live0 + 1, TwRendezvous.LiveCount, "one more live rendezvous");
                string address = r.LocalAddress;
                Check(address.StartsWith("127.0.0.1:", StringComparison.Ordinal) && !address.EndsWith(":0", StringComparison.Ordinal),
                      "the bound address with its port: " + address);
                Check(ReferenceEquals(address, r.LocalAddress), "computed once");
                ThrowsTw(TwResult.AddressInUse, () => new TwRendezvous(address, key, protocol), "the same port again");
                TwRendezvousStats st;
                Equal(TwResult.Ok, r.GetStats(out st), "GetStats");
                Equal(0UL, st.MatchesMade + st.Hellos + st.RelayedDatagrams + st.Refused, "nothing done yet");

                // Tickets: a connect token with the claim, then the game's bytes (up to 238 of them).
                byte[] ticket = TwRendezvous.GenerateTicket(key, protocol, 1, address, 77, 0, 2, 60, new byte[238]);
                Equal(TwConstants.ConnectTokenSize, ticket.Length, "a ticket is a connect token");
                ThrowsTw(TwResult.InvalidArgument, () => TwRendezvous.GenerateTicket(key, protocol, 1, address, 77, 0, 2, 60, new byte[239]),
                         "239 bytes of game data do not fit");
                ThrowsTw(TwResult.InvalidArgument, () => TwRendezvous.GenerateTicket(key, protocol, 1, address, 77, 3, 2, 60), "a bad slot");

                // SetRendezvous: P2P only, with the players' secret, a ticket that reads.
                using (TwSession st2 = new TwSession(SessionConfig(TwSessionMode.SyncTest)))
                {
                    ThrowsTw(TwResult.InvalidState, () => st2.SetRendezvous(address, ticket), "a SYNCTEST session");
                }
                using (TwSession open = new TwSession(SessionConfig(TwSessionMode.P2P)))
                {
                    ThrowsTw(TwResult.InvalidArgument, () => open.SetRendezvous(address, ticket), "no players' secret");
                    ThrowsTw(TwResult.NullArgument, () => open.AddRemotePlayer(1, null), "a null address without a rendezvous");
                }
                using (TwSecurity security = TwSecurity.ForMatch(TwSecurity.GenerateKey()))
                using (TwSession p = new TwSession(SessionConfig(TwSessionMode.P2P), security))
                {
                    ThrowsTw(TwResult.InvalidArgument, () => p.SetRendezvous(address, new byte[10]), "a 10-byte ticket");
                    ThrowsTw(TwResult.InvalidArgument, () => p.SetRendezvous("nowhere", ticket), "an unparsable address");
                    p.SetRendezvous(address, ticket, true);
                    p.AddLocalPlayer(0);
                    p.AddRendezvousPlayer(1);
                    TwNetworkStats ns;
                    Check(p.GetNetworkStats(1, out ns) != TwResult.Ok, "no figures before the peer is connected");
                    Equal(TwPath.None, ns.Path, "no path yet");
                }
            }
            finally
            {
                r.Dispose();
            }
            r.Dispose();
            Check(r.IsDisposed, "disposed");
            Equal(live0, TwRendezvous.LiveCount, "released");
            Throws<ObjectDisposedException>(() => { string a = r.LocalAddress; }, "LocalAddress after Dispose");
            Throws<ObjectDisposedException>(() => { TwRendezvousStats s; r.GetStats(out s); }, "GetStats after Dispose");
            // DisposeAll (the Unity package calls it before a domain reload).
            TwRendezvous r2 = new TwRendezvous("127.0.0.1:0", key, protocol);
            TwRendezvous.DisposeAll();
            Check(r2.IsDisposed, "DisposeAll stops a live rendezvous");
        }

        /// <summary>Frames of both peers, each reading its network stats of the other (as a net overlay does), 2 ms apart.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static int RendezvousPairFrames(RendezvousPair pair, int count)
        {
            int notDirect = 0;
            TwNetworkStats ns;
            for (int i = 0; i < count; i++)
            {
                pair.Frame();
                if (pair.A.GetNetworkStats(1, out ns) != TwResult.Ok || ns.Path != TwPath.Direct)
                {
                    notDirect++;
                }
                if (pair.B.GetNetworkStats(0, out ns) != TwResult.Ok || ns.Path != TwPath.Direct)
                {
                    notDirect++;
                }
                System.Threading.Thread.Sleep(2);
            }
            return notDirect;
        }

        private static void RendezvousPairGoesDirect()
        {
            AllocationProbeWorks();
            byte[] key = TwSecurity.GenerateKey();
            uint protocol = TwSessionConfig.Default(TwSessionMode.P2P).Host.ProtocolId;
            using (TwRendezvous r = new TwRendezvous("127.0.0.1:0", key, protocol))
            using (RendezvousPair pair = new RendezvousPair(r, key, 1, false, Link(15000, 3000, 0.01)))
            {
                pair.GameA.RecordEvents = false;
                pair.GameB.RecordEvents = false;
                // Warm-up: met, direct, synchronized and simulating (JIT, entry points, rollbacks).
                pair.RunUntil(10000, () => pair.GameA.Paths[1] == TwPath.Direct && pair.GameB.Paths[0] == TwPath.Direct &&
                                           StatsOf(pair.A).CurrentTick > 60 && StatsOf(pair.B).CurrentTick > 60);
                GameOk(pair.GameA, "peer A");
                GameOk(pair.GameB, "peer B");
                Equal(TwPath.Direct, pair.GameA.Paths[1], "peer A's path to player 1 went direct");
                Equal(TwPath.Direct, pair.GameB.Paths[0], "peer B's path to player 0 went direct");
                Check(StatsOf(pair.A).CurrentTick > 60, "the pair runs before the measurement");
                // Relayed as soon as introduced (through the rendezvous's address), then direct.
                foreach (SessionGame g in new[] { pair.GameA, pair.GameB })
                {
                    Equal(TwPath.Relayed, g.FirstPath.Path, "the first path is the relay");
                    Equal(r.LocalAddress, g.FirstPath.GetAddress(), "the relay is the rendezvous");
                    Check(g.LastPath.GetAddress() != r.LocalAddress && g.LastPath.GetAddress().StartsWith("127.0.0.1:", StringComparison.Ordinal),
                          "the direct path goes to the peer: " + g.LastPath.GetAddress());
                }
                Equal(1u, pair.GameA.LastPath.Player, "A's events name player 1");
                Equal(0u, pair.GameB.LastPath.Player, "B's events name player 0");
                RendezvousPairFrames(pair, 200);
                uint tick0 = StatsOf(pair.A).CurrentTick;
                long resimulated0 = pair.GameA.Resimulated + pair.GameB.Resimulated;
                int changes0 = pair.GameA.PathChanges + pair.GameB.PathChanges;
                const int Frames = 1500;
                Timer sw = Timer.StartNew();
                long before = GC.GetAllocatedBytesForCurrentThread();
                int notDirect = RendezvousPairFrames(pair, Frames);
                long after = GC.GetAllocatedBytesForCurrentThread();
                long elapsed = sw.ElapsedMilliseconds;
                long delta = after - before;
                uint ticks = StatsOf(pair.A).CurrentTick - tick0;
                long resimulated = pair.GameA.Resimulated + pair.GameB.Resimulated - resimulated0;
                Console.WriteLine("  allocation: " + delta + " bytes over " + Frames + " frames of a P2P pair met through a rendezvous, " +
                                  "network stats read every frame (" + elapsed + " ms; " + ticks + " ticks on peer A, " + resimulated +
                                  " re-simulated ticks on both)");
                GameOk(pair.GameA, "peer A");
                GameOk(pair.GameB, "peer B");
                Equal(0L, delta, "managed bytes allocated during the measured frames");
                Check(ticks > 60, "the pair simulated during the measurement: " + ticks + " ticks");
                Equal(0, notDirect, "frames whose network stats did not say Direct");
                Equal(changes0, pair.GameA.PathChanges + pair.GameB.PathChanges, "the path stayed direct");
                // The figures say what the events said.
                TwNetworkStats ns = NetworkStatsOf(pair.A, 1);
                Equal(TwPath.Direct, ns.Path, "A's figures: Direct");
                Equal(pair.GameA.LastPath.GetAddress(), ns.GetPathAddress(), "A's figures: the address of the last event");
                ns = NetworkStatsOf(pair.B, 0);
                Equal(pair.GameB.LastPath.GetAddress(), ns.GetPathAddress(), "B's figures: the address of the last event");
                Check(ns.RttUs > 0, "the figures have a round trip");
                uint confirmed = pair.AssertInSync();
                Check(confirmed > 200, "confirmed ticks compared: " + confirmed);
                Equal(0, pair.GameA.Count(TwSessionEventKind.Desync) + pair.GameB.Count(TwSessionEventKind.Desync), "no desync");
                TwRendezvousStats st;
                Equal(TwResult.Ok, r.GetStats(out st), "the rendezvous's stats");
                Check(st.MatchesMade == 1 && st.Refused == 0 && st.Strangers == 0,
                      "one match made, nothing refused: made " + st.MatchesMade + ", refused " + st.Refused + ", strangers " + st.Strangers);
                Console.WriteLine("  rendezvous: " + confirmed + " confirmed ticks agree; " + st.Hellos + " tickets taken, " +
                                  st.RelayedDatagrams + " datagrams relayed before the path went direct");
            }
        }

        private static void RendezvousPrivateStaysRelayed()
        {
            byte[] key = TwSecurity.GenerateKey();
            uint protocol = TwSessionConfig.Default(TwSessionMode.P2P).Host.ProtocolId;
            using (TwRendezvous r = new TwRendezvous("127.0.0.1:0", key, protocol))
            using (RendezvousPair pair = new RendezvousPair(r, key, 2, true, Link(10000, 2000, 0)))
            {
                pair.RunUntil(10000, () => pair.GameA.ConfirmedAtLastAdvance > 180 && pair.GameB.ConfirmedAtLastAdvance > 180);
                // A while longer: a direct path would have been found by now.
                pair.RunUntil(1000, () => false);
                GameOk(pair.GameA, "peer A");
                GameOk(pair.GameB, "peer B");
                foreach (SessionGame g in new[] { pair.GameA, pair.GameB })
                {
                    Equal(1, g.PathChanges, "one path event, never changed");
                    Equal(TwPath.Relayed, g.LastPath.Path, "relayed");
                    Equal(r.LocalAddress, g.LastPath.GetAddress(), "through the rendezvous");
                }
                TwNetworkStats ns = NetworkStatsOf(pair.A, 1);
                Equal(TwPath.Relayed, ns.Path, "A's figures: Relayed (B is private)");
                Equal(r.LocalAddress, ns.GetPathAddress(), "A's figures: the relay's address");
                Equal(TwPath.Relayed, NetworkStatsOf(pair.B, 0).Path, "B's figures: Relayed");
                uint confirmed = pair.AssertInSync();
                Check(confirmed > 180, "confirmed ticks compared: " + confirmed);
                // The figures are at most 100 ms old.
                TwRendezvousStats st = default(TwRendezvousStats);
                Timer sw = Timer.StartNew();
                while (sw.ElapsedMilliseconds < DeadlineMs)
                {
                    Equal(TwResult.Ok, r.GetStats(out st), "the rendezvous's stats");
                    if (st.RelayedDatagrams > 200)
                    {
                        break;
                    }
                    System.Threading.Thread.Sleep(20);
                }
                Check(st.RelayedDatagrams > 200 && st.RelayedBytes > st.RelayedDatagrams,
                      "the match went through the relay: " + st.RelayedDatagrams + " datagrams, " + st.RelayedBytes + " bytes");
                Equal(0UL, st.OverBudget + st.Refused, "nothing over budget or refused");
                Equal(2UL, st.Members, "two members");
                Console.WriteLine("  private: " + confirmed + " confirmed ticks agree; " + st.RelayedDatagrams + " datagrams (" +
                                  st.RelayedBytes + " bytes) relayed");
            }
        }

        private static void RendezvousRefusesForeignTicket()
        {
            byte[] key = TwSecurity.GenerateKey();
            byte[] other = TwSecurity.GenerateKey();
            uint protocol = TwSessionConfig.Default(TwSessionMode.P2P).Host.ProtocolId;
            using (TwRendezvous r = new TwRendezvous("127.0.0.1:0", key, protocol))
            using (TwSecurity security = TwSecurity.ForMatch(TwSecurity.GenerateKey()))
            using (TwSession s = new TwSession(SessionConfig(TwSessionMode.P2P), security))
            {
                string address = r.LocalAddress;
                s.SetRendezvous(address, TwRendezvous.GenerateTicket(other, protocol, 1, address, 5, 0, 2, 600));
                s.AddLocalPlayer(0);
                s.AddRendezvousPlayer(1);
                s.Start();
                SessionGame g = new SessionGame(2, s.StateSlots);
                Timer sw = Timer.StartNew();
                while (sw.ElapsedMilliseconds < DeadlineMs && g.LastRefusal == 0)
                {
                    g.Frame(s, 0);
                    System.Threading.Thread.Sleep(2);
                }
                GameOk(g, "the peer");
                Equal(TwRendezvousRefusal.BadTicket, g.LastRefusal, "the refusal's reason");
                TwSessionEvent ev;
                Check(g.Find(TwSessionEventKind.RendezvousRefused, out ev), "the event was recorded");
                Equal(0u, ev.Data.Refusal.Reserved0, "reserved0 is zero");
                Equal(0, g.PathChanges, "no path: nobody was introduced");
                TwRendezvousStats st = default(TwRendezvousStats);
                sw = Timer.StartNew();
                while (sw.ElapsedMilliseconds < DeadlineMs && st.Refused == 0)
                {
                    Equal(TwResult.Ok, r.GetStats(out st), "the rendezvous's stats");
                    System.Threading.Thread.Sleep(20);
                }
                Check(st.Refused > 0 && st.MatchesMade == 0, "refused " + st.Refused + ", made " + st.MatchesMade);
            }
        }
    }
}
