using System;
using System.Runtime.InteropServices;

namespace Tickwire
{
    /// <summary>
    /// Owns one native tw_host. Releasing it calls tw_host_destroy exactly once, from
    /// Dispose or, if the owner forgot, from the finalizer thread. Destroy joins the
    /// host's network thread: a few milliseconds normally, never more than 1 second.
    /// Passed to the raw layer, the handle is reference-counted for the duration of
    /// each call, so a Dispose racing a call cannot free the host under it.
    /// </summary>
    public sealed class HostHandle : SafeHandle
    {
        // For marshallers that construct handles themselves; tickwire never does.
        private HostHandle() : base(IntPtr.Zero, true)
        {
        }

        internal HostHandle(IntPtr raw) : base(IntPtr.Zero, true)
        {
            SetHandle(raw);
        }

        /// <summary>True for the null handle (no native object to release).</summary>
        public override bool IsInvalid
        {
            get { return handle == IntPtr.Zero; }
        }

        /// <summary>Calls tw_host_destroy; SafeHandle runs it once, after Dispose or finalization, when no call is using the handle.</summary>
        protected override bool ReleaseHandle()
        {
            Native.TwNative.tw_host_destroy(handle);
            return true;
        }
    }
}
