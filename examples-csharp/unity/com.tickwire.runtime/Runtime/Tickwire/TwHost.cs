using System;
using System.Runtime.InteropServices;
using Tickwire.Native;

namespace Tickwire
{
    /// <summary>
    /// A tickwire host: one UDP socket, its network thread and its connections.
    ///
    /// Setup calls (constructor, Connect, SetLinkSim) throw <see cref="TickwireException"/>
    /// with the code and the library's message. Per-frame calls (Send, Flush, PollEvent,
    /// ReadMessage, stats) return a <see cref="TwResult"/> or a bool and never allocate.
    /// Any call after Dispose throws ObjectDisposedException.
    ///
    /// Not thread-safe: call it from one thread at a time (the engine's main thread).
    /// A call made while another thread is inside one does nothing and gets
    /// <see cref="TwResult.Busy"/> (or throws with it), never memory corruption.
    /// The network thread never calls managed code.
    ///
    /// The engine loop, once per frame: Send what you have, Flush, then drain
    /// PollEvent until it returns false, reading each message's payload with
    /// ReadMessage before polling again.
    /// </summary>
    public sealed unsafe class TwHost : IDisposable
    {
        private readonly HostHandle _handle;
        /// <summary>This host's entry in TwLog's handler table (0: no log).</summary>
        private int _logId;
        private string _localAddress;

        // Live hosts, so that DisposeAll can release them before a Unity domain reload.
        private static readonly LiveHandles s_live = new LiveHandles();
        private readonly WeakReference _liveToken;

        /// <summary>Binds a host with the default config (a client: accepts no connections).</summary>
        public TwHost(string bindAddress) : this(TwHostConfig.Default(), bindAddress)
        {
        }

        /// <summary>
        /// Binds a UDP socket to bindAddress ("0.0.0.0:7777" for a server, "127.0.0.1:0"
        /// or "[::]:0" for any free port) and starts the network thread. Get config from
        /// TwHostConfig.Default() and change fields (MaxClients on a server). An empty
        /// bindAddress ("") is the automatic bind: any free port on a dual-stack IPv6 socket
        /// that reaches IPv4 and IPv6 servers alike ("0.0.0.0" where the system has no
        /// IPv6); an explicit address keeps the OS defaults. Names are not looked up here.
        /// </summary>
        public TwHost(TwHostConfig config, string bindAddress) : this(config, bindAddress, null)
        {
        }

        /// <summary>
        /// As above, with security settings: a match secret, a connect key and public address
        /// (a relay server admitting only connect-token holders), a connect token, or insecure
        /// plaintext. config.Security points at them during this call only; dispose security
        /// afterwards (the host keeps its own copy). Null keeps config.Security (IntPtr.Zero by
        /// default: encrypted and open to anyone). A bad setting throws TickwireException
        /// (InvalidArgument, the message naming the tw_security_config field).
        /// </summary>
        public TwHost(TwHostConfig config, string bindAddress, TwSecurity security)
        {
            TwLibrary.EnsureCompatible();
            byte[] address = TwText.ToUtf8Z(bindAddress);
            IntPtr raw = IntPtr.Zero;
            TwResult r;
            bool held = false;
            try
            {
                if (security != null)
                {
                    config.Security = security.AcquirePointer();
                    held = true;
                }
                fixed (byte* a = address)
                {
                    r = TwNative.tw_host_create(&config, a, &raw);
                }
            }
            finally
            {
                if (held)
                {
                    security.ReleasePointer();
                }
            }
            ThrowUnlessOk(r);
            _handle = new HostHandle(raw);
            _liveToken = s_live.Add(_handle);
        }

        /// <summary>The owned native handle (for code that calls the C API itself).</summary>
        public HostHandle Handle
        {
            get { return _handle; }
        }

        /// <summary>True once Dispose (or DisposeAll) has destroyed the native host.</summary>
        public bool IsDisposed
        {
            get { return _handle.IsClosed; }
        }

        /// <summary>
        /// The address the socket is bound to, for example "127.0.0.1:40123" (the real
        /// port when bound to port 0). Computed once.
        /// </summary>
        public string LocalAddress
        {
            get
            {
                ThrowIfDisposed();
                if (_localAddress == null)
                {
                    byte* buf = stackalloc byte[64];
                    UIntPtr len;
                    ThrowUnlessOk(TwNative.tw_host_local_address(_handle, buf, (UIntPtr)64, &len));
                    _localAddress = TwText.FromUtf8(buf, 64);
                }
                return _localAddress;
            }
        }

