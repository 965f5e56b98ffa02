// The native library's test hooks: a forced panic inside a host call and inside a
// session call, a killed network thread, and a session call held open. They are not
// part of include/tickwire.h (so not of TwNative): only a library built with the cargo
// feature `test-hooks` exports them, as tests/run.sh builds it. A test that calls one
// against a library built without the feature fails with EntryPointNotFoundException;
// the others run.
// Part of the test program.

using System.Runtime.InteropServices;
using Tickwire.Native;

namespace Tickwire.Tests
{
    internal static class TestHooks
    {
        // TwNative.Lib: the library the bindings load ("tickwire").

        // Panics inside a host call: returns TwResult.Panic and poisons the host.
        [DllImport(TwNative.Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_debug_panic(HostHandle host);

        // Makes the host's network thread panic: the next polls give a FATAL event.
        [DllImport(TwNative.Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_debug_kill_network_thread(HostHandle host);

        // Panics inside a session call: returns TwResult.Panic and poisons the session.
        [DllImport(TwNative.Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_debug_session_panic(SessionHandle session);

        // Stays inside a call on the session for ms milliseconds (a concurrent call gets TwResult.Busy).
        [DllImport(TwNative.Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_debug_hold_session(SessionHandle session, uint ms);
    }
}
