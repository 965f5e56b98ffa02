using System;
using System.IO;
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

        // Every helper here calls the native library: where it is missing (or lacks a
        // function) they throw TickwireAbiException saying what was looked for and where,
        // never the runtime's bare DllNotFoundException.

        /// <summary>tw_version(): (major &lt;&lt; 16) | (minor &lt;&lt; 8) | patch.</summary>
        public static uint NativeVersion
        {
            get
            {
                try
                {
                    return TwNative.tw_version();
                }
                catch (DllNotFoundException e)
                {
                    throw LibraryNotFound(e);
                }
            }
        }

        /// <summary>tw_version_string(), for example "0.1.0".</summary>
        public static string NativeVersionString
        {
            get
            {
                try
                {
                    return TwText.FromUtf8(TwNative.tw_version_string());
                }
                catch (DllNotFoundException e)
                {
                    throw LibraryNotFound(e);
                }
            }
        }

        /// <summary>tw_abi_version(): must equal <see cref="AbiVersion"/>.</summary>
        public static uint NativeAbiVersion
        {
            get
            {
                try
                {
                    return TwNative.tw_abi_version();
                }
                catch (DllNotFoundException e)
                {
                    throw LibraryNotFound(e);
                }
            }
        }

        /// <summary>
        /// The exception for a native library the runtime could not load: the file it
        /// looked for on this platform, and where (next to the executable, the library
        /// path variable and its value), with the runtime's own exception inside.
        /// </summary>
        internal static TickwireAbiException LibraryNotFound(DllNotFoundException e)
        {
            bool windows = Path.DirectorySeparatorChar == '\\';
            bool mac = !windows && Directory.Exists("/System/Library/Frameworks");
            string file = windows ? "tickwire.dll" : mac ? "libtickwire.dylib" : "libtickwire.so";
            string pathVariable = windows ? "PATH" : mac ? "DYLD_LIBRARY_PATH" : "LD_LIBRARY_PATH";
            string path = Environment.GetEnvironmentVariable(pathVariable);
            return new TickwireAbiException(
                "the native tickwire library was not found: " + file + " (DllImport \"" + TwNative.Lib +
                "\") is not next to the executable (" + AppDomain.CurrentDomain.BaseDirectory + "), on " +
                pathVariable + " (" + (string.IsNullOrEmpty(path) ? "not set" : path) + ") or in the system's " +
                "library directories. Put it in one of them, or in a Unity Plugins folder set for this platform. " +
                "(The runtime said: " + e.Message + ")", e);
        }

        /// <summary>
        /// The structs whose sizes the ABI check compares, in the order of the sizes
        /// <see cref="NativeSizes"/> returns and <see cref="FindMismatch"/> takes. A new
        /// struct in the header adds one entry here, in s_checkedTypes and
        /// s_checkedSizeofs, and its size getter in NativeSizes.
        /// </summary>
        internal static readonly string[] CheckedStructs =
        {
            "tw_host_config", "tw_link_sim_config", "tw_event", "tw_peer_stats", "tw_host_stats",
            "tw_session_config", "tw_request", "tw_session_event", "tw_session_stats", "tw_relay_player_stats",
            "tw_security_config", "tw_network_stats", "tw_session_message_stats", "tw_player_identity",
            "tw_rendezvous_stats",
        };

        private static readonly Type[] s_checkedTypes =
        {
            typeof(TwHostConfig), typeof(TwLinkSimConfig), typeof(TwEvent), typeof(TwPeerStats), typeof(TwHostStats),
            typeof(TwSessionConfig), typeof(TwRequest), typeof(TwSessionEvent), typeof(TwSessionStats),
            typeof(TwRelayPlayerStats), typeof(TwSecurityConfig), typeof(TwNetworkStats), typeof(TwSessionMessageStats),
            typeof(TwPlayerIdentity), typeof(TwRendezvousStats),
        };

        private static readonly int[] s_checkedSizeofs =
        {
            sizeof(TwHostConfig), sizeof(TwLinkSimConfig), sizeof(TwEvent), sizeof(TwPeerStats), sizeof(TwHostStats),
            sizeof(TwSessionConfig), sizeof(TwRequest), sizeof(TwSessionEvent), sizeof(TwSessionStats),
            sizeof(TwRelayPlayerStats), sizeof(TwSecurityConfig), sizeof(TwNetworkStats), sizeof(TwSessionMessageStats),
            sizeof(TwPlayerIdentity), sizeof(TwRendezvousStats),
        };

        /// <summary>
        /// Checks once per process that the native library matches these bindings: the
        /// ABI version and the size of every struct. Throws
        /// <see cref="TickwireAbiException"/> if the library is missing or differs.
        /// TwHost, TwSession and the config Default() methods call it; calling it early
        /// (at game start) gives the clearest error.
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
                mismatch = FindMismatch(TwNative.tw_abi_version(), NativeSizes());
            }
            catch (DllNotFoundException e)
            {
                throw LibraryNotFound(e);
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

        /// <summary>The native size getters' answers, in the order of <see cref="CheckedStructs"/>.</summary>
        internal static ulong[] NativeSizes()
        {
            return new ulong[]
            {
                (ulong)TwNative.tw_host_config_size(),
                (ulong)TwNative.tw_link_sim_config_size(),
                (ulong)TwNative.tw_event_size(),
                (ulong)TwNative.tw_peer_stats_size(),
                (ulong)TwNative.tw_host_stats_size(),
                (ulong)TwNative.tw_session_config_size(),
                (ulong)TwNative.tw_request_size(),
                (ulong)TwNative.tw_session_event_size(),
                (ulong)TwNative.tw_session_stats_size(),
                (ulong)TwNative.tw_relay_player_stats_size(),
                (ulong)TwNative.tw_security_config_size(),
                (ulong)TwNative.tw_network_stats_size(),
                (ulong)TwNative.tw_session_message_stats_size(),
                (ulong)TwNative.tw_player_identity_size(),
                (ulong)TwNative.tw_rendezvous_stats_size(),
            };
        }

        /// <summary>
        /// Compares what the native library reports (its ABI version and the sizes of
        /// <see cref="CheckedStructs"/>, in that order) with these bindings. Returns
        /// null when they match, else a message naming every difference.
        /// </summary>
        internal static string FindMismatch(uint abi, ulong[] nativeSizes)
        {
            StringBuilder sb = null;
            if (abi != AbiVersion)
            {
                Append(ref sb, "tw_abi_version() is " + abi + ", these bindings were written for " + AbiVersion);
            }
            if (nativeSizes.Length != CheckedStructs.Length)
            {
                throw new ArgumentException("expected " + CheckedStructs.Length + " sizes", "nativeSizes");
            }
            for (int i = 0; i < CheckedStructs.Length; i++)
            {
                CheckSize(ref sb, CheckedStructs[i], nativeSizes[i], s_checkedSizeofs[i], s_checkedTypes[i]);
            }
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
            try
            {
                return TwText.FromUtf8(TwNative.tw_result_str((int)result));
            }
            catch (DllNotFoundException e)
            {
                throw LibraryNotFound(e);
            }
        }

        /// <summary>
        /// This thread's last error message (tw_last_error_message): which function
        /// failed and why. Read it right after a failed call. Allocates a string.
        /// </summary>
        public static string LastErrorMessage()
        {
            const int StackBytes = 512;
            byte* small = stackalloc byte[StackBytes];
            ulong needed;
            try
            {
                needed = (ulong)TwNative.tw_last_error_message(small, (UIntPtr)StackBytes);
            }
            catch (DllNotFoundException e)
            {
                throw LibraryNotFound(e);
            }
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
