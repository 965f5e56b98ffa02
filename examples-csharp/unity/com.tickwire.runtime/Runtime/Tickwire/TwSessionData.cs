using System;
using System.Runtime.InteropServices;
using Tickwire.Native;

namespace Tickwire
{
    // The TwSession calls that copy bytes out of the library: the current request's
    // inputs, statuses and state (per frame: Span in, TwResult out, no allocation), and
    // desync dumps and replays (Span versions, plus allocating conveniences that throw).
    //
    // Every copy follows the header's buffer contract: on Ok, length is the number of
    // bytes written; on BufferTooSmall nothing is written, length is the size needed and
    // the data stays available for another try.
    public sealed unsafe partial class TwSession
    {
        private enum CopySource
        {
            Inputs,
            InputStatus,
            State,
            DesyncDump,
            Replay,
            SynctestSaved,
            SynctestResimulated,
        }

        /// <summary>
        /// Copies the inputs of the current ADVANCE request: NumPlayers * InputSize
        /// bytes, player 0's input first. InvalidState if the current request is not an
        /// ADVANCE.
        /// </summary>
        public TwResult ReadInputs(Span<byte> buffer, out int length)
        {
            return CopyOut(CopySource.Inputs, buffer, out length);
        }

        /// <summary>As ReadInputs(buffer, out length), for a buffer known to be large enough.</summary>
        public TwResult ReadInputs(Span<byte> buffer)
        {
            int length;
            return CopyOut(CopySource.Inputs, buffer, out length);
        }

        /// <summary>
        /// Copies the input statuses of the current ADVANCE request: one byte per player,
        /// a <see cref="TwInputStatus"/> (Confirmed, Predicted, Disconnected).
        /// </summary>
        public TwResult ReadInputStatus(Span<byte> statuses, out int length)
        {
            return CopyOut(CopySource.InputStatus, statuses, out length);
        }

        /// <summary>As ReadInputStatus(statuses, out length), for a buffer known to be large enough.</summary>
        public TwResult ReadInputStatus(Span<byte> statuses)
        {
            int length;
            return CopyOut(CopySource.InputStatus, statuses, out length);
        }

        /// <summary>ReadInputStatus into typed statuses, one per player.</summary>
        public TwResult ReadInputStatus(Span<TwInputStatus> statuses)
        {
            ThrowIfDisposed();
            int length;
            fixed (TwInputStatus* p = &MemoryMarshal.GetReference(statuses))
            {
                return CopyOut(CopySource.InputStatus, (byte*)p, statuses.Length, out length);
            }
        }

        /// <summary>
        /// Copies the serialized state of the current RESTORE request (DataLen bytes, the
        /// engine's own format). InvalidState if the current request is not a RESTORE.
        /// </summary>
        public TwResult ReadState(Span<byte> buffer, out int length)
        {
            return CopyOut(CopySource.State, buffer, out length);
        }

        /// <summary>As ReadState(buffer, out length), for a buffer known to be large enough.</summary>
        public TwResult ReadState(Span<byte> buffer)
        {
            int length;
            return CopyOut(CopySource.State, buffer, out length);
        }

        /// <summary>
        /// P2P: copies the dump of the last desync (after a DesyncDumpReady event) and
        /// releases it. Empty when no dump is ready.
        /// </summary>
        public TwResult TakeDesyncDump(Span<byte> buffer, out int length)
        {
            return CopyOut(CopySource.DesyncDump, buffer, out length);
        }

        /// <summary>
        /// SYNCTEST: copies the state which of the captured mismatch (after a
        /// SynctestStatesReady event) and releases it: the saved state and the resimulated
        /// one, in the engine's own format, to write out and diff (GGPO's log_game_state).
        /// Empty when none is ready or it was taken.
        /// </summary>
        public TwResult TakeSynctestState(TwSynctestState which, Span<byte> buffer, out int length)
        {
            return CopyOut(which == TwSynctestState.Saved ? CopySource.SynctestSaved : CopySource.SynctestResimulated,
                           buffer, out length);
        }

        /// <summary>
        /// SYNCTEST: the state which of the captured mismatch as a new array, released from
        /// the session; null when none is ready. Allocates; throws on an error.
        /// </summary>
        public byte[] TakeSynctestState(TwSynctestState which)
        {
            return CopyAll(which == TwSynctestState.Saved ? CopySource.SynctestSaved : CopySource.SynctestResimulated);
        }

