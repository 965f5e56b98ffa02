using System;
using System.Runtime.InteropServices;
using Tickwire.Native;

namespace Tickwire
{
    // An external carrier: the engine moves a session's (or a host's) datagrams over its
    // platform's networking (Steam, Epic Online Services, WebRTC data channels) instead of
    // the library's UDP socket. A session is on one when its bind address is
    // "remote:<id>" (its own id on the carrier, a u64 in decimal: a SteamID, an EOS
    // ProductUserId mapped to a number by the game); its peers are named "remote:<id>" in
    // every address argument (AddRemotePlayer, SetServer, ...) and every address shown.
    //
    // Each frame, on the engine's thread:
    //   received = carrier's incoming datagrams -> PushDatagrams (before polling events)
    //   TicksDue / PushInput / Advance / requests / events, as over UDP
    //   PullDatagrams (after Advance, which flushes) until it gives fewer than asked -> carrier sends
    // TwDatagramBatch does both without allocating.
    public sealed unsafe partial class TwSession
    {
        /// <summary>
        /// P2P, SPECTATOR or a relay mode bound to "remote:&lt;id&gt;": hands the session's host
        /// the datagrams the carrier received (tw_session_push_datagrams). Each item's Data
        /// must point at pinned or native memory of Len bytes, read during this call only.
        /// taken: how many were handed over. Returns Ok, InvalidState (a UDP session, SYNCTEST,
        /// REPLAY), NullArgument, Busy, ... (never throws but ObjectDisposedException;
        /// allocates nothing). <see cref="TwDatagramBatch"/> does the pinning.
        /// </summary>
        public TwResult PushDatagrams(ReadOnlySpan<TwDatagram> items, out int taken)
        {
            ThrowIfDisposed();
            UIntPtr n = UIntPtr.Zero;
            TwResult r;
            fixed (TwDatagram* p = &MemoryMarshal.GetReference(items))
            {
                r = TwNative.tw_session_push_datagrams(_handle, p, (UIntPtr)items.Length, &n);
            }
            taken = (int)n;
            return r;
        }

