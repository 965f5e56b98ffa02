// tickwire P2P example for C# (console; the same components run in Unity).
//
// Two peers of a rollback match in one process, over 127.0.0.1 through the link
// simulator (latency, jitter, loss), driven by a fixed 60 Hz loop standing in for
// Unity's Update. Each peer runs the same tiny deterministic game (Arena.cs); at the
// end both must have the same checksum at every tick they have both confirmed. Peer A
// records the match, and a replay of the recording must end in the state peer A had.
// The connection is encrypted, and only peers holding the match's secret (generated once
// here, by the matchmaker in a game) can complete a handshake.
//
//   mono P2PExample.exe [--seconds S] [--latency-ms MS] [--loss P]
//
// Exit status 0 on success, 1 on failure.
using System;
using System.Globalization;
using System.Threading;
using Tickwire;

namespace TickwireExamples
{
    internal static class Log
    {
        public static void Info(string s)
        {
            Console.WriteLine(s); // Debug.Log in Unity
        }

        public static void Error(string s)
        {
            Console.Error.WriteLine(s); // Debug.LogError in Unity
        }
    }

    internal static class Program
    {
        private static int Main(string[] args)
        {
            double seconds = 3;
            int latencyMs = 30;
            double loss = 0.02;
            const string Usage = "usage: P2PExample.exe [--seconds S] [--latency-ms MS] [--loss P]";
            try
            {
                for (int i = 0; i < args.Length; i += 2)
                {
                    string value = i + 1 < args.Length ? args[i + 1] : throw new FormatException(args[i] + " needs a value");
                    switch (args[i])
                    {
                        case "--seconds": seconds = double.Parse(value, CultureInfo.InvariantCulture); break;
                        case "--latency-ms": latencyMs = int.Parse(value, CultureInfo.InvariantCulture); break;
                        case "--loss": loss = double.Parse(value, CultureInfo.InvariantCulture); break;
                        default: throw new FormatException("unknown option " + args[i]);
                    }
                }
            }
            catch (Exception e) when (e is FormatException || e is OverflowException)
            {
                Console.Error.WriteLine(e.Message + "\n" + Usage);
                return 2;
            }

            P2PPeer a = new P2PPeer { Name = "peer A", LocalPlayer = 0, LatencyMs = latencyMs, Loss = loss, RecordReplay = true };
            P2PPeer b = new P2PPeer { Name = "peer B", LocalPlayer = 1, LatencyMs = latencyMs, Loss = loss };
            ReplayViewer viewer = new ReplayViewer();
            byte[] matchSecret = null;
            try
            {
                TwLibrary.EnsureCompatible(); // a stale native library fails here, clearly
                Log.Info("tickwire " + TwLibrary.NativeVersionString + " (ABI " + TwLibrary.NativeAbiVersion + "), " +
                         latencyMs + " ms latency, " + (loss * 100) + "% loss each way");
                // The matchmaker's job: one secret per match, given to both players.
                matchSecret = TwSecurity.GenerateKey();
                a.MatchSecret = matchSecret;
                b.MatchSecret = matchSecret;
                Log.Info("p2p: encrypted; both peers share a match secret");
                a.Start();
                b.Start();
                // In a game the addresses come from a lobby or matchmaking.
                a.Connect(b.LocalAddress);
                b.Connect(a.LocalAddress);

                // The engine loop: 60 frames a second.
                const int FrameMs = 16;
                int frames = (int)(seconds * 1000 / FrameMs);
                int start = Environment.TickCount;
                for (int f = 0; f < frames && !a.Failed && !b.Failed; f++)
                {
                    a.Update();
                    b.Update();
                    int wait = start + (f + 1) * FrameMs - Environment.TickCount;
                    if (wait > 0)
                    {
                        Thread.Sleep(wait);
                    }
                }

                TwSessionStats sa = a.Stats;
                TwSessionStats sb = b.Stats;
                uint confirmed = Math.Min(sa.ConfirmedTick, sb.ConfirmedTick);
                int compared = 0;
                int differ = 0;
                for (uint t = confirmed > P2PPeer.History ? confirmed - P2PPeer.History : 0; t < confirmed; t++)
                {
                    ulong ca, cb;
                    if (a.TryGetChecksum(t, out ca) && b.TryGetChecksum(t, out cb))
                    {
                        compared++;
                        differ += ca == cb ? 0 : 1;
                    }
                }
                Log.Info("ticks: A " + sa.CurrentTick + ", B " + sb.CurrentTick + "; confirmed by both: " + confirmed +
                         "; rollbacks: A " + sa.Rollbacks + ", B " + sb.Rollbacks + " (longest " +
                         Math.Max(sa.MaxRollback, sb.MaxRollback) + " ticks); RTT " + a.RttMs.ToString("F1") + " ms");
                Log.Info("checksums compared: " + compared + ", different: " + differ + "; peer checks: A " +
                         sa.ChecksCompared + ", B " + sb.ChecksCompared + "; arena at A: " + a.State);

                // Peer A's recording, played back: it must reach the state A had at its end.
                byte[] replay = a.CopyReplay();
                viewer.Start(replay);
                int played = viewer.PlayToEnd();
                ulong expected;
                bool known = a.TryGetChecksum(viewer.Tick, out expected);
                if (!known && viewer.Tick == sa.CurrentTick)
                {
                    expected = a.State.Checksum();
                    known = true;
                }
                bool replayOk = viewer.Restored && played > 0 && known && viewer.State.Checksum() == expected;
                Log.Info("replay: " + replay.Length + " bytes, " + played + " ticks played to tick " + viewer.Tick + ", " +
                         (replayOk ? "the same state as peer A" : "a DIFFERENT state from peer A's"));

                bool ok = !a.Failed && !b.Failed && a.Synchronized && b.Synchronized && compared > 30 && differ == 0 && replayOk;
                Log.Info(ok ? "p2p example: ok" : "p2p example: FAILED");
                return ok ? 0 : 1;
            }
            catch (TickwireException e)
            {
                Log.Error("p2p example: " + e.Message);
                return 1;
            }
            finally
            {
                if (matchSecret != null)
                {
                    Array.Clear(matchSecret, 0, matchSecret.Length);
                }
                viewer.OnDestroy();
                a.OnDestroy();
                b.OnDestroy();
            }
        }
    }
}
