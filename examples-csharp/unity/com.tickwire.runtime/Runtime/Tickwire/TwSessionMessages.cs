using System;
using System.Runtime.InteropServices;
using Tickwire.Native;

namespace Tickwire
{
    // The TwSession calls of the message side channel: chat, settings, loadouts sent to
    // the other members of a P2P or relay session over the session's own connections,
    // with no second host. Per frame: TwResult out, no allocation (the payload is copied
    // from and into the caller's spans).
    //
    // The loop: SendMessage whenever the game has something to say (QueueFull: try again
    // on a later frame); while draining PollEvent, on a Message event call ReadMessage
    // before polling again (the next poll releases an unread payload).
    public sealed unsafe partial class TwSession
    {
        /// <summary>
        /// Sends data (at most TwConstants.SessionMessageMaxSize bytes, may be empty) on the
        /// session's reliable side channel: delivered once, in order, never in the way of
        /// the inputs; it arrives as a Message event. target: P2P, a remote player (its
        /// peer) or TwConstants.SessionMessageTargetAll (every connected peer, from the
        /// moment it connects, before the match too); RELAY_SERVER, a connected player's
        /// client or all; RELAY_CLIENT, SessionMessageTargetAll (the server), once joined.
        /// Ok; QueueFull (the peer's queue would pass TwConstants.SessionMessageQueueBytes:
        /// nothing was sent, try again later); MessageTooLarge; InvalidArgument (no such
        /// player, a local player, a relay client's target other than all); InvalidState
        /// (not started, the player's connection is not up, a relay client not joined, or
        /// SPECTATOR, SYNCTEST and REPLAY, which have no side channel).
        /// </summary>
        public TwResult SendMessage(uint target, ReadOnlySpan<byte> data)
        {
            ThrowIfDisposed();
            fixed (byte* p = &MemoryMarshal.GetReference(data))
            {
                return TwNative.tw_session_send_message(_handle, target, p, (UIntPtr)data.Length);
            }
        }

        /// <summary>
        /// Copies the payload of the Message event just polled into buffer and sets length.
        /// Ok (the payload is released); BufferTooSmall (nothing copied, length = the size
        /// needed, the payload is kept: call again with a larger buffer; a buffer of
        /// TwConstants.SessionMessageMaxSize bytes always fits); InvalidState (the last event
        /// was not a message, or it was already read). Never allocates.
        /// </summary>
        public TwResult ReadMessage(Span<byte> buffer, out int length)
        {
            ThrowIfDisposed();
            UIntPtr len = UIntPtr.Zero;
            TwResult r;
            fixed (byte* p = &MemoryMarshal.GetReference(buffer))
            {
                r = TwNative.tw_session_read_message(_handle, p, (UIntPtr)buffer.Length, &len);
            }
            length = (r == TwResult.Ok || r == TwResult.BufferTooSmall) ? (int)(ulong)len : 0;
            return r;
        }

        /// <summary>The side channel's figures: sent, received, and what was dropped on arrival and why.</summary>
        public TwResult GetMessageStats(out TwSessionMessageStats stats)
        {
            ThrowIfDisposed();
            stats = default(TwSessionMessageStats);
            fixed (TwSessionMessageStats* p = &stats)
            {
                return TwNative.tw_session_get_message_stats(_handle, p);
            }
        }
    }
}
