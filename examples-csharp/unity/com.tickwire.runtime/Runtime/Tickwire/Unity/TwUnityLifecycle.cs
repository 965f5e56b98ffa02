// Unity only (compiled out elsewhere): releases native hosts at the moments Unity
// throws the managed world away, so that no tw_host outlives the code that owned it.
//
// - Leaving play mode or quitting (Application.quitting): TwHost.DisposeAll().
// - Before a domain reload in the editor (script recompile, entering play mode):
//   TwHost.DisposeAll().
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
        [RuntimeInitializeOnLoadMethod(RuntimeInitializeLoadType.SubsystemRegistration)]
        private static void OnSubsystemRegistration()
        {
            TwHost.DisposeAll();
            Application.quitting -= OnQuitting;
            Application.quitting += OnQuitting;
        }

        private static void OnQuitting()
        {
            TwHost.DisposeAll();
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
            TwHost.DisposeAll();
        }
#endif
    }
}
#endif
