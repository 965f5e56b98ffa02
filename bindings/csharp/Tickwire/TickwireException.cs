using System;

namespace Tickwire
{
    /// <summary>
    /// A tickwire call failed. Thrown by setup calls (create, config, connect, link
    /// simulator); per-frame calls return a <see cref="TwResult"/> instead.
    /// </summary>
    public class TickwireException : Exception
    {
        /// <summary>The result code the library returned.</summary>
        public TwResult Code { get; private set; }

        /// <summary>The library's last-error message for the failure (names the function and the reason).</summary>
        public string NativeMessage { get; private set; }

        /// <summary>A failure with code; the message is the code's name followed by nativeMessage.</summary>
        public TickwireException(TwResult code, string nativeMessage)
            : base(TwLibrary.ResultName(code) + ": " + nativeMessage)
        {
            Code = code;
            NativeMessage = nativeMessage;
        }

        /// <summary>For subclasses that word the message themselves.</summary>
        protected TickwireException(TwResult code, string message, string nativeMessage, Exception inner)
            : base(message, inner)
        {
            Code = code;
            NativeMessage = nativeMessage;
        }

        /// <summary>Builds the exception for a failed call from this thread's last error.</summary>
        internal static TickwireException FromLastError(TwResult code)
        {
            return new TickwireException(code, TwLibrary.LastErrorMessage());
        }
    }

    /// <summary>
    /// The native library is missing or does not match these bindings (different ABI
    /// version or struct sizes). The usual cause is a stale libtickwire in the
    /// project's Plugins folder or on the library path.
    /// </summary>
    public sealed class TickwireAbiException : TickwireException
    {
        /// <summary>A mismatch described by message (code VersionMismatch).</summary>
        public TickwireAbiException(string message)
            : base(TwResult.VersionMismatch, message, message, null)
        {
        }

        /// <summary>A mismatch found through inner (for example DllNotFoundException).</summary>
        public TickwireAbiException(string message, Exception inner)
            : base(TwResult.VersionMismatch, message, message, inner)
        {
        }
    }
}
