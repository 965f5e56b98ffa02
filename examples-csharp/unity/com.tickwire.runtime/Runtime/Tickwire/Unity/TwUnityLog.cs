// Unity only (compiled out elsewhere): forwards tickwire's log records to the Unity
// console, ERROR to Debug.LogError, WARN to Debug.LogWarning, the rest to Debug.Log:
//
//     session.SetLog(TwUnityLog.Handler, TwLogLevel.Info);
//
// Records arrive from inside PollEvent / TryPollEvent, so on the thread that polls
// (Unity's main thread in a MonoBehaviour's Update): Debug.Log is safe there.
#if UNITY_5_3_OR_NEWER
using UnityEngine;

namespace Tickwire
{
    /// <summary>A TwLogHandler that writes to the Unity console, each record prefixed "[tickwire] ".</summary>
    public static class TwUnityLog
    {
        /// <summary>Forward as a delegate made once (pass it to SetLog).</summary>
        public static readonly TwLogHandler Handler = Forward;

        /// <summary>Writes one record to the console at the matching severity.</summary>
        public static void Forward(TwLogLevel level, string message)
        {
            switch (level)
            {
                case TwLogLevel.Error:
                    Debug.LogError("[tickwire] " + message);
                    break;
                case TwLogLevel.Warn:
                    Debug.LogWarning("[tickwire] " + message);
                    break;
                default:
                    Debug.Log("[tickwire] " + message);
                    break;
            }
        }
    }
}
#endif
