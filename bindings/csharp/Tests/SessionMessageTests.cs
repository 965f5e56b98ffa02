// The session message side channel through TwSession: a P2P pair both ways (the read
// contract, bounds, bad targets), a relay client and server both ways, the modes without
// it, and 0 managed bytes per frame of send + poll + read. Part of the test program
// (Program is partial).

using System;
using System.Runtime.CompilerServices;
using Tickwire;
using Tickwire.Native;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        private static void RunSessionMessageTests()
        {
            Run("session messages: P2P both ways, the read contract, the bounds, bad targets", SessionMessagesP2P);
            Run("session messages: relay client and server both ways; modes without messages say so", SessionMessagesRelay);
            Run("session messages: 0 bytes over a P2P pair's frames of send+poll+read", SessionMessagesZeroAllocation);
        }

        private static readonly byte[] s_hello = { (byte)'h', (byte)'i', (byte)' ', (byte)'B' };

        private static void SessionMessagesP2P()
        {
            using (SessionPair pair = new SessionPair(5000, 0, 0, null))
            {
                Equal(TwResult.InvalidState, pair.A.SendMessage(1, s_hello), "the peer is not connected yet");
                pair.RunFor(DeadlineMs, () => StatsOf(pair.A).Running == 1 && StatsOf(pair.B).Running == 1);
                Equal(TwResult.Ok, pair.A.SendMessage(1, s_hello), "A to player 1");
                Equal(TwResult.Ok, pair.B.SendMessage(TwConstants.SessionMessageTargetAll, new byte[0]), "B to all, empty");
                pair.RunFor(DeadlineMs, () => pair.GameB.MessagesRead == 1 && pair.GameA.MessagesRead == 1);
                GameOk(pair.GameA, "peer A");
                GameOk(pair.GameB, "peer B");
                Equal(1L, pair.GameB.MessagesRead, "B read one message");
                Equal(s_hello.Length, pair.GameB.LastMessageLength, "its length");
                Check(pair.GameB.MessageBuffer[0] == (byte)'h' && pair.GameB.MessageBuffer[3] == (byte)'B', "its bytes");
                Equal(0u, pair.GameB.LastMessagePlayer, "from player 0");
                Equal(0, pair.GameA.LastMessageLength, "A read B's empty message");
                Equal(1u, pair.GameA.LastMessagePlayer, "from player 1");
                TwSessionMessageStats st;
                Equal(TwResult.Ok, pair.A.GetMessageStats(out st), "stats");
                Check(st.Sent == 1 && st.Received == 1 && st.DroppedUnread == 0 && st.DroppedRefused == 0, "A's figures");

                // The read contract, polling by hand: too small keeps the payload.
                byte[] big = new byte[TwConstants.SessionMessageMaxSize];
                big[100] = 7;
                Equal(TwResult.Ok, pair.B.SendMessage(0, big), "the largest message");
                TwSessionEvent ev = default(TwSessionEvent);
                bool got = false;
                Timer sw = Timer.StartNew();
                while (!got && sw.ElapsedMilliseconds < DeadlineMs)
                {
                    int due;
                    pair.A.TicksDue(out due); // pumps; A's ticks wait (B keeps ticking)
                    pair.GameB.Frame(pair.B, 1);
                    while (!got && pair.A.TryPollEvent(out ev))
                    {
                        got = ev.Kind == TwSessionEventKind.Message;
                    }
                    System.Threading.Thread.Sleep(2);
                }
                Check(got, "A got the large message");
                Equal((uint)big.Length, ev.Data.Message.Size, "its size in the event");
                int n;
                byte[] small = new byte[16];
                Equal(TwResult.BufferTooSmall, pair.A.ReadMessage(small, out n), "too small");
                Equal(big.Length, n, "the size needed");
                byte[] into = new byte[TwConstants.SessionMessageMaxSize];
                Equal(TwResult.Ok, pair.A.ReadMessage(into, out n), "read");
                Check(n == big.Length && into[100] == 7, "the payload");
                Equal(TwResult.InvalidState, pair.A.ReadMessage(into, out n), "read twice");
                Check(TwLibrary.LastErrorMessage().Contains("tw_session_read_message"), "names the function");

                // Bounds and targets.
                Equal(TwResult.MessageTooLarge, pair.A.SendMessage(1, new byte[big.Length + 1]), "over the size limit");
                Equal(TwResult.InvalidArgument, pair.A.SendMessage(0, s_hello), "a local player");
                Equal(TwResult.InvalidArgument, pair.A.SendMessage(2, s_hello), "no such player");
                int accepted = 0;
                while (pair.A.SendMessage(1, big) == TwResult.Ok && accepted < 10)
                {
                    accepted++;
                }
                Check(accepted <= TwConstants.SessionMessageQueueBytes / big.Length, "the queue bound: " + accepted + " accepted");
                Equal(TwResult.QueueFull, pair.A.SendMessage(1, big), "then QueueFull");
            }
        }

        private static void SessionMessagesRelay()
        {
            using (RelayMatch m = new RelayMatch(Link(5000, 0, 0), null))
            {
                m.AddClient(null);
                m.AddClient(null);
                Equal(TwResult.InvalidState, m.Clients[0].SendMessage(TwConstants.SessionMessageTargetAll, s_hello), "not joined");
                m.RunFor(10000, m.AllSynchronized);
                Check(m.AllSynchronized(), "both clients joined");
                Equal(TwResult.InvalidArgument, m.Clients[0].SendMessage(0, s_hello), "a client's target is the server: ALL");
                Equal(TwResult.Ok, m.Clients[0].SendMessage(TwConstants.SessionMessageTargetAll, s_hello), "client 0 to the server");
                uint slot1 = m.ClientGames[1].LastJoined.Player;
                Equal(TwResult.Ok, m.Server.SendMessage(slot1, s_hello), "the server to client 1's player");
                Equal(TwResult.Ok, m.Server.SendMessage(TwConstants.SessionMessageTargetAll, new byte[3]), "the server to all");
                m.RunFor(DeadlineMs, () => m.ServerGame.MessagesRead == 1 && m.ClientGames[0].MessagesRead == 1 && m.ClientGames[1].MessagesRead == 2);
                Equal(1L, m.ServerGame.MessagesRead, "the server read one");
                Equal(m.ClientGames[0].LastJoined.Player, m.ServerGame.LastMessagePlayer, "from client 0's player");
                Equal(1L, m.ClientGames[0].MessagesRead, "client 0 read the broadcast");
                Equal(2L, m.ClientGames[1].MessagesRead, "client 1 read both");
                Equal(TwConstants.NoPlayer, m.ClientGames[1].LastMessagePlayer, "a server's message comes from no player");
                Equal(TwResult.InvalidArgument, m.Server.SendMessage(5, s_hello), "no such player");
            }
            TwSessionConfig cfg = SessionConfig(TwSessionMode.SyncTest);
            using (TwSession s = new TwSession(cfg))
            {
                s.Start();
                Equal(TwResult.InvalidState, s.SendMessage(TwConstants.SessionMessageTargetAll, s_hello), "SYNCTEST has no side channel");
                Check(TwLibrary.LastErrorMessage().Contains("SyncTest"), "the message names the mode");
            }
        }

        /// <summary>A P2P pair where both peers send a chat line every frame.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void ChatFrames(SessionPair pair, byte[] line, int count)
        {
            for (int i = 0; i < count; i++)
            {
                pair.A.SendMessage(1, line); // QueueFull now and then is fine: nothing allocates either way
                pair.B.SendMessage(0, line);
                pair.Frame();
                System.Threading.Thread.Sleep(1);
            }
        }

        private static void SessionMessagesZeroAllocation()
        {
            AllocationProbeWorks();
            using (SessionPair pair = new SessionPair(5000, 0, 0, null))
            {
                pair.GameA.RecordEvents = false;
                pair.GameB.RecordEvents = false;
                byte[] line = new byte[48];
                pair.RunFor(DeadlineMs, () => StatsOf(pair.A).Running == 1 && StatsOf(pair.B).Running == 1);
                ChatFrames(pair, line, 200); // warm-up: JIT, entry points, pools
                long read0 = pair.GameA.MessagesRead + pair.GameB.MessagesRead;
                const int Frames = 1000;
                long before = GC.GetAllocatedBytesForCurrentThread();
                ChatFrames(pair, line, Frames);
                long after = GC.GetAllocatedBytesForCurrentThread();
                long read = pair.GameA.MessagesRead + pair.GameB.MessagesRead - read0;
                Console.WriteLine("  allocation: " + (after - before) + " bytes over " + Frames + " frames, " + read + " messages read");
                GameOk(pair.GameA, "peer A");
                GameOk(pair.GameB, "peer B");
                Equal(0L, after - before, "managed bytes allocated during the measured frames");
                Check(read > Frames, "messages were read during the measurement: " + read);
            }
        }
    }
}
