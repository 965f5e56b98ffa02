// Drives the Unity code path of the bindings the way the editor would, against the
// stubs in UnityStubs.cs: runs the [InitializeOnLoadMethod] and
// [RuntimeInitializeOnLoadMethod] hooks, then simulates a domain reload, leaving play
// mode, and a second play session with domain reload off. Checks that every native
// host and session is released each time and that hooks are registered once. Then runs
// the package's relay sample (a TickwireRelayServer and two TickwireRelayClient
// components, their Start / Update / OnDestroy called as the player loop would) for a
// short match over 127.0.0.1, and its rendezvous sample (a TickwireRendezvousLocalService
// and two TickwireRendezvousPlayer components, which meet through it and go direct).
//
// Prints "N passed, N failed"; exits 1 on failure.
using System;
using System.Reflection;
using Tickwire;
using Tickwire.Samples.Relay;
using Tickwire.Samples.Rendezvous;
using UnityEditor;
using UnityEngine;

internal static class UnitySim
{
    private static int s_passed;
    private static int s_failed;

    private static int Main()
    {
        Assembly tw = typeof(TwHost).Assembly;
        Run("the hooks exist and run", () =>
        {
            Check(InvokeHooks(tw, typeof(InitializeOnLoadMethodAttribute)) == 1, "one [InitializeOnLoadMethod]");
            Check(InvokeHooks(tw, typeof(RuntimeInitializeOnLoadMethodAttribute)) == 1, "one [RuntimeInitializeOnLoadMethod]");
            Check(AssemblyReloadEvents.BeforeReloadHandlerCount == 1, "beforeAssemblyReload registered once");
            Check(Application.QuittingHandlerCount == 1, "quitting registered once");
        });
        Run("a domain reload releases every host and session", () =>
        {
            TwHost a = new TwHost("127.0.0.1:0");
            TwHost b = new TwHost("127.0.0.1:0");
            TwSession p2p = new TwSession(P2PConfig());
            TwSession synctest = new TwSession(TwSessionConfig.Default(TwSessionMode.SyncTest));
            TwRendezvous rendezvous = new TwRendezvous("127.0.0.1:0", TwSecurity.GenerateKey(), 1);
            AssemblyReloadEvents.SimulateBeforeAssemblyReload();
            Check(a.IsDisposed && b.IsDisposed, "hosts disposed before the reload");
            Check(p2p.IsDisposed && synctest.IsDisposed, "sessions disposed before the reload");
            Check(rendezvous.IsDisposed, "the rendezvous stopped before the reload");
            Check(TwHost.LiveCount == 0 && TwSession.LiveCount == 0 && TwRendezvous.LiveCount == 0, "none live");
        });
        Run("leaving play mode releases every host and session", () =>
        {
            TwHost a = new TwHost("127.0.0.1:0");
            TwSession s = new TwSession(P2PConfig());
            Application.SimulateQuitting();
            Check(a.IsDisposed, "host disposed on quitting");
            Check(s.IsDisposed, "session disposed on quitting");
        });
        Run("domain reload off: the next play session starts clean, hooks not doubled", () =>
        {
            TwHost leftover = new TwHost("127.0.0.1:0"); // a script that forgot to dispose
            TwSession leftoverSession = new TwSession(P2PConfig());
            InvokeHooks(tw, typeof(RuntimeInitializeOnLoadMethodAttribute));
            InvokeHooks(tw, typeof(InitializeOnLoadMethodAttribute));
            Check(leftover.IsDisposed, "the leftover host is released at SubsystemRegistration");
            Check(leftoverSession.IsDisposed, "the leftover session is released at SubsystemRegistration");
            Check(Application.QuittingHandlerCount == 1, "quitting still registered once");
            Check(AssemblyReloadEvents.BeforeReloadHandlerCount == 1, "beforeAssemblyReload still registered once");
        });
        Run("the relay sample: a server and two client components play a match, no desync", RelaySample);
        Run("the rendezvous sample: two player components meet through the local service, go Direct, no desync", RendezvousSample);
        Run("TwUnityLog forwards a session's records to the console by level", UnityLog);
        Console.WriteLine(s_passed + " passed, " + s_failed + " failed");
        return s_failed == 0 ? 0 : 1;
    }

