using System;
using System.Runtime.InteropServices;

namespace Tickwire
{
    /// <summary>
    /// Owns one native tw_rendezvous. Releasing it calls tw_rendezvous_destroy exactly once,
    /// from Dispose or, if the owner forgot, from the finalizer thread; destroy stops the
    /// service's thread and closes its socket. Passed to the raw layer, the handle is
    /// reference-counted for the duration of each call, so a Dispose racing a call cannot
    /// free the service under it.
    /// </summary>
    public sealed class RendezvousHandle : SafeHandle
    {
        // For marshallers that construct handles themselves; tickwire never does.
        private RendezvousHandle() : base(IntPtr.Zero, true)
        {
        }

        internal RendezvousHandle(IntPtr raw) : base(IntPtr.Zero, true)
        {
            SetHandle(raw);
        }

        /// <summary>True for the null handle (no native object to release).</summary>
        public override bool IsInvalid
        {
            get { return handle == IntPtr.Zero; }
        }

        /// <summary>Calls tw_rendezvous_destroy; SafeHandle runs it once, after Dispose or finalization, when no call is using the handle.</summary>
        protected override bool ReleaseHandle()
        {
            Native.TwNative.tw_rendezvous_destroy(handle);
            return true;
        }
    }
}
