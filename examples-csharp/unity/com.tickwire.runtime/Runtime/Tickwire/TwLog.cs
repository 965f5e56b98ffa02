// The log hook (tw_session_set_log, tw_host_set_log) for C#: a TwLogHandler per session
// or host, called from inside PollEvent / TryPollEvent on the thread that polls, never
// from the network thread.
//
// IL2CPP and Mono full AOT can only call managed code from native code through a
// static method marked [MonoPInvokeCallback]: the library gets one static trampoline
// (kept alive in a static field) for every session and host, and the `user` pointer is
// an id into a table of handlers. An id, not a GCHandle: a record for an object whose
// handler is gone finds no entry and is dropped, where a freed GCHandle would crash.
// A poll with nothing to log runs no managed code at all; a record costs its string.

using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using Tickwire.Native;

namespace Tickwire
{
    /// <summary>tw_log_level: how much a record matters; a log set to a level gets it and the more serious ones.</summary>
    public enum TwLogLevel : uint
    {
        /// <summary>As a minimum level: the log is off.</summary>
        Off = 0,
        /// <summary>A desync, a synctest mismatch, a lost relay server, a network-thread fault.</summary>
        Error = 1,
        /// <summary>Dropped malformed or forged datagrams (summarized once a second), lost connections, timeouts, kicks.</summary>
        Warn = 2,
        /// <summary>Connections up and down, synchronization, players joining and leaving.</summary>
        Info = 3,
        /// <summary>Dials, prediction-window stalls, connection progress.</summary>
        Debug = 4,
    }

    /// <summary>
    /// Receives one log record: its level and text. Called from inside PollEvent /
    /// TryPollEvent on the thread that polls. Calls on the same session or host from
    /// inside it return TwResult.Busy (or throw with it). An exception it throws is
    /// caught (it must not unwind through native code) and kept in
    /// TwLog.LastHandlerException.
    /// </summary>
    public delegate void TwLogHandler(TwLogLevel level, string message);

    /// <summary>The handlers of every session and host with a log, and the one native trampoline.</summary>
    public static unsafe class TwLog
    {
        private static readonly object s_lock = new object();
        private static readonly Dictionary<int, TwLogHandler> s_handlers = new Dictionary<int, TwLogHandler>();
        private static int s_nextId;
        // The delegate the native side holds a pointer to: static, so it is never collected.
        private static readonly TwNative.TwLogFn s_trampoline = OnLog;
        private static readonly IntPtr s_trampolinePtr = Marshal.GetFunctionPointerForDelegate(s_trampoline);

        /// <summary>The last exception a handler threw (caught by the trampoline), or null.</summary>
        public static Exception LastHandlerException { get; private set; }

        /// <summary>How many handlers are registered (for tests).</summary>
        public static int HandlerCount
        {
            get { lock (s_lock) { return s_handlers.Count; } }
        }

        [AOT.MonoPInvokeCallback(typeof(TwNative.TwLogFn))]
        private static void OnLog(IntPtr user, uint level, byte* message, UIntPtr len)
        {
            try
            {
                TwLogHandler handler;
                lock (s_lock)
                {
                    if (!s_handlers.TryGetValue((int)user.ToInt64(), out handler))
                    {
                        return;
                    }
                }
                handler((TwLogLevel)level, Encoding.UTF8.GetString(message, (int)len.ToUInt64()));
            }
            catch (Exception e)
            {
                LastHandlerException = e;
            }
        }

        /// <summary>
        /// Sets, replaces or (handler null or minLevel Off) clears the log of one object:
        /// set calls the native setter with the trampoline and the object's id; the id
        /// (0: none) is the object's own field.
        /// </summary>
        internal static TwResult Set(ref int id, TwLogHandler handler, TwLogLevel minLevel, Func<IntPtr, IntPtr, uint, TwResult> set)
        {
            if (handler == null || minLevel == TwLogLevel.Off)
            {
                TwResult off = set(IntPtr.Zero, IntPtr.Zero, 0);
                if (off == TwResult.Ok)
                {
                    Unregister(ref id);
                }
                return off;
            }
            int next;
            lock (s_lock)
            {
                next = ++s_nextId;
                if (next <= 0)
                {
                    next = s_nextId = 1;
                }
                s_handlers[next] = handler;
            }
            TwResult r = set(s_trampolinePtr, new IntPtr(next), (uint)minLevel);
            if (r == TwResult.Ok)
            {
                Unregister(ref id);
                id = next;
            }
            else
            {
                Unregister(ref next);
            }
            return r;
        }

        /// <summary>Forgets an object's handler (its Dispose); id becomes 0.</summary>
        internal static void Unregister(ref int id)
        {
            if (id == 0)
            {
                return;
            }
            lock (s_lock)
            {
                s_handlers.Remove(id);
            }
            id = 0;
        }

        /// <summary>Forgets every handler (Unity: with DisposeAll, before a domain reload).</summary>
        public static void Clear()
        {
            lock (s_lock)
            {
                s_handlers.Clear();
            }
        }
    }
}

#if !UNITY_5_3_OR_NEWER
namespace AOT
{
    /// <summary>
    /// Outside Unity (UnityEngine defines the real one): marks a static method native
    /// code calls, so that Mono's full-AOT compiler (which looks for the name) makes
    /// its native-to-managed wrapper ahead of time, as IL2CPP does.
    /// </summary>
    [AttributeUsage(AttributeTargets.Method)]
    internal sealed class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type type)
        {
        }
    }
}
#endif
