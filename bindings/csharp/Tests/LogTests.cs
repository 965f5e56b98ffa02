// The log hook from C# (TwHost.SetLog, TwSession.SetLog, TwLog): records arrive from
// inside PollEvent on the polling thread, filtered by level; calls on the same object
// from a handler get Busy; a throwing handler is caught; Off and Dispose unregister;
// and a log that is on costs 0 managed bytes per frame while there is nothing to log.
// The suite also runs under Mono full AOT, where only the [MonoPInvokeCallback]
// trampoline makes the native-to-managed call possible at all.

using System;
using System.Collections.Generic;
using System.Threading;
using Tickwire;
using Tickwire.Native;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        private static void RunLogTests()
        {
            Run("log: a host's records come from PollEvent on the polling thread, filtered by level", LogFromPollOnly);
            Run("log: a session's note and events reach its handler", LogSession);
            Run("log: calls from a handler get Busy; a throwing handler is caught", LogReentryAndExceptions);
            Run("log: Off turns it off, a bad level throws, Dispose unregisters", LogOffAndDispose);
            Run("allocation: 0 bytes over 20,000 polls with a log on and nothing to log", LogZeroAllocation);
        }

        /// <summary>Set by the tests while they are inside PollEvent.</summary>
        private static bool s_inPoll;

        private sealed class LogSink
        {
            public readonly List<string> Texts = new List<string>();
            public readonly List<TwLogLevel> Levels = new List<TwLogLevel>();
            public int OutsidePoll;
            public int OtherThread;
            public readonly int Thread = System.Threading.Thread.CurrentThread.ManagedThreadId;

            public void Handle(TwLogLevel level, string message)
            {
                Texts.Add(message);
                Levels.Add(level);
                if (!s_inPoll) OutsidePoll++;
                if (System.Threading.Thread.CurrentThread.ManagedThreadId != Thread) OtherThread++;
            }

            public bool Has(string needle)
            {
                foreach (string t in Texts)
                {
                    if (t.IndexOf(needle, StringComparison.Ordinal) >= 0) return true;
                }
                return false;
            }
        }

        private static void PollAll(TwHost h)
        {
            TwEvent ev;
            s_inPoll = true;
            while (h.PollEvent(out ev) == TwResult.Ok)
            {
            }
            s_inPoll = false;
        }

        private static void PollUntil(TwHost a, TwHost b, Func<bool> done, string what)
        {
            Timer sw = Timer.StartNew();
            while (!done())
            {
                if (sw.ElapsedMilliseconds > 10000) throw new TestFailure("timed out waiting for: " + what);
                PollAll(a);
                PollAll(b);
                System.Threading.Thread.Sleep(2);
            }
        }

        private static void LogFromPollOnly()
        {
            TwHostConfig sc = TwHostConfig.Default();
            sc.MaxClients = 4;
            using (TwHost server = new TwHost(sc, "127.0.0.1:0"))
            using (TwHost client = new TwHost(TwHostConfig.Default(), "127.0.0.1:0"))
            {
                LogSink info = new LogSink();
                LogSink warn = new LogSink();
                server.SetLog(info.Handle, TwLogLevel.Info);
                client.SetLog(warn.Handle, TwLogLevel.Warn);
                client.Connect(server.LocalAddress);
                System.Threading.Thread.Sleep(200);
                Equal(0, info.Texts.Count, "records before any poll");
                PollUntil(server, client, () => info.Has("connection up: peer"), "the server's connection record");
                Check(info.Has("log on: host bound to 127.0.0.1:"), "the note of SetLog: " + string.Join(" | ", info.Texts));
                Equal(0, info.OutsidePoll, "records outside PollEvent");
                Equal(0, info.OtherThread, "records on another thread");
                foreach (TwLogLevel l in info.Levels)
                {
                    Check(l >= TwLogLevel.Error && l <= TwLogLevel.Info, "level within Info: " + l);
                }
                Equal(0, warn.Texts.Count, "a Warn log hears nothing of a clean connection");
            }
        }

        private static void LogSession()
        {
            TwSessionConfig cfg = SessionConfig(TwSessionMode.P2P);
            using (TwSession s = new TwSession(cfg))
            {
                LogSink sink = new LogSink();
                s.SetLog(sink.Handle, TwLogLevel.Debug);
                TwSessionEvent ev;
                s_inPoll = true;
                while (s.TryPollEvent(out ev))
                {
                }
                s_inPoll = false;
                Check(sink.Has("log on: P2p session bound to 127.0.0.1:"), "the note: " + string.Join(" | ", sink.Texts));
                Equal(TwLogLevel.Info, sink.Levels[0], "the note's level");
                Equal(0, sink.OutsidePoll, "records outside TryPollEvent");
            }
        }

        private static void LogReentryAndExceptions()
        {
            using (TwHost h = new TwHost("127.0.0.1:0"))
            {
                List<TwResult> results = new List<TwResult>();
                h.SetLog((level, message) => results.Add(h.Flush()), TwLogLevel.Info);
                PollAll(h);
                Check(results.Count >= 1, "the handler ran");
                foreach (TwResult r in results)
                {
                    Equal(TwResult.Busy, r, "a call on the same host from its handler");
                }
                h.SetLog((level, message) => { throw new InvalidOperationException("handler bug " + message); }, TwLogLevel.Info);
                PollAll(h);
                Check(TwLog.LastHandlerException is InvalidOperationException, "the exception was caught and kept");
                Equal(TwResult.Ok, h.Flush(), "the host still works");
            }
        }

        private static void LogOffAndDispose()
        {
            int before = TwLog.HandlerCount;
            TwHost h = new TwHost("127.0.0.1:0");
            LogSink sink = new LogSink();
            h.SetLog(sink.Handle, TwLogLevel.Debug);
            Equal(before + 1, TwLog.HandlerCount, "registered");
            h.SetLog(sink.Handle, TwLogLevel.Info);
            Equal(before + 1, TwLog.HandlerCount, "replaced, not added");
            try
            {
                h.SetLog(sink.Handle, (TwLogLevel)9);
                throw new TestFailure("a bad level was accepted");
            }
            catch (TickwireException e)
            {
                Equal(TwResult.InvalidArgument, e.Code, "bad level code");
                Contains(e.Message, "min_level is 9", "bad level message");
            }
            Equal(before + 1, TwLog.HandlerCount, "a refused SetLog keeps the old handler");
            h.SetLog(null);
            Equal(before, TwLog.HandlerCount, "Off unregisters");
            h.Connect("127.0.0.1:9");
            PollAll(h);
            Equal(0, sink.Texts.Count, "nothing after Off");
            h.SetLog(sink.Handle, TwLogLevel.Debug);
            h.Dispose();
            Equal(before, TwLog.HandlerCount, "Dispose unregisters");
        }

        private static void LogZeroAllocation()
        {
            TwHostConfig sc = TwHostConfig.Default();
            sc.MaxClients = 4;
            using (TwHost server = new TwHost(sc, "127.0.0.1:0"))
            using (TwHost client = new TwHost(TwHostConfig.Default(), "127.0.0.1:0"))
            {
                LogSink sink = new LogSink();
                server.SetLog(sink.Handle, TwLogLevel.Debug);
                client.SetLog(sink.Handle, TwLogLevel.Debug);
                client.Connect(server.LocalAddress);
                PollUntil(server, client, () => sink.Texts.Count >= 4, "the connection records");
                // Let the connection's records settle (both sides, the dial, the handshake:
                // one more can still be on its way under load) before measuring.
                int settled = -1;
                Timer quiet = Timer.StartNew();
                while (quiet.ElapsedMilliseconds < 5000)
                {
                    int count = sink.Texts.Count;
                    PollAll(server);
                    PollAll(client);
                    System.Threading.Thread.Sleep(50);
                    PollAll(server);
                    PollAll(client);
                    if (sink.Texts.Count == count)
                    {
                        if (settled == count)
                        {
                            break;
                        }
                        settled = count;
                    }
                }
                int records = sink.Texts.Count;
                TwEvent ev;
                long before = GC.GetAllocatedBytesForCurrentThread();
                for (int i = 0; i < 10000; i++)
                {
                    server.PollEvent(out ev);
                    client.PollEvent(out ev);
                }
                long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
                Equal(records, sink.Texts.Count, "nothing was logged meanwhile");
                Equal(0L, allocated, "managed bytes over 20,000 polls with a log on");
            }
        }
    }
}