        /// <summary>
        /// Starts connecting to a server, by IP and port ("127.0.0.1:7777", "[::1]:7777":
        /// IPv6 in brackets) or host name and port ("localhost:7777",
        /// "game.example.com:7777"), and returns the new peer id. Does not block: a name is
        /// looked up on the host's resolver thread (at most TwConstants.MaxPendingResolutions
        /// at once), then a Connected event (or a Disconnected one with a reason:
        /// TwDisconnectReason.ResolveFailed when the name gives no usable address) follows.
        /// Of a name's addresses an IPv4 socket uses the first IPv4 one; a dual-stack socket
        /// (the automatic bind, "") the first IPv4 one if any, else the first IPv6 one; a
        /// socket bound to a specific IPv6 address the first IPv6 one. Messages may be sent
        /// right away. Throws TickwireException: InvalidArgument for a malformed address (no
        /// port, a bad name), port 0, an unspecified IP, or IPv6 from an IPv4 socket;
        /// QueueFull.
        /// </summary>
        public uint Connect(string address)
        {
            ThrowIfDisposed();
            byte[] text = TwText.ToUtf8Z(address);
            uint peer;
            TwResult r;
            fixed (byte* a = text)
            {
                r = TwNative.tw_host_connect(_handle, a, &peer);
            }
            ThrowUnlessOk(r);
            return peer;
        }

        /// <summary>
        /// Queues a message for peer; it leaves with the next Flush. The bytes are copied
        /// before the call returns. Returns Ok, or an error code (UnknownPeer,
        /// MessageTooLarge, QueueFull: retry on a later frame, ...) whose details are in
        /// TwLibrary.LastErrorMessage(). Never allocates.
        /// </summary>
        public TwResult Send(uint peer, TwChannel channel, ReadOnlySpan<byte> data)
        {
            ThrowIfDisposed();
            fixed (byte* p = &MemoryMarshal.GetReference(data))
            {
                return TwNative.tw_host_send(_handle, peer, (uint)channel, p, (UIntPtr)data.Length);
            }
        }

        /// <summary>Puts everything queued since the last flush on the wire. Once per frame, after the sends.</summary>
        public TwResult Flush()
        {
            ThrowIfDisposed();
            return TwNative.tw_host_flush(_handle);
        }

        /// <summary>
        /// Takes the next event: Ok when one was written to ev, Empty when there is none
        /// now, or an error (Panic). Never blocks, never allocates.
        /// </summary>
        public TwResult PollEvent(out TwEvent ev)
        {
            ThrowIfDisposed();
            ev = default(TwEvent);
            fixed (TwEvent* p = &ev)
            {
                return TwNative.tw_host_poll_event(_handle, p);
            }
        }

        /// <summary>True when an event was written to ev; false when there is none (or on an error).</summary>
        public bool TryPollEvent(out TwEvent ev)
        {
            return PollEvent(out ev) == TwResult.Ok;
        }

        /// <summary>
        /// Copies the payload of the Message event just polled into buffer and sets
        /// length. Returns Ok; BufferTooSmall (nothing copied, length = size needed, the
        /// payload is kept: call again with a larger buffer); InvalidState (the last
        /// event was not a message or was already read). Never allocates.
        /// </summary>
        public TwResult ReadMessage(Span<byte> buffer, out int length)
        {
            ThrowIfDisposed();
            UIntPtr len = UIntPtr.Zero;
            TwResult r;
            fixed (byte* p = &MemoryMarshal.GetReference(buffer))
            {
                r = TwNative.tw_host_read_message(_handle, p, (UIntPtr)buffer.Length, &len);
            }
            length = (r == TwResult.Ok || r == TwResult.BufferTooSmall) ? (int)(ulong)len : 0;
            return r;
        }

        /// <summary>Closes the connection to peer; a Disconnected event follows. Does not block.</summary>
        public TwResult Disconnect(uint peer)
        {
            ThrowIfDisposed();
            return TwNative.tw_host_disconnect(_handle, peer);
        }

        /// <summary>Statistics of the connection to peer (a snapshot at most a few tens of ms old).</summary>
        public TwResult GetPeerStats(uint peer, out TwPeerStats stats)
        {
            ThrowIfDisposed();
            stats = default(TwPeerStats);
            fixed (TwPeerStats* p = &stats)
            {
                return TwNative.tw_host_peer_stats(_handle, peer, p);
            }
        }

        /// <summary>Host-wide statistics.</summary>
        public TwResult GetStats(out TwHostStats stats)
        {
            ThrowIfDisposed();
            stats = default(TwHostStats);
            fixed (TwHostStats* p = &stats)
            {
                return TwNative.tw_host_get_stats(_handle, p);
            }
        }

        /// <summary>
        /// Simulates latency, jitter, loss, duplication and reordering on real datagrams
        /// in one direction (for development and tests). Get config from
        /// TwLinkSimConfig.Default() and change fields.
        /// </summary>
        public void SetLinkSim(TwDirection direction, TwLinkSimConfig config)
        {
            ThrowIfDisposed();
            ThrowUnlessOk(TwNative.tw_host_set_link_sim(_handle, (uint)direction, &config));
        }

