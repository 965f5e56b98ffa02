using System;
using System.Runtime.InteropServices;

namespace Tickwire
{
    /// <summary>
    /// Owns one native tw_session. Releasing it calls tw_session_destroy exactly once,
    /// from Dispose or, if the owner forgot, from the finalizer thread. Destroy joins the
    /// session's network thread (P2P, SPECTATOR and the relay modes): at most 1 second.
    /// Passed to the raw layer, the handle is reference-counted for the duration of each
    /// call, so a Dispose racing a call cannot free the session under it.
    /// </summary>
    public sealed class SessionHandle : SafeHandle
    {
        // For marshallers that construct handles themselves; tickwire never does.
        private SessionHandle() : base(IntPtr.Zero, true)
        {
        }

        internal SessionHandle(IntPtr raw) : base(IntPtr.Zero, true)
        {
            SetHandle(raw);
        }

        /// <summary>True for the null handle (no native object to release).</summary>
        public override bool IsInvalid
        {
            get { return handle == IntPtr.Zero; }
        }

        /// <summary>Calls tw_session_destroy; SafeHandle runs it once, after Dispose or finalization, when no call is using the handle.</summary>
        protected override bool ReleaseHandle()
        {
            Native.TwNative.tw_session_destroy(handle);
            return true;
        }
    }
}