    private static void UnityLog()
    {
        TwUnityLog.Forward(TwLogLevel.Error, "e");
        Check(Debug.SimulatedLastCall == "LogError" && Debug.SimulatedLastMessage == "[tickwire] e", "ERROR -> LogError");
        TwUnityLog.Forward(TwLogLevel.Warn, "w");
        Check(Debug.SimulatedLastCall == "LogWarning", "WARN -> LogWarning");
        TwUnityLog.Forward(TwLogLevel.Debug, "d");
        Check(Debug.SimulatedLastCall == "Log", "DEBUG -> Log");
        // Through the library: a P2P session's note of SetLog arrives at its first poll.
        Debug.SimulatedLastMessage = null;
        using (TwSession s = new TwSession(P2PConfig()))
        {
            s.SetLog(TwUnityLog.Handler, TwLogLevel.Info);
            TwSessionEvent ev;
            while (s.TryPollEvent(out ev))
            {
            }
            Check(Debug.SimulatedLastCall == "Log" && Debug.SimulatedLastMessage != null &&
                  Debug.SimulatedLastMessage.StartsWith("[tickwire] log on: P2p session bound to", StringComparison.Ordinal),
                  "the note reached the console: " + Debug.SimulatedLastMessage);
        }
    }

    private static void RelaySample()
    {
        TickwireRelayServer server = new TickwireRelayServer();
        SetField(server, "bindAddress", "127.0.0.1:0"); // as the Inspector would
        Call(server, "Start");
        Check(server.enabled && server.Address != null, "the server started");
        TickwireRelayClient[] clients = { new TickwireRelayClient(), new TickwireRelayClient() };
        foreach (TickwireRelayClient c in clients)
        {
            SetField(c, "serverAddress", server.Address);
            Call(c, "Start");
            Check(c.enabled, "a client started");
        }
        try
        {
            int start = Environment.TickCount;
            int runningSince = -1;
            for (int frame = 0; Environment.TickCount - start < 15000; frame++)
            {
                Call(server, "Update");
                for (int i = 0; i < clients.Length; i++)
                {
                    // Each player steers its own way, changing every 20 frames.
                    Input.SimulatedHorizontal = (frame / 20 + i) % 3 - 1;
                    Input.SimulatedVertical = (frame / 20 + 2 * i) % 3 - 1;
                    Call(clients[i], "Update");
                }
                if (runningSince < 0 && clients[0].Running && clients[1].Running)
                {
                    runningSince = Environment.TickCount;
                }
                if (runningSince >= 0 && Environment.TickCount - runningSince > 1500)
                {
                    break;
                }
                System.Threading.Thread.Sleep(16); // about 60 frames a second
            }
            Check(runningSince >= 0, "both clients joined and caught up");
            Check(server.enabled && clients[0].enabled && clients[1].enabled, "no component gave up");
            Check(clients[0].Player != clients[1].Player && clients[0].Player < 4 && clients[1].Player < 4,
                  "two slots: " + clients[0].Player + ", " + clients[1].Player);
            foreach (TickwireRelayClient c in clients)
            {
                TwSessionStats st;
                Check(c.Session.GetStats(out st) == TwResult.Ok, "client stats");
                // The server sends its checksum every 10 ticks; each one the client compared
                // equal is a check that the sample's game is deterministic across sessions.
                Check(st.ChecksCompared > 5, "server checksums compared: " + st.ChecksCompared);
                Check(c.Desyncs == 0 && st.Desyncs == 0, "no desync");
                Check(st.LocalPlayer == c.Player, "the slot of the Joined event");
                Check(c.NetGraph.StartsWith("rtt ", StringComparison.Ordinal), "a net graph: " + c.NetGraph);
                TwRelayPlayerStats ps;
                Check(server.Session.TryGetPlayerStats(c.Player, out ps) && ps.Ticks > 60, "the server has figures for the player");
                Console.WriteLine("  player " + c.Player + ": " + c.NetGraph + "; score " + c.State.ScoreOf((int)c.Player));
            }
            TwSessionStats ss;
            server.Session.GetStats(out ss);
            Check(ss.Players == 2, "the server has 2 players: " + ss.Players);
        }
        finally
        {
            foreach (TickwireRelayClient c in clients)
            {
                Call(c, "OnDestroy");
            }
            Call(server, "OnDestroy");
        }
        Check(TwSession.LiveCount == 0, "every session released");
    }