        /// <summary>
        /// A session bound to "remote:&lt;id&gt;": takes the datagrams its host has for the carrier
        /// to send, oldest first (tw_session_pull_datagrams): at most items.Length, their bytes
        /// packed into buffer (bufferLength bytes of pinned or native memory; offer
        /// TwConstants.MaxDatagramSize per item), each item's Data pointing at its own. count:
        /// how many were written. Call it after Advance until it gives fewer than items.Length.
        /// Returns Ok (count 0 when nothing waits), BufferTooSmall when the next datagram does
        /// not fit bufferLength, InvalidState (a UDP session, SYNCTEST, REPLAY), ... (never
        /// throws but ObjectDisposedException; allocates nothing).
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
                r = TwNative.tw_session_pull_datagrams(_handle, p, (UIntPtr)items.Length, (byte*)buffer, (UIntPtr)bufferLength, &n);
            }
            count = (int)n;
            return r;
        }
    }

    /// <summary>
    /// A reusable batch of datagrams for an external carrier: an item array and a byte
    /// buffer pinned once (a GCHandle, freed by Dispose), so that pushing what the carrier
    /// received and pulling what to send allocate nothing per frame.
    ///
    /// Receiving: Clear, Add each datagram the carrier delivered (its bytes are copied into
    /// the pinned buffer), then Push. Sending: Pull, then for i below Count hand the carrier
    /// Remote(i) and Data(i) / Length(i) (or Span(i), Copy(i, ...)); repeat while MayHaveMore.
    /// A pull overwrites what the batch held; use one batch for each direction, or finish
    /// with one before the other. Not thread-safe, like the sessions.
    /// <code>
    /// // once
    /// var inbox = new TwDatagramBatch(64);
    /// var outbox = new TwDatagramBatch(64);
    /// // every frame
    /// inbox.Clear();
    /// foreach (received datagram d) inbox.Add(d.From, d.Bytes, 0, d.Length, d.AgeUs);
    /// inbox.Push(session);
    /// /* TicksDue, PushInput, Advance, requests, events */
    /// do {
    ///     outbox.Pull(session);
    ///     for (int i = 0; i &lt; outbox.Count; i++) carrier.Send(outbox.Remote(i), outbox.Data(i), outbox.Length(i));
    /// } while (outbox.MayHaveMore);
    /// </code>
    /// </summary>
    public sealed unsafe class TwDatagramBatch : IDisposable
    {
        private readonly TwDatagram[] _items;
        private readonly byte[] _buffer;
        private GCHandle _pin;
        private byte* _base;
        private int _count;
        private int _used;

        /// <summary>A batch of capacity datagrams of up to TwConstants.MaxDatagramSize bytes each.</summary>
        public TwDatagramBatch(int capacity) : this(capacity, capacity * TwConstants.MaxDatagramSize)
        {
        }

        /// <summary>
        /// A batch of at most capacity datagrams sharing bufferBytes bytes (at least
        /// TwConstants.MaxDatagramSize, so that a pull always fits the next datagram).
        /// </summary>
        public TwDatagramBatch(int capacity, int bufferBytes)
        {
            if (capacity < 1)
            {
                throw new ArgumentOutOfRangeException("capacity", "at least 1 datagram");
            }
            if (bufferBytes < TwConstants.MaxDatagramSize)
            {
                throw new ArgumentOutOfRangeException("bufferBytes", "at least TwConstants.MaxDatagramSize (1200) bytes");
            }
            _items = new TwDatagram[capacity];
            _buffer = new byte[bufferBytes];
            _pin = GCHandle.Alloc(_buffer, GCHandleType.Pinned);
            _base = (byte*)_pin.AddrOfPinnedObject();
        }

        /// <summary>Datagrams in the batch (added, or written by the last pull).</summary>
        public int Count
        {
            get { return _count; }
        }

        /// <summary>The most datagrams the batch holds.</summary>
        public int Capacity
        {
            get { return _items.Length; }
        }

        /// <summary>Bytes of the pinned buffer in use.</summary>
        public int BytesUsed
        {
            get { return _used; }
        }

        /// <summary>Bytes of the pinned buffer.</summary>
        public int BufferBytes
        {
            get { return _buffer.Length; }
        }

        /// <summary>
        /// After a pull: true when it stopped on the batch's room (every item used, or too
        /// few bytes left for a largest datagram), so another pull may find more.
        /// </summary>
        public bool MayHaveMore
        {
            get { return _count == _items.Length || _buffer.Length - _used < TwConstants.MaxDatagramSize; }
        }

        /// <summary>True once Dispose has released the pinned buffer.</summary>
        public bool IsDisposed
        {
            get { return _base == null; }
        }

        /// <summary>Empties the batch (keeps its memory).</summary>
        public void Clear()
        {
            _count = 0;
            _used = 0;
        }

        /// <summary>
        /// Copies len bytes of src from offset into the batch as a datagram from remote that
        /// arrived ageUs microseconds ago (0: now). False, and nothing added, when the batch
        /// has no item or too few bytes left: Push, Clear and add again.
        /// </summary>
        public bool Add(ulong remote, byte[] src, int offset, int len, uint ageUs)
        {
            if (src == null)
            {
                throw new ArgumentNullException("src");
            }
            if (offset < 0 || len < 0 || offset > src.Length - len)
            {
                throw new ArgumentOutOfRangeException("len", "offset and len must lie within src");
            }
            fixed (byte* p = src)
            {
                return Add(remote, p + offset, len, ageUs);
            }
        }

        /// <summary>As Add(remote, byte[], ...), from a span.</summary>
        public bool Add(ulong remote, ReadOnlySpan<byte> src, uint ageUs)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(src))
            {
                return Add(remote, p, src.Length, ageUs);
            }
        }

        /// <summary>
        /// As Add(remote, byte[], ...), from native memory (a platform's message, such as
        /// Steam's m_pData with m_cbSize): the bytes are copied, src may be released after.
        /// </summary>
        public bool Add(ulong remote, IntPtr src, int len, uint ageUs)
        {
            if (len < 0)
            {
                throw new ArgumentOutOfRangeException("len");
            }
            if (src == IntPtr.Zero && len > 0)
            {
                throw new ArgumentNullException("src");
            }
            return Add(remote, (byte*)src, len, ageUs);
        }

        private bool Add(ulong remote, byte* src, int len, uint ageUs)
        {
            ThrowIfDisposed();
            if (_count == _items.Length || len > _buffer.Length - _used)
            {
                return false;
            }
            byte* at = _base + _used;
            if (len > 0)
            {
                Buffer.MemoryCopy(src, at, _buffer.Length - _used, len);
            }
            _items[_count].Remote = remote;
            _items[_count].Data = at;
            _items[_count].Len = (uint)len;
            _items[_count].AgeUs = ageUs;
            _count++;
            _used += len;
            return true;
        }

        /// <summary>
        /// Pushes the batch into session (TwSession.PushDatagrams) and empties it; returns how
        /// many were taken. Throws TickwireException on a failure (a session not bound to
        /// "remote:&lt;id&gt;", a call from two threads at once, a panic), which allocates only then.
        /// </summary>
        public int Push(TwSession session)
        {
            ThrowIfDisposed();
            int taken;
            TwResult r = session.PushDatagrams(new ReadOnlySpan<TwDatagram>(_items, 0, _count), out taken);
            Clear();
            ThrowUnlessOk(r);
            return taken;
        }

        /// <summary>As Push(TwSession), into a bare host (TwHost.PushDatagrams).</summary>
        public int Push(TwHost host)
        {
            ThrowIfDisposed();
            int taken;
            TwResult r = host.PushDatagrams(new ReadOnlySpan<TwDatagram>(_items, 0, _count), out taken);
            Clear();
            ThrowUnlessOk(r);
            return taken;
        }

        /// <summary>
        /// Replaces the batch with the datagrams session has to send (TwSession.PullDatagrams),
        /// as many as fit; returns Count. Pull again while MayHaveMore. Throws
        /// TickwireException on a failure, as Push.
        /// </summary>
        public int Pull(TwSession session)
        {
            ThrowIfDisposed();
            Clear();
            int n;
            ThrowUnlessOk(session.PullDatagrams(new Span<TwDatagram>(_items), (IntPtr)_base, _buffer.Length, out n));
            return Settle(n);
        }

        /// <summary>As Pull(TwSession), from a bare host (TwHost.PullDatagrams).</summary>
        public int Pull(TwHost host)
        {
            ThrowIfDisposed();
            Clear();
            int n;
            ThrowUnlessOk(host.PullDatagrams(new Span<TwDatagram>(_items), (IntPtr)_base, _buffer.Length, out n));
            return Settle(n);
        }

        private int Settle(int n)
        {
            _count = n;
            _used = n == 0 ? 0 : (int)(_items[n - 1].Data - _base) + (int)_items[n - 1].Len;
            return n;
        }

        /// <summary>Item i as the library sees it (Data points into the pinned buffer).</summary>
        public TwDatagram this[int i]
        {
            get
            {
                CheckIndex(i);
                return _items[i];
            }
        }

        /// <summary>Datagram i's remote: where it goes (pulled) or came from (added).</summary>
        public ulong Remote(int i)
        {
            CheckIndex(i);
            return _items[i].Remote;
        }

        /// <summary>Datagram i's size in bytes.</summary>
        public int Length(int i)
        {
            CheckIndex(i);
            return (int)_items[i].Len;
        }

        /// <summary>Datagram i's age in microseconds (added ones; pulled ones are 0).</summary>
        public uint AgeUs(int i)
        {
            CheckIndex(i);
            return _items[i].AgeUs;
        }

        /// <summary>
        /// Datagram i's bytes in the pinned buffer, valid until the batch is cleared, pulled
        /// into again or disposed: hand it to a platform send call that copies (Steam's
        /// SendMessageToUser, EOS_P2P_SendPacket).
        /// </summary>
        public IntPtr Data(int i)
        {
            CheckIndex(i);
            return (IntPtr)_items[i].Data;
        }

        /// <summary>Datagram i's bytes as a span over the pinned buffer (valid as Data(i)).</summary>
        public ReadOnlySpan<byte> Span(int i)
        {
            CheckIndex(i);
            return new ReadOnlySpan<byte>(_items[i].Data, (int)_items[i].Len);
        }

        /// <summary>Copies datagram i into dst at offset; returns its length. Throws when it does not fit.</summary>
        public int Copy(int i, byte[] dst, int offset)
        {
            CheckIndex(i);
            if (dst == null)
            {
                throw new ArgumentNullException("dst");
            }
            int len = (int)_items[i].Len;
            if (offset < 0 || offset > dst.Length - len)
            {
                throw new ArgumentOutOfRangeException("offset", "datagram " + i + " (" + len + " bytes) does not fit dst at offset");
            }
            if (len > 0)
            {
                Marshal.Copy((IntPtr)_items[i].Data, dst, offset, len);
            }
            return len;
        }

        /// <summary>Releases the pinned buffer; the batch is unusable after.</summary>
        public void Dispose()
        {
            if (_pin.IsAllocated)
            {
                _pin.Free();
            }
            _base = null;
            _count = 0;
            _used = 0;
        }

        private void CheckIndex(int i)
        {
            ThrowIfDisposed();
            if ((uint)i >= (uint)_count)
            {
                throw new ArgumentOutOfRangeException("i", "no datagram " + i + " in a batch of " + _count);
            }
        }

        private void ThrowIfDisposed()
        {
            if (_base == null)
            {
                throw new ObjectDisposedException("TwDatagramBatch", "this datagram batch has been disposed");
            }
        }

        private static void ThrowUnlessOk(TwResult r)
        {
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
        }
    }
}
