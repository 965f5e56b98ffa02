// tickwire relay session example for C# (console; the same components run in Unity).
//
// A RELAY_SERVER session and N RELAY_CLIENT sessions in one process over 127.0.0.1,
// through the link simulator, driven by a fixed 60 Hz loop standing in for Unity's
// Update. The server runs the authoritative game (Boxes.cs); each client predicts ahead
// of it and re-simulates when a prediction was wrong. The last client joins a second
// late and gets a mid-match snapshot. Once a second a net-graph line per client (and per
// player on the server) is printed. At the end every client's authoritative checksum
// must equal the server's at every tick both still remember. Every connection is
// encrypted, and the server admits only clients with a connect token: the example plays
// the game backend too, generating the backend's key and minting one token per client for
// the server's address.
//
//   mono RelaySessionExample.exe [--clients N] [--seconds S] [--latency-ms MS] [--loss P]
//
// Exit status 0 when every client agrees with the server, 1 otherwise.
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

    internal static class LinkSim
    {
        /// <summary>A simulated link: latencyMs each way, +0..20% jitter, loss (Bernoulli).</summary>
        public static TwLinkSimConfig Make(int latencyMs, double loss)
        {
            TwLinkSimConfig sim = TwLinkSimConfig.Default();
            sim.LatencyUs = (ulong)latencyMs * 1000;
            sim.JitterKind = TwJitterKind.Uniform;
            sim.JitterUs = latencyMs * 200.0;
            sim.LossKind = loss > 0 ? TwLossKind.Bernoulli : TwLossKind.None;
            sim.LossProbability = loss;
            return sim;
        }
    }

    internal static class Program
    {
        private const int FrameMs = 16;          // the engine loop: about 60 frames a second
        private const int MaxWallSeconds = 60;   // a run that never gets going ends here

        private static int Main(string[] args)
        {
            int clients = 3;
            double seconds = 3;
            int latencyMs = 30;
            double loss = 0.01;
            string usage = "usage: RelaySessionExample.exe [--clients 1.." + Boxes.MaxPlayers + "] [--seconds S] [--latency-ms MS] [--loss P]";
            try
            {
                for (int i = 0; i < args.Length; i += 2)
                {
                    string value = i + 1 < args.Length ? args[i + 1] : throw new FormatException(args[i] + " needs a value");
                    switch (args[i])
                    {
                        case "--clients": clients = int.Parse(value, CultureInfo.InvariantCulture); break;
                        case "--seconds": seconds = double.Parse(value, CultureInfo.InvariantCulture); break;
                        case "--latency-ms": latencyMs = int.Parse(value, CultureInfo.InvariantCulture); break;
                        case "--loss": loss = double.Parse(value, CultureInfo.InvariantCulture); break;
                        default: throw new FormatException("unknown option " + args[i]);
                    }
                }
                if (clients < 1 || clients > Boxes.MaxPlayers)
                {
                    throw new FormatException("--clients must be 1.." + Boxes.MaxPlayers);
                }
            }
            catch (Exception e) when (e is FormatException || e is OverflowException)
            {
                Console.Error.WriteLine(e.Message + "\n" + usage);
                return 2;
            }

            ServerNode server = new ServerNode { LatencyMs = latencyMs, Loss = loss };
            ClientNode[] players = new ClientNode[clients];
            byte[] backendKey = null;
            try
            {
                TwLibrary.EnsureCompatible(); // a stale native library fails here, clearly
                Log.Info("tickwire " + TwLibrary.NativeVersionString + " (ABI " + TwLibrary.NativeAbiVersion + ")");
                // The backend: one key, shared with the servers and nobody else.
                backendKey = TwSecurity.GenerateKey();
                server.ConnectKey = backendKey;
                server.Start();
                Log.Info("relay: a server on " + server.Address + " and " + clients + " clients, " + latencyMs +
                         " ms each way (+0-20% jitter), " + (loss * 100) + "% loss");
                Log.Info("relay: encrypted; relay clients admitted by connect token");
                uint protocolId = TwSessionConfig.Default().Host.ProtocolId; // the game's: tokens are for one game
                for (int i = 0; i < clients; i++)
                {
                    // The backend mints each player a token for this server, good for the match
                    // (reconnects need a valid one too).
                    byte[] token = TwConnectToken.Generate(backendKey, protocolId, (ulong)(i + 1), server.Address, 300);
                    players[i] = new ClientNode
                    {
                        Name = "client " + (i + 1), Index = (uint)i, ServerAddress = server.Address, ConnectToken = token,
                        LatencyMs = latencyMs, Loss = loss,
                    };
                }
                // All but the last start now; the last joins a second later, mid-match.
                ClientNode lateJoiner = clients > 1 ? players[clients - 1] : null;
                foreach (ClientNode p in players)
                {
                    if (p != lateJoiner)
                    {
                        p.Start();
                    }
                }

                int start = Environment.TickCount;
                int allSyncedAt = -1;
                int nextGraph = 1000;
                for (int f = 0; ; f++)
                {
                    int now = Environment.TickCount - start;
                    if (now >= MaxWallSeconds * 1000 || server.Failed)
                    {
                        break;
                    }
                    if (lateJoiner != null && !lateJoiner.Started && now >= 1000)
                    {
                        lateJoiner.Start();
                    }
                    server.Update();
                    bool synced = true;
                    foreach (ClientNode p in players)
                    {
                        if (p.Started)
                        {
                            p.Update();
                        }
                        synced = synced && p.Synchronized && !p.Failed;
                    }
                    if (synced && allSyncedAt < 0)
                    {
                        allSyncedAt = now;
                    }
                    if (allSyncedAt >= 0 && now - allSyncedAt >= seconds * 1000)
                    {
                        break;
                    }
                    if (now >= nextGraph)
                    {
                        PrintNetGraph(server, players, nextGraph / 1000);
                        nextGraph += 1000;
                    }
                    int wait = start + (f + 1) * FrameMs - Environment.TickCount;
                    if (wait > 0)
                    {
                        Thread.Sleep(wait);
                    }
                }

                bool ok = allSyncedAt >= 0 && !server.Failed;
                Log.Info("");
                Log.Info(string.Format("{0,-9} {1,6} {2,6} {3,13} {4,9} {5,6} {6,11} {7,11} {8,7}", "", "player", "joined",
                                       "authoritative", "compared", "differ", "re-predict", "resimulated", "desyncs"));
                foreach (ClientNode p in players)
                {
                    if (!p.Started)
                    {
                        ok = false;
                        continue;
                    }
                    int compared, differ;
                    Compare(server, p, out compared, out differ);
                    TwSessionStats st = p.Stats;
                    Log.Info(string.Format("{0,-9} {1,6} {2,6} {3,13} {4,9} {5,6} {6,11} {7,11} {8,7}", p.Name, p.Player, p.JoinTick,
                                           st.ConfirmedTick, compared, differ, st.Rollbacks, st.ResimulatedTicks, p.Desyncs));
                    ok = ok && p.Joined && !p.Failed && p.Desyncs == 0 && compared >= 60 && differ == 0;
                }
                TwSessionStats ss = server.Stats;
                Log.Info("server: tick " + ss.CurrentTick + ", " + ss.Players + " players, " + server.SnapshotsProvided +
                         " snapshots, checksums sent " + ss.ChecksCompared + ", empty steps " + ss.EmptySteps +
                         ", late inputs " + ss.LateInputs);
                Log.Info(ok ? "relay session example: every client agrees with the server" : "relay session example: FAILED");
                return ok ? 0 : 1;
            }
            catch (TickwireException e)
            {
                Log.Error("relay session example: " + e.Message);
                return 1;
            }
            finally
            {
                if (backendKey != null)
                {
                    Array.Clear(backendKey, 0, backendKey.Length);
                }
                foreach (ClientNode p in players)
                {
                    if (p != null)
                    {
                        p.OnDestroy();
                    }
                }
                server.OnDestroy();
            }
        }

        private static void PrintNetGraph(ServerNode server, ClientNode[] players, int second)
        {
            foreach (ClientNode p in players)
            {
                if (p.Started)
                {
                    Log.Info("[" + second + " s] " + p.NetGraph());
                }
            }
            string s = server.NetGraph();
            if (s.Length > 0)
            {
                Log.Info("[" + second + " s] " + s.Replace("\n", "\n[" + second + " s] "));
            }
        }

        /// <summary>
        /// Compares client p's checksums with the server's at every tick from its join to its
        /// authoritative tick that both still remember.
        /// </summary>
        private static void Compare(ServerNode server, ClientNode p, out int compared, out int differ)
        {
            compared = 0;
            differ = 0;
            if (!p.Joined)
            {
                return;
            }
            uint authoritative = p.Stats.ConfirmedTick; // the state at its start is the server's
            uint from = Math.Max(p.JoinTick, authoritative > ClientNode.History ? authoritative - ClientNode.History : 0);
            for (uint t = from; t < authoritative; t++)
            {
                ulong mine, servers;
                if (p.TryGetChecksum(t, out mine) && server.TryGetChecksum(t, out servers))
                {
                    compared++;
                    differ += mine == servers ? 0 : 1;
                }
            }
        }
    }
}
