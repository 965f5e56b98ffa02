using System;
using System.Runtime.InteropServices;
using System.Text;
using Tickwire.Native;

namespace Tickwire
{
    /// <summary>
    /// Library-wide calls: versions, the ABI check, result names and the last error.
    /// All of them may be called from any thread.
    /// </summary>
    public static unsafe class TwLibrary
    {
        /// <summary>TW_ABI_VERSION of the header these bindings mirror.</summary>
        public const uint AbiVersion = 1;

        private static volatile bool s_compatible;

        /// <summary>tw_version(): (major &lt;&lt; 16) | (minor &lt;&lt; 8) | patch.</summary>
        public static uint NativeVersion
        {
            get { return TwNative.tw_version(); }
        }

        /// <summary>tw_version_string(), for example "0.1.0".</summary>
        public static string NativeVersionString
        {
            get { return TwText.FromUtf8(TwNative.tw_version_string()); }
        }

        /// <summary>tw_abi_version(): must equal <see cref="AbiVersion"/>.</summary>
        public static uint NativeAbiVersion
        {
            get { return TwNative.tw_abi_version(); }
        }

        /// <summary>
        /// Checks once per process that the native library matches these bindings: the
        /// ABI version and the size of every struct. Throws
        /// <see cref="TickwireAbiException"/> if the library is missing or differs.
        /// TwHost and the config Default() methods call it; calling it early (at game
        /// start) gives the clearest error.
        /// </summary>
        public static void EnsureCompatible()
        {
            if (s_compatible)
            {
                return;
            }
            string mismatch;
            try
            {
                mismatch = FindMismatch(
                    TwNative.tw_abi_version(),
                    (ulong)TwNative.tw_host_config_size(),
                    (ulong)TwNative.tw_link_sim_config_size(),
                    (ulong)TwNative.tw_event_size(),
                    (ulong)TwNative.tw_peer_stats_size(),
                    (ulong)TwNative.tw_host_stats_size());
            }
            catch (DllNotFoundException e)
            {
                throw new TickwireAbiException(
                    "the native tickwire library was not found (" + e.Message + "). Put libtickwire.so / " +
                    "libtickwire.dylib / tickwire.dll where the runtime looks: a Unity Plugins folder set " +
                    "for this platform, next to the executable, or on the library path.", e);
            }
            catch (EntryPointNotFoundException e)
            {
                throw new TickwireAbiException(
                    "the native tickwire library lacks a function these bindings need (" + e.Message +
                    "): it is older than the bindings. Replace it with the build that matches.", e);
            }
            if (mismatch != null)
            {
                throw new TickwireAbiException(mismatch);
            }
            s_compatible = true;
        }

        /// <summary>
        /// Compares what the native library reports with these bindings. Returns null
        /// when they match, else a message naming every difference.
        /// </summary>
        internal static string FindMismatch(uint abi, ulong hostConfigSize, ulong linkSimConfigSize,
                                            ulong eventSize, ulong peerStatsSize, ulong hostStatsSize)
        {
            StringBuilder sb = null;
            if (abi != AbiVersion)
            {
                Append(ref sb, "tw_abi_version() is " + abi + ", these bindings were written for " + AbiVersion);
            }
            CheckSize(ref sb, "tw_host_config", hostConfigSize, sizeof(TwHostConfig), typeof(TwHostConfig));
            CheckSize(ref sb, "tw_link_sim_config", linkSimConfigSize, sizeof(TwLinkSimConfig), typeof(TwLinkSimConfig));
            CheckSize(ref sb, "tw_event", eventSize, sizeof(TwEvent), typeof(TwEvent));
            CheckSize(ref sb, "tw_peer_stats", peerStatsSize, sizeof(TwPeerStats), typeof(TwPeerStats));
            CheckSize(ref sb, "tw_host_stats", hostStatsSize, sizeof(TwHostStats), typeof(TwHostStats));
            if (sb == null)
            {
                return null;
            }
            return "the native tickwire library does not match these C# bindings: " + sb +
                   ". A stale native library (an old libtickwire in Plugins/ or on the library path) is the " +
                   "usual cause; rebuild it and replace it, or update the bindings. (In the Unity editor a " +
                   "replaced native library is loaded only after an editor restart.)";
        }

        private static void CheckSize(ref StringBuilder sb, string name, ulong native, int csSizeof, Type t)
        {
            int marshalSize = Marshal.SizeOf(t);
            if (native != (ulong)csSizeof || marshalSize != csSizeof)
            {
                Append(ref sb, "sizeof(" + name + ") is " + native + " in the library, " + csSizeof +
                               " in C# (Marshal.SizeOf " + marshalSize + ")");
            }
        }

        private static void Append(ref StringBuilder sb, string what)
        {
            if (sb == null)
            {
                sb = new StringBuilder();
            }
            else
            {
                sb.Append("; ");
            }
            sb.Append(what);
        }

        /// <summary>The C name of a result code, for example "TW_RESULT_QUEUE_FULL" (tw_result_str).</summary>
        public static string ResultName(TwResult result)
        {
            return TwText.FromUtf8(TwNative.tw_result_str((int)result));
        }

        /// <summary>
        /// This thread's last error message (tw_last_error_message): which function
        /// failed and why. Read it right after a failed call. Allocates a string.
        /// </summary>
        public static string LastErrorMessage()
        {
            const int StackBytes = 512;
            byte* small = stackalloc byte[StackBytes];
            ulong needed = (ulong)TwNative.tw_last_error_message(small, (UIntPtr)StackBytes);
            if (needed == 0)
            {
                return string.Empty;
            }
            if (needed <= StackBytes)
            {
                return TwText.FromUtf8(small, (int)needed);
            }
            byte[] big = new byte[needed];
            fixed (byte* p = big)
            {
                needed = (ulong)TwNative.tw_last_error_message(p, (UIntPtr)big.Length);
                return TwText.FromUtf8(p, (int)Math.Min(needed, (ulong)big.Length));
            }
        }
    }
}