        /// <summary>P2P: copies the replay recorded so far (a complete replay file).</summary>
        public TwResult CopyReplay(Span<byte> buffer, out int length)
        {
            return CopyOut(CopySource.Replay, buffer, out length);
        }

        /// <summary>
        /// P2P: the ready desync dump as a new array, released from the session; null
        /// when none is ready. Allocates; throws on an error.
        /// </summary>
        public byte[] TakeDesyncDump()
        {
            return CopyAll(CopySource.DesyncDump);
        }

        /// <summary>
        /// P2P: the replay recorded so far as a new array (save it, send it, play it with
        /// a REPLAY session's LoadReplay). Allocates; throws on an error (no recording,
        /// not running yet).
        /// </summary>
        public byte[] CopyReplay()
        {
            return CopyAll(CopySource.Replay);
        }

        /// <summary>
        /// P2P: writes the ready desync dump to the file at path (created or replaced)
        /// and releases it. True when written, false when no dump was ready.
        /// </summary>
        public bool WriteDesyncDump(string path)
        {
            ThrowIfDisposed();
            byte[] text = TwText.ToUtf8Z(path);
            TwResult r;
            fixed (byte* p = text)
            {
                r = TwNative.tw_session_write_desync_dump(_handle, p);
            }
            ThrowIfFailed(r);
            return r == TwResult.Ok;
        }

        /// <summary>P2P: writes the replay recorded so far to the file at path (created or replaced).</summary>
        public void SaveReplay(string path)
        {
            ThrowIfDisposed();
            byte[] text = TwText.ToUtf8Z(path);
            fixed (byte* p = text)
            {
                ThrowIfFailed(TwNative.tw_session_save_replay(_handle, p));
            }
        }

        private TwResult CopyOut(CopySource source, Span<byte> buffer, out int length)
        {
            ThrowIfDisposed();
            fixed (byte* p = &MemoryMarshal.GetReference(buffer))
            {
                return CopyOut(source, p, buffer.Length, out length);
            }
        }

        private TwResult CopyOut(CopySource source, byte* buf, int bufLen, out int length)
        {
            UIntPtr len = UIntPtr.Zero;
            UIntPtr cap = (UIntPtr)bufLen;
            TwResult r;
            switch (source)
            {
                case CopySource.Inputs:
                    r = TwNative.tw_session_request_inputs(_handle, buf, cap, &len);
                    break;
                case CopySource.InputStatus:
                    r = TwNative.tw_session_request_input_status(_handle, buf, cap, &len);
                    break;
                case CopySource.State:
                    r = TwNative.tw_session_request_state(_handle, buf, cap, &len);
                    break;
                case CopySource.DesyncDump:
                    r = TwNative.tw_session_take_desync_dump(_handle, buf, cap, &len);
                    break;
                case CopySource.SynctestSaved:
                case CopySource.SynctestResimulated:
                    uint which = (uint)(source == CopySource.SynctestSaved ? TwSynctestState.Saved : TwSynctestState.Resimulated);
                    r = TwNative.tw_session_take_synctest_state(_handle, which, buf, cap, &len);
                    break;
                default:
                    r = TwNative.tw_session_copy_replay(_handle, buf, cap, &len);
                    break;
            }
            length = (r == TwResult.Ok || r == TwResult.BufferTooSmall) ? (int)(ulong)len : 0;
            return r;
        }

        /// <summary>Asks for the size, then copies into an array of exactly that size; null on Empty.</summary>
        private byte[] CopyAll(CopySource source)
        {
            ThrowIfDisposed();
            int needed;
            TwResult r = CopyOut(source, null, 0, out needed);
            while (true)
            {
                if (r == TwResult.Empty)
                {
                    return null;
                }
                if (r == TwResult.Ok)
                {
                    return new byte[0];
                }
                if (r != TwResult.BufferTooSmall)
                {
                    throw TickwireException.FromLastError(r);
                }
                byte[] bytes = new byte[needed];
                int length;
                fixed (byte* p = bytes)
                {
                    r = CopyOut(source, p, bytes.Length, out length);
                }
                if (r == TwResult.Ok)
                {
                    if (length == bytes.Length)
                    {
                        return bytes;
                    }
                    byte[] exact = new byte[length];
                    Array.Copy(bytes, exact, length);
                    return exact;
                }
                needed = length; // grew in between (BufferTooSmall again): retry with the new size
            }
        }
    }
}
