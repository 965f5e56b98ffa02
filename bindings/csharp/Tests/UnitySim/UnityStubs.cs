// Stand-ins for the few Unity APIs that Tickwire/Unity/ (the lifecycle hooks, the log
// forwarder), TwLog.cs's AOT attribute and the
// package sample use, with the same namespaces, names and signatures as Unity's, plus
// Simulate* helpers that do what the editor does. Test-only: they let mcs compile the
// Unity code path and let UnitySim.cs drive it. Not shipped.
using System;

namespace UnityEngine
{
    public enum RuntimeInitializeLoadType
    {
        AfterSceneLoad = 0,
        BeforeSceneLoad = 1,
        AfterAssembliesLoaded = 2,
        BeforeSplashScreen = 3,
        SubsystemRegistration = 4,
    }

    [AttributeUsage(AttributeTargets.Method, AllowMultiple = false)]
    public sealed class RuntimeInitializeOnLoadMethodAttribute : Attribute
    {
        public RuntimeInitializeOnLoadMethodAttribute()
        {
            LoadType = RuntimeInitializeLoadType.AfterSceneLoad;
        }

        public RuntimeInitializeOnLoadMethodAttribute(RuntimeInitializeLoadType loadType)
        {
            LoadType = loadType;
        }

        public RuntimeInitializeLoadType LoadType { get; private set; }
    }

    public class Object
    {
    }

    public class Component : Object
    {
    }

    public class Behaviour : Component
    {
        public bool enabled { get; set; } = true; // as in Unity: a new component is enabled
    }

    public class MonoBehaviour : Behaviour
    {
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class SerializeField : Attribute
    {
    }

    public static class Debug
    {
        /// <summary>Test-only: the last message and which call wrote it ("Log", "LogWarning", "LogError").</summary>
        public static string SimulatedLastMessage;
        public static string SimulatedLastCall;

        public static void Log(object message)
        {
            Record("Log", message);
            Console.WriteLine(message);
        }

        public static void LogWarning(object message)
        {
            Record("LogWarning", message);
            Console.WriteLine(message);
        }

        public static void LogError(object message)
        {
            Record("LogError", message);
            Console.Error.WriteLine(message);
        }

        private static void Record(string call, object message)
        {
            SimulatedLastCall = call;
            SimulatedLastMessage = message == null ? null : message.ToString();
        }
    }

    public static class Input
    {
        /// <summary>Test-only: what GetAxisRaw("Horizontal") and ("Vertical") return.</summary>
        public static float SimulatedHorizontal;
        public static float SimulatedVertical;

        public static float GetAxisRaw(string axisName)
        {
            return axisName == "Horizontal" ? SimulatedHorizontal : axisName == "Vertical" ? SimulatedVertical : 0f;
        }
    }

    public static class Application
    {
        public static event Action quitting;

        public static int QuittingHandlerCount
        {
            get { return quitting == null ? 0 : quitting.GetInvocationList().Length; }
        }

        public static void SimulateQuitting()
        {
            Action q = quitting;
            if (q != null)
            {
                q();
            }
        }
    }
}

namespace AOT
{
    /// <summary>UnityEngine's attribute for static methods native code calls (IL2CPP makes their wrappers ahead of time).</summary>
    [AttributeUsage(AttributeTargets.Method)]
    public sealed class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type type)
        {
        }
    }
}

namespace UnityEditor
{
    [AttributeUsage(AttributeTargets.Method)]
    public sealed class InitializeOnLoadMethodAttribute : Attribute
    {
    }

    public static class AssemblyReloadEvents
    {
        public delegate void AssemblyReloadCallback();

        public static event AssemblyReloadCallback beforeAssemblyReload;

        public static int BeforeReloadHandlerCount
        {
            get { return beforeAssemblyReload == null ? 0 : beforeAssemblyReload.GetInvocationList().Length; }
        }

        public static void SimulateBeforeAssemblyReload()
        {
            AssemblyReloadCallback cb = beforeAssemblyReload;
            if (cb != null)
            {
                cb();
            }
        }
    }
}
