// Drives the Unity code path of the bindings the way the editor would, against the
// stubs in UnityStubs.cs: runs the [InitializeOnLoadMethod] and
// [RuntimeInitializeOnLoadMethod] hooks, then simulates a domain reload, leaving play
// mode, and a second play session with domain reload off. Checks that every native
// host and session is released each time and that hooks are registered once.
//
// Prints "N passed, N failed"; exits 1 on failure.
using System;
using System.Reflection;
using Tickwire;
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
            AssemblyReloadEvents.SimulateBeforeAssemblyReload();
            Check(a.IsDisposed && b.IsDisposed, "hosts disposed before the reload");
            Check(p2p.IsDisposed && synctest.IsDisposed, "sessions disposed before the reload");
            Check(TwHost.LiveCount == 0 && TwSession.LiveCount == 0, "none live");
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
        Console.WriteLine(s_passed + " passed, " + s_failed + " failed");
        return s_failed == 0 ? 0 : 1;
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
