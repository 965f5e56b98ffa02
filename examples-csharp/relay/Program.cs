// tickwire relay example for C# (console; the same code runs in Unity).
//
// A relay server and N clients in one process over 127.0.0.1, driven by a fixed
// 60 Hz loop standing in for Unity's Update. Each client sends its input every frame;
// the server relays it to everyone else. At the end every client must have heard every
// other client. Every connection is encrypted, and the server admits only clients with a
// connect token: the example plays the game backend too, generating the backend's key and
// minting one token per client for the server's address.
//
//   mono RelayExample.exe [--clients N] [--seconds S] [--latency-ms MS]
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

    internal static class Wire
    {
        public static void WriteU32(byte[] b, int at, uint v)
        {
            b[at] = (byte)v;
            b[at + 1] = (byte)(v >> 8);
            b[at + 2] = (byte)(v >> 16);
            b[at + 3] = (byte)(v >> 24);
        }

        public static uint ReadU32(byte[] b, int at)
        {
            return (uint)(b[at] | b[at + 1] << 8 | b[at + 2] << 16 | b[at + 3] << 24);
        }
    }

    internal static class Program
    {
        private static int Main(string[] args)
        {
            int clients = 3;
            double seconds = 2;
            int latencyMs = 0;
            const string Usage = "usage: RelayExample.exe [--clients N] [--seconds S] [--latency-ms MS]";
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
                        default: throw new FormatException("unknown option " + args[i]);
                    }
                }
            }
            catch (Exception e) when (e is FormatException || e is OverflowException)
            {
                Console.Error.WriteLine(e.Message + "\n" + Usage);
                return 2;
            }

            RelayServer server = new RelayServer();
            RelayClient[] players = new RelayClient[clients];
            byte[] backendKey = null;
            try
            {
                TwLibrary.EnsureCompatible(); // a stale native library fails here, clearly
                Log.Info("tickwire " + TwLibrary.NativeVersionString + " (ABI " + TwLibrary.NativeAbiVersion + ")");
                // The backend: one key, shared with the servers and nobody else.
                backendKey = TwSecurity.GenerateKey();
                server.ConnectKey = backendKey;
                server.Start();
                Log.Info("relay: encrypted; clients admitted by connect token");
                uint protocolId = TwHostConfig.Default().ProtocolId; // the game's: tokens are for one game
                for (int i = 0; i < clients; i++)
                {
                    // The backend mints each player a token for this server, valid for 5 minutes.
                    byte[] token = TwConnectToken.Generate(backendKey, protocolId, (ulong)(i + 1), server.Address, 300);
                    players[i] = new RelayClient
                    {
                        Name = "player" + (i + 1), ServerAddress = server.Address, ConnectToken = token, LatencyMs = latencyMs,
                    };
                    players[i].Start();
                }

                // The engine loop: 60 frames a second.
                const int FrameMs = 16;
                int frames = (int)(seconds * 1000 / FrameMs);
                int start = Environment.TickCount;
                for (int f = 0; f < frames; f++)
                {
                    for (int i = 0; i < clients; i++)
                    {
                        players[i].Update();
                    }
                    server.Update();
                    int next = start + (f + 1) * FrameMs;
                    int wait = next - Environment.TickCount;
                    if (wait > 0)
                    {
                        Thread.Sleep(wait);
                    }
                }

                bool ok = true;
                foreach (RelayClient p in players)
                {
                    p.Report();
                    if (!p.Connected || p.PlayersHeard != clients - 1)
                    {
                        Log.Error(p.Name + ": heard " + p.PlayersHeard + " of " + (clients - 1) + " other players");
                        ok = false;
                    }
                }
                Log.Info("relay: " + server.InputsRelayed + " inputs relayed");
                Log.Info(ok ? "relay example: ok" : "relay example: FAILED");
                return ok ? 0 : 1;
            }
            catch (TickwireException e)
            {
                Log.Error("relay example: " + e.Message);
                return 1;
            }
            finally
            {
                if (backendKey != null)
                {
                    Array.Clear(backendKey, 0, backendKey.Length);
                }
                foreach (RelayClient p in players)
                {
                    if (p != null)
                    {
                        p.OnDestroy();
                    }
                }
                server.OnDestroy();
            }
        }
    }
}
