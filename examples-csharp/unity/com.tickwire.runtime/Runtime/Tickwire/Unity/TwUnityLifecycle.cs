// Unity only (compiled out elsewhere): releases native hosts, sessions and rendezvous
// services at the moments Unity throws the managed world away, so that no tw_host,
// tw_session or tw_rendezvous outlives the code that owned it.
//
// - Leaving play mode or quitting (Application.quitting): DisposeAllNative().
// - Before a domain reload in the editor (script recompile, entering play mode):
//   DisposeAllNative().
// - With "Enter Play Mode Options" and domain reload off, static state survives
//   between play sessions: SubsystemRegistration disposes leftovers and re-registers
//   the quit hook exactly once.
//
// Only static methods and method groups: nothing here is a lambda or an instance
// method, and the native library never calls back into managed code.
#if UNITY_5_3_OR_NEWER
using UnityEngine;

namespace Tickwire
{
    internal static class TwUnityLifecycle
    {
        /// <summary>Every live session first (they own sockets too), then every live host and rendezvous.</summary>
        private static void DisposeAllNative()
        {
            TwSession.DisposeAll();
            TwHost.DisposeAll();
            TwRendezvous.DisposeAll();
            TwLog.Clear();
        }

        [RuntimeInitializeOnLoadMethod(RuntimeInitializeLoadType.SubsystemRegistration)]
        private static void OnSubsystemRegistration()
        {
            DisposeAllNative();
            Application.quitting -= OnQuitting;
            Application.quitting += OnQuitting;
        }

        private static void OnQuitting()
        {
            DisposeAllNative();
        }

#if UNITY_EDITOR
        [UnityEditor.InitializeOnLoadMethod]
        private static void OnEditorLoad()
        {
            UnityEditor.AssemblyReloadEvents.beforeAssemblyReload -= OnBeforeAssemblyReload;
            UnityEditor.AssemblyReloadEvents.beforeAssemblyReload += OnBeforeAssemblyReload;
        }

        private static void OnBeforeAssemblyReload()
        {
            DisposeAllNative();
        }
#endif
    }
}
#endif