    private static void RendezvousSample()
    {
        TickwireRendezvousLocalService service = new TickwireRendezvousLocalService();
        SetField(service, "bindAddress", "127.0.0.1:0"); // as the Inspector would
        Call(service, "Awake");
        Check(service.enabled && TickwireRendezvousLocalService.Current == service, "the local service started");
        TickwireRendezvousPlayer[] players = { new TickwireRendezvousPlayer(), new TickwireRendezvousPlayer() };
        for (uint i = 0; i < 2; i++)
        {
            SetField(players[i], "localPlayer", i);
            SetField(players[i], "bindAddress", "127.0.0.1:0");
            Call(players[i], "Start"); // no ticket set: the local service issues one
            Check(players[i].enabled, "player " + i + " started");
        }
        try
        {
            int start = Environment.TickCount;
            int directSince = -1;
            for (int frame = 0; Environment.TickCount - start < 15000; frame++)
            {
                Input.SimulatedHorizontal = (frame / 20) % 3 - 1;
                Input.SimulatedVertical = (frame / 30) % 3 - 1;
                foreach (TickwireRendezvousPlayer p in players)
                {
                    Call(p, "Update");
                }
                if (directSince < 0 && players[0].Running && players[1].Running &&
                    players[0].PathOf(1) == TwPath.Direct && players[1].PathOf(0) == TwPath.Direct)
                {
                    directSince = Environment.TickCount;
                }
                if (directSince >= 0 && Environment.TickCount - directSince > 1500)
                {
                    break;
                }
                System.Threading.Thread.Sleep(16); // about 60 frames a second
            }
            Check(directSince >= 0, "both players run on a direct path: " + players[0].PathText + " / " + players[1].PathText);
            Check(players[0].enabled && players[1].enabled, "no component gave up");
            for (uint i = 0; i < 2; i++)
            {
                TickwireRendezvousPlayer p = players[i];
                uint other = 1 - i;
                Check(p.PathText.StartsWith("player " + other + ": Direct via 127.0.0.1:", StringComparison.Ordinal), "the path text: " + p.PathText);
                TwNetworkStats ns;
                Check(p.Session.GetNetworkStats(other, out ns) == TwResult.Ok && ns.Path == TwPath.Direct &&
                      ns.GetPathAddress() == p.AddressOf(other), "the figures say the path of the events");
                TwSessionStats st;
                Check(p.Session.GetStats(out st) == TwResult.Ok && st.ConfirmedTick > 60, "ticks confirmed: " + st.ConfirmedTick);
                Check(st.ChecksCompared > 0 && st.Desyncs == 0, "checksums compared with the peer, no desync");
                Console.WriteLine("  player " + i + ": " + p.PathText + "; " + st.ConfirmedTick + " ticks confirmed, " +
                                  st.ChecksCompared + " checksums compared");
            }
            int x0, y0, x1, y1;
            players[0].PositionOf(0, out x0, out y0);
            players[1].PositionOf(0, out x1, out y1);
            Check(x0 != 0 || y0 != 0, "player 0's dot moved");
            TwRendezvousStats rs;
            Check(service.Rendezvous.GetStats(out rs) == TwResult.Ok && rs.MatchesMade == 1 && rs.Refused == 0,
                  "the service made one match and refused nothing");
        }
        finally
        {
            foreach (TickwireRendezvousPlayer p in players)
            {
                Call(p, "OnDestroy");
            }
            Call(service, "OnDestroy");
        }
        Check(TickwireRendezvousLocalService.Current == null, "the service is gone");
        Check(TwSession.LiveCount == 0 && TwRendezvous.LiveCount == 0, "every session and rendezvous released");
    }

    private static void Call(object component, string method)
    {
        MethodInfo m = component.GetType().GetMethod(method, BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public);
        Check(m != null, component.GetType().Name + "." + method + " exists");
        m.Invoke(component, null);
    }

    private static void SetField(object component, string field, object value)
    {
        FieldInfo f = component.GetType().GetField(field, BindingFlags.Instance | BindingFlags.NonPublic);
        Check(f != null && f.GetCustomAttributes(typeof(SerializeField), false).Length == 1,
              component.GetType().Name + "." + field + " is a serialized field");
        f.SetValue(component, value);
    }

    private static TwSessionConfig P2PConfig()
    {
        TwSessionConfig c = TwSessionConfig.Default(TwSessionMode.P2P);
        c.SetBindAddress("127.0.0.1:0");
        return c;
    }

    private static int InvokeHooks(Assembly asm, Type attribute)
    {
        int n = 0;
        foreach (Type t in asm.GetTypes())
        {
            foreach (MethodInfo m in t.GetMethods(BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic))
            {
                if (m.GetCustomAttributes(attribute, false).Length > 0)
                {
                    m.Invoke(null, null);
                    n++;
                }
            }
        }
        return n;
    }

    private static void Run(string name, Action test)
    {
        try
        {
            test();
            s_passed++;
            Console.WriteLine("ok: " + name);
        }
        catch (Exception e)
        {
            s_failed++;
            Console.WriteLine("FAILED: " + name + ": " + e);
        }
    }

    private static void Check(bool condition, string what)
    {
        if (!condition)
        {
            throw new Exception(what);
        }
    }
}