        /// <summary>Turns the link simulator of one direction off.</summary>
        public void ClearLinkSim(TwDirection direction)
        {
            ThrowIfDisposed();
            ThrowUnlessOk(TwNative.tw_host_set_link_sim(_handle, (uint)direction, null));
        }

        /// <summary>
        /// Logs through handler: records at minLevel and above (tw_host_set_log), called from
        /// inside PollEvent / TryPollEvent on the polling thread, never from the network
        /// thread. Connections up and down with reasons, malformed or forged datagrams
        /// summarized once a second, network-thread faults. Null or TwLogLevel.Off
        /// turns it off. Use a handler that does not allocate per frame itself; the
        /// library calls it only when there is a record. Throws TickwireException.
        /// </summary>
        public void SetLog(TwLogHandler handler, TwLogLevel minLevel = TwLogLevel.Info)
        {
            ThrowIfDisposed();
            HostHandle h = _handle;
            ThrowUnlessOk(TwLog.Set(ref _logId, handler, minLevel, (fn, user, level) => TwNative.tw_host_set_log(h, fn, user, level)));
        }

        /// <summary>
        /// Destroys the native host: peers are told goodbye, the network thread is
        /// joined (at most 1 second), the socket is closed. Safe to call twice.
        /// </summary>
        public void Dispose()
        {
            if (_handle == null)
            {
                return;
            }
            _handle.Dispose();
            s_live.Remove(_liveToken);
            TwLog.Unregister(ref _logId);
        }

        /// <summary>
        /// A host on an external carrier (bound to "remote:&lt;id&gt;"): hands it the datagrams
        /// the carrier received (tw_host_push_datagrams). Each item's Data must point at
        /// pinned or native memory of Len bytes, read during this call only. taken: how many
        /// were handed over. Call it each frame before polling events. Returns Ok,
        /// InvalidState on a host with a UDP socket, NullArgument, Busy, ... (never throws
        /// but ObjectDisposedException; allocates nothing). <see cref="TwDatagramBatch"/>
        /// does the pinning.
        /// </summary>
        public TwResult PushDatagrams(ReadOnlySpan<TwDatagram> items, out int taken)
        {
            ThrowIfDisposed();
            UIntPtr n = UIntPtr.Zero;
            TwResult r;
            fixed (TwDatagram* p = &MemoryMarshal.GetReference(items))
            {
                r = TwNative.tw_host_push_datagrams(_handle, p, (UIntPtr)items.Length, &n);
            }
            taken = (int)n;
            return r;
        }

        /// <summary>
        /// A host on an external carrier: takes the datagrams it has for the carrier to send,
        /// oldest first (tw_host_pull_datagrams): at most items.Length, their bytes packed
        /// into buffer (bufferLength bytes of pinned or native memory; offer
        /// TwConstants.MaxDatagramSize per item), each item's Data pointing at its own.
        /// count: how many were written. Call it after Flush until it gives fewer than
        /// items.Length. Returns Ok (count 0 when nothing waits), BufferTooSmall when the next
        /// datagram does not fit bufferLength, InvalidState on a host with a UDP socket, ...
        /// (never throws but ObjectDisposedException; allocates nothing).
        /// </summary>
        public TwResult PullDatagrams(Span<TwDatagram> items, IntPtr buffer, int bufferLength, out int count)
        {
            ThrowIfDisposed();
            if (bufferLength < 0)
            {
                throw new ArgumentOutOfRangeException("bufferLength");
            }
            UIntPtr n = UIntPtr.Zero;
            TwResult r;
            fixed (TwDatagram* p = &MemoryMarshal.GetReference(items))
            {
                r = TwNative.tw_host_pull_datagrams(_handle, p, (UIntPtr)items.Length, (byte*)buffer, (UIntPtr)bufferLength, &n);
            }
            count = (int)n;
            return r;
        }

        /// <summary>
        /// Disposes every live host of this process. For Unity: call it before a
        /// domain reload and when play mode ends (the Unity package does), so that no
        /// native host outlives the managed world that owned it.
        /// </summary>
        public static void DisposeAll()
        {
            s_live.DisposeAll();
        }

        /// <summary>How many hosts are alive (created and not yet disposed or collected).</summary>
        public static int LiveCount
        {
            get { return s_live.CountOpen(); }
        }

        /// <summary>Entries of the live list, collected ones included (for tests).</summary>
        internal static int LiveEntries
        {
            get { return s_live.Count; }
        }

        private static void ThrowUnlessOk(TwResult r)
        {
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
        }

        private void ThrowIfDisposed()
        {
            if (_handle.IsClosed)
            {
                throw new ObjectDisposedException("TwHost", "this tickwire host has been disposed");
            }
        }
    }
}
