// The ABI tests of the test program: the load-time check against the native library's
// size getters (and its messages for a stale, a pre-relay, a pre-security and a missing
// library), and
// the whole header against the C# mirrors: every struct's size and field offsets, every
// enumerator's value and every numeric constant, as the C compiler sees them (the
// --offsets file from gen-offsets.sh). Part of the test program (Program is partial).

using System;
using System.Collections.Generic;
using System.IO;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Text;
using Tickwire;
using Tickwire.Native;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        private static void AbiMatches()
        {
            TwLibrary.EnsureCompatible();
            Equal(TwLibrary.AbiVersion, TwLibrary.NativeAbiVersion, "tw_abi_version");
            Equal((ulong)sizeof(TwHostConfig), (ulong)TwNative.tw_host_config_size(), "tw_host_config size");
            Equal((ulong)sizeof(TwLinkSimConfig), (ulong)TwNative.tw_link_sim_config_size(), "tw_link_sim_config size");
            Equal((ulong)sizeof(TwEvent), (ulong)TwNative.tw_event_size(), "tw_event size");
            Equal((ulong)sizeof(TwPeerStats), (ulong)TwNative.tw_peer_stats_size(), "tw_peer_stats size");
            Equal((ulong)sizeof(TwHostStats), (ulong)TwNative.tw_host_stats_size(), "tw_host_stats size");
            Equal((ulong)sizeof(TwSessionConfig), (ulong)TwNative.tw_session_config_size(), "tw_session_config size");
            Equal((ulong)sizeof(TwRequest), (ulong)TwNative.tw_request_size(), "tw_request size");
            Equal((ulong)sizeof(TwSessionEvent), (ulong)TwNative.tw_session_event_size(), "tw_session_event size");
            Equal((ulong)sizeof(TwSessionStats), (ulong)TwNative.tw_session_stats_size(), "tw_session_stats size");
            Equal((ulong)sizeof(TwRelayPlayerStats), (ulong)TwNative.tw_relay_player_stats_size(), "tw_relay_player_stats size");
            Equal((ulong)sizeof(TwSecurityConfig), (ulong)TwNative.tw_security_config_size(), "tw_security_config size");
            Equal((ulong)sizeof(TwNetworkStats), (ulong)TwNative.tw_network_stats_size(), "tw_network_stats size");
            Equal((ulong)sizeof(TwPlayerIdentity), (ulong)TwNative.tw_player_identity_size(), "tw_player_identity size");
            Equal((ulong)sizeof(TwRendezvousStats), (ulong)TwNative.tw_rendezvous_stats_size(), "tw_rendezvous_stats size");
            Equal(80, Marshal.SizeOf(typeof(TwRendezvousStats)), "Marshal.SizeOf(TwRendezvousStats)");
            Equal(72, Marshal.SizeOf(typeof(TwSessionEventPath)), "Marshal.SizeOf(TwSessionEventPath): fits the 120-byte union");
            Equal(72, (int)Marshal.OffsetOf(typeof(TwNetworkStats), "Path"), "offset of TwNetworkStats.Path (the first reserved bytes)");
            Equal(304, Marshal.SizeOf(typeof(TwPlayerIdentity)), "Marshal.SizeOf(TwPlayerIdentity)");
            Equal(80, Marshal.SizeOf(typeof(TwEventConnected)), "Marshal.SizeOf(TwEventConnected)");
            Equal(96, Marshal.SizeOf(typeof(TwHostConfig)), "Marshal.SizeOf(TwHostConfig)");
            Equal(160, Marshal.SizeOf(typeof(TwLinkSimConfig)), "Marshal.SizeOf(TwLinkSimConfig)");
            Equal(128, Marshal.SizeOf(typeof(TwEvent)), "Marshal.SizeOf(TwEvent)");
            Equal(120, Marshal.SizeOf(typeof(TwEventData)), "Marshal.SizeOf(TwEventData)");
            Equal(256, Marshal.SizeOf(typeof(TwPeerStats)), "Marshal.SizeOf(TwPeerStats)");
            Equal(256, Marshal.SizeOf(typeof(TwHostStats)), "Marshal.SizeOf(TwHostStats)");
            Equal(8, (int)Marshal.OffsetOf(typeof(TwEvent), "Data"), "offset of TwEvent.Data");
            Equal(320, Marshal.SizeOf(typeof(TwSessionConfig)), "Marshal.SizeOf(TwSessionConfig)");
            Equal(64, Marshal.SizeOf(typeof(TwRequest)), "Marshal.SizeOf(TwRequest)");
            Equal(128, Marshal.SizeOf(typeof(TwSessionEvent)), "Marshal.SizeOf(TwSessionEvent)");
            Equal(120, Marshal.SizeOf(typeof(TwSessionEventData)), "Marshal.SizeOf(TwSessionEventData)");
            Equal(256, Marshal.SizeOf(typeof(TwSessionStats)), "Marshal.SizeOf(TwSessionStats)");
            Equal(128, Marshal.SizeOf(typeof(TwRelayPlayerStats)), "Marshal.SizeOf(TwRelayPlayerStats)");
            Equal(1240, Marshal.SizeOf(typeof(TwSecurityConfig)), "Marshal.SizeOf(TwSecurityConfig)");
            Equal(128, Marshal.SizeOf(typeof(TwNetworkStats)), "Marshal.SizeOf(TwNetworkStats)");
            Equal(56, (int)Marshal.OffsetOf(typeof(TwHostConfig), "Security"), "offset of TwHostConfig.Security");
            Equal(32, Marshal.SizeOf(typeof(TwSessionEventRelay)), "Marshal.SizeOf(TwSessionEventRelay)");
            Equal(8, (int)Marshal.OffsetOf(typeof(TwSessionEvent), "Data"), "offset of TwSessionEvent.Data");
            Equal(1, sizeof(TwInputStatus), "tw_input_status is one byte");
            Equal(24, Marshal.SizeOf(typeof(TwDatagram)), "Marshal.SizeOf(TwDatagram)");
            Equal(24, sizeof(TwDatagram), "sizeof(TwDatagram): blittable, as tw_datagram");
            Equal(84, (int)Marshal.OffsetOf(typeof(TwHostConfig), "MaxDatagramSize"), "offset of TwHostConfig.MaxDatagramSize");
            ulong[] native = TwLibrary.NativeSizes();
            Equal(TwLibrary.CheckedStructs.Length, native.Length, "one native size per checked struct");
            Check(TwLibrary.FindMismatch(TwLibrary.NativeAbiVersion, native) == null, "the load-time check finds no mismatch");
        }

        private static void AbiMismatchMessage()
        {
            // The order of TwLibrary.CheckedStructs: host config, link sim config, event,
            // peer stats, host stats, session config, request, session event, session stats,
            // relay player stats, security config, network stats, session message stats,
            // player identity, rendezvous stats.
            ulong[] right = { 96, 160, 128, 256, 256, 320, 64, 128, 256, 128, 1240, 128, 64, 304, 80 };
            Check(TwLibrary.FindMismatch(TwLibrary.AbiVersion, right) == null, "no mismatch on the right numbers");
            string m = TwLibrary.FindMismatch(TwLibrary.AbiVersion + 1, new ulong[] { 96, 160, 136, 256, 256, 320, 64, 128, 264, 128, 1240, 128, 64, 304, 80 });
            Check(m != null, "a mismatch is found");
            Contains(m, "tw_abi_version() is " + (TwLibrary.AbiVersion + 1), "names the ABI version");
            Contains(m, "sizeof(tw_event) is 136 in the library, 128 in C#", "names the struct size");
            Contains(m, "sizeof(tw_session_stats) is 264 in the library, 256 in C#", "names a session struct's size");
            Contains(m, "stale native library", "names the likely cause");
            Check(m.IndexOf("tw_host_config", StringComparison.Ordinal) < 0, "does not blame a struct that matches");
            Check(m.IndexOf("tw_session_event", StringComparison.Ordinal) < 0, "does not blame a session struct that matches");
            m = TwLibrary.FindMismatch(TwLibrary.AbiVersion, new ulong[] { 96, 160, 128, 256, 256, 320, 72, 128, 256, 128, 1240, 128, 64, 304, 80 });
            Contains(m, "sizeof(tw_request) is 72 in the library, 64 in C#", "a request of another size");
            m = TwLibrary.FindMismatch(TwLibrary.AbiVersion, new ulong[] { 96, 160, 128, 256, 256, 320, 64, 128, 256, 136, 1240, 128, 64, 304, 80 });
            Contains(m, "sizeof(tw_relay_player_stats) is 136 in the library, 128 in C#", "relay player stats of another size");
            Check(m.IndexOf("tw_request", StringComparison.Ordinal) < 0, "only the relay struct is blamed");
            m = TwLibrary.FindMismatch(TwLibrary.AbiVersion, new ulong[] { 96, 160, 128, 256, 256, 320, 64, 128, 256, 128, 1248, 128, 64, 304, 80 });
            Contains(m, "sizeof(tw_security_config) is 1248 in the library, 1240 in C#", "a security config of another size");
            Check(m.IndexOf("tw_relay_player_stats", StringComparison.Ordinal) < 0, "only the security struct is blamed");
            m = TwLibrary.FindMismatch(TwLibrary.AbiVersion, new ulong[] { 96, 160, 128, 256, 256, 320, 64, 128, 256, 128, 1240, 136, 64, 304, 80 });
            Contains(m, "sizeof(tw_network_stats) is 136 in the library, 128 in C#", "network stats of another size");
            m = TwLibrary.FindMismatch(TwLibrary.AbiVersion, new ulong[] { 96, 160, 128, 256, 256, 320, 64, 128, 256, 128, 1240, 128, 72, 304, 80 });
            Contains(m, "sizeof(tw_session_message_stats) is 72 in the library, 64 in C#", "message stats of another size");
            m = TwLibrary.FindMismatch(TwLibrary.AbiVersion, new ulong[] { 96, 160, 128, 256, 256, 320, 64, 128, 256, 128, 1240, 128, 64, 312, 80 });
            Contains(m, "sizeof(tw_player_identity) is 312 in the library, 304 in C#", "a player identity of another size");
            Check(m.IndexOf("tw_session_message_stats", StringComparison.Ordinal) < 0, "only the identity struct is blamed");
            m = TwLibrary.FindMismatch(TwLibrary.AbiVersion, new ulong[] { 96, 160, 128, 256, 256, 320, 64, 128, 256, 128, 1240, 128, 64, 304, 88 });
            Contains(m, "sizeof(tw_rendezvous_stats) is 88 in the library, 80 in C#", "rendezvous stats of another size");
            Check(m.IndexOf("tw_player_identity", StringComparison.Ordinal) < 0, "only the rendezvous struct is blamed");
            Throws<ArgumentException>(() => TwLibrary.FindMismatch(TwLibrary.AbiVersion, new ulong[] { 96 }), "too few sizes");
        }

        private static void StaleLibraryIsRefused()
        {
            TickwireAbiException e = Throws<TickwireAbiException>(() => TwLibrary.EnsureCompatible(), "EnsureCompatible");
            Console.WriteLine("  the message: " + e.Message);
            Contains(e.Message, "does not match these C# bindings", "message");
            Contains(e.Message, "stale native library", "message names the cause");
            Equal(TwResult.VersionMismatch, e.Code, "code");
            // Every entry point checks first: no host is created on a stale library.
            Throws<TickwireAbiException>(() => new TwHost("127.0.0.1:0"), "new TwHost");
            Throws<TickwireAbiException>(() => TwHostConfig.Default(), "TwHostConfig.Default");
            Throws<TickwireAbiException>(() => TwSessionConfig.Default(), "TwSessionConfig.Default");
            Throws<TickwireAbiException>(() => new TwSession(new TwSessionConfig()), "new TwSession");
        }

        private static void PreRelayLibraryIsRefused()
        {
            // Its ABI number and struct sizes match (the relay fields took reserved bytes):
            // only the missing size getter tells it apart, and the message must say so.
            TickwireAbiException e = Throws<TickwireAbiException>(() => TwLibrary.EnsureCompatible(), "EnsureCompatible");
            Console.WriteLine("  the message: " + e.Message);
            Contains(e.Message, "lacks a function these bindings need", "message");
            Contains(e.Message, "tw_relay_player_stats_size", "names the missing function");
            Contains(e.Message, "older than the bindings", "names the cause");
            Check(e.InnerException is EntryPointNotFoundException, "the EntryPointNotFoundException is the inner exception");
            Throws<TickwireAbiException>(() => TwSessionConfig.RelayServer(2, 2, "127.0.0.1:0"), "TwSessionConfig.RelayServer");
            Throws<TickwireAbiException>(() => new TwSession(new TwSessionConfig()), "new TwSession");
        }

        private static void PreSecurityLibraryIsRefused()
        {
            // Its ABI number and struct sizes match (the security pointer and counters took
            // reserved bytes): only the missing size getter tells it apart. Accepted, it would
            // read TwHostConfig.Security as reserved bytes and speak an unencrypted protocol.
            TickwireAbiException e = Throws<TickwireAbiException>(() => TwLibrary.EnsureCompatible(), "EnsureCompatible");
            Console.WriteLine("  the message: " + e.Message);
            Contains(e.Message, "lacks a function these bindings need", "message");
            Contains(e.Message, "tw_security_config_size", "names the missing function");
            Check(e.InnerException is EntryPointNotFoundException, "the EntryPointNotFoundException is the inner exception");
            Throws<TickwireAbiException>(() => new TwSecurity(), "new TwSecurity");
            Throws<TickwireAbiException>(() => TwSecurity.GenerateKey(), "TwSecurity.GenerateKey");
            Throws<TickwireAbiException>(() => new TwHost("127.0.0.1:0"), "new TwHost");
        }

        private static void PreNatLibraryIsRefused()
        {
            // Its ABI number and struct sizes match (tw_network_stats.path and path_address took
            // reserved bytes): only the missing size getter tells it apart. Accepted, it would have
            // no rendezvous, and TwNetworkStats.Path would stay None.
            TickwireAbiException e = Throws<TickwireAbiException>(() => TwLibrary.EnsureCompatible(), "EnsureCompatible");
            Console.WriteLine("  the message: " + e.Message);
            Contains(e.Message, "lacks a function these bindings need", "message");
            Contains(e.Message, "tw_rendezvous_stats_size", "names the missing function");
            Check(e.InnerException is EntryPointNotFoundException, "the EntryPointNotFoundException is the inner exception");
            Throws<TickwireAbiException>(() => new TwRendezvous("127.0.0.1:0", new byte[32], 1), "new TwRendezvous");
            Throws<TickwireAbiException>(() => TwMatchClaim.Create(1, 0, 2), "TwMatchClaim.Create");
            Throws<TickwireAbiException>(() => new TwSession(new TwSessionConfig()), "new TwSession");
        }

        private static void MissingLibrary()
        {
            TickwireAbiException e = Throws<TickwireAbiException>(() => new TwHost("127.0.0.1:0"), "new TwHost");
            Console.WriteLine("  the message: " + e.Message);
            Contains(e.Message, "native tickwire library was not found", "message");
            Check(e.InnerException is DllNotFoundException, "the DllNotFoundException is the inner exception");
            e = Throws<TickwireAbiException>(() => new TwSession(new TwSessionConfig()), "new TwSession");
            Contains(e.Message, "native tickwire library was not found", "the same message for a session");
            // The TwLibrary helpers threw the raw DllNotFoundException.
            Action[] helpers =
            {
                () => { uint v = TwLibrary.NativeVersion; },
                () => { string v = TwLibrary.NativeVersionString; },
                () => { uint v = TwLibrary.NativeAbiVersion; },
                () => TwLibrary.ResultName(TwResult.Ok),
                () => TwLibrary.LastErrorMessage(),
                () => TwLibrary.EnsureCompatible(),
                () => TwSecurity.GenerateKey(),
            };
            string[] names =
            {
                "NativeVersion", "NativeVersionString", "NativeAbiVersion", "ResultName", "LastErrorMessage",
                "EnsureCompatible", "TwSecurity.GenerateKey",
            };
            string file = Path.DirectorySeparatorChar == '\\' ? "tickwire.dll" : "libtickwire.so";
            for (int i = 0; i < helpers.Length; i++)
            {
                e = Throws<TickwireAbiException>(helpers[i], names[i]);
                Contains(e.Message, "native tickwire library was not found", names[i] + ": says what is missing");
                Contains(e.Message, file, names[i] + ": names the library file");
                Contains(e.Message, AppDomain.CurrentDomain.BaseDirectory, names[i] + ": names where it was looked for");
                Contains(e.Message, Path.DirectorySeparatorChar == '\\' ? "PATH" : "LD_LIBRARY_PATH", names[i] + ": and the library path");
                Check(e.InnerException is DllNotFoundException, names[i] + ": the DllNotFoundException is the inner exception");
            }
        }

        private static readonly Dictionary<string, Type> s_mirrors = new Dictionary<string, Type>
        {
            { "tw_host_config", typeof(TwHostConfig) },
            { "tw_link_sim_config", typeof(TwLinkSimConfig) },
            { "tw_event", typeof(TwEvent) },
            { "tw_event_data", typeof(TwEventData) },
            { "tw_event_connected", typeof(TwEventConnected) },
            { "tw_event_disconnected", typeof(TwEventDisconnected) },
            { "tw_event_message", typeof(TwEventMessage) },
            { "tw_event_fatal", typeof(TwEventFatal) },
            { "tw_peer_stats", typeof(TwPeerStats) },
            { "tw_host_stats", typeof(TwHostStats) },
            { "tw_session_config", typeof(TwSessionConfig) },
            { "tw_request", typeof(TwRequest) },
            { "tw_session_event_peer", typeof(TwSessionEventPeer) },
            { "tw_session_event_player", typeof(TwSessionEventPlayer) },
            { "tw_session_event_tick", typeof(TwSessionEventTick) },
            { "tw_session_event_desync", typeof(TwSessionEventDesync) },
            { "tw_session_event_mismatch", typeof(TwSessionEventMismatch) },
            { "tw_session_event_relay", typeof(TwSessionEventRelay) },
            { "tw_session_event_rejected", typeof(TwSessionEventRejected) },
            { "tw_session_event_fatal", typeof(TwSessionEventFatal) },
            { "tw_session_event_message", typeof(TwSessionEventMessage) },
            { "tw_session_event_progress", typeof(TwSessionEventProgress) },
            { "tw_session_event_input_delay", typeof(TwSessionEventInputDelay) },
            { "tw_session_event_path", typeof(TwSessionEventPath) },
            { "tw_session_event_refusal", typeof(TwSessionEventRefusal) },
            { "tw_session_event_data", typeof(TwSessionEventData) },
            { "tw_session_event", typeof(TwSessionEvent) },
            { "tw_session_stats", typeof(TwSessionStats) },
            { "tw_relay_player_stats", typeof(TwRelayPlayerStats) },
            { "tw_security_config", typeof(TwSecurityConfig) },
            { "tw_session_message_stats", typeof(TwSessionMessageStats) },
            { "tw_network_stats", typeof(TwNetworkStats) },
            { "tw_player_identity", typeof(TwPlayerIdentity) },
            { "tw_datagram", typeof(TwDatagram) },
            { "tw_rendezvous_stats", typeof(TwRendezvousStats) },
        };

        private static string Pascal(string snake)
        {
            StringBuilder sb = new StringBuilder();
            foreach (string part in snake.Split('_'))
            {
                if (part.Length > 0)
                {
                    sb.Append(char.ToUpperInvariant(part[0])).Append(part.Substring(1));
                }
            }
            return sb.ToString();
        }

        private static void OffsetsMatchC(string file)
        {
            // Lines: "sizeof <struct> <n>" and "offsetof <struct> <field> <n>".
            int fields = 0;
            var seen = new Dictionary<string, bool>();
            foreach (string line in File.ReadAllLines(file))
            {
                string[] w = line.Split(' ');
                if (w.Length == 3 && w[0] == "sizeof")
                {
                    Check(s_mirrors.ContainsKey(w[1]), "C# mirrors " + w[1]);
                    Equal(int.Parse(w[2]), Marshal.SizeOf(s_mirrors[w[1]]), "sizeof " + w[1]);
                    seen[w[1]] = true;
                }
                else if (w.Length == 4 && w[0] == "offsetof")
                {
                    Type t = s_mirrors[w[1]];
                    string field = Pascal(w[2]);
                    Equal(int.Parse(w[3]), (int)Marshal.OffsetOf(t, field), "offsetof(" + w[1] + ", " + w[2] + ") vs " + t.Name + "." + field);
                    Equal(t.GetFields().Length, CountFieldsIn(file, w[1]), "field count of " + w[1]);
                    fields++;
                }
            }
            Equal(s_mirrors.Count, seen.Count, "structs compared");
            Check(fields > 130, "compared " + fields + " fields");
        }

        /// <summary>#define prefixes whose constants a C# enum mirrors (the others are TwConstants / TwLibrary fields).</summary>
        private static readonly Dictionary<string, Type> s_defineEnums = new Dictionary<string, Type>
        {
            { "TW_CHANNEL_", typeof(TwChannel) },
            { "TW_REQUEST_FLAG_", typeof(TwRequestFlags) },
        };

        /// <summary>A name compared without case and underscores: TW_SESSION_MODE_P2P's "P2P" is TwSessionMode.P2P.</summary>
        private static string Loose(string name)
        {
            return name.Replace("_", "").ToLowerInvariant();
        }

        private static void EnumsAndConstantsMatchC(string file)
        {
            // Lines: "enum <enum> <ENUMERATOR> <value>" and "define <NAME> <value>".
            Assembly tw = typeof(TwSession).Assembly;
            var seen = new Dictionary<Type, int>();
            int enumerators = 0;
            int defines = 0;
            foreach (string line in File.ReadAllLines(file))
            {
                string[] w = line.Split(' ');
                if (w.Length == 4 && w[0] == "enum")
                {
                    Type t = tw.GetType("Tickwire." + Pascal(w[1]));
                    Check(t != null && t.IsEnum, "C# mirrors enum " + w[1] + " as Tickwire." + Pascal(w[1]));
                    string prefix = w[1].ToUpperInvariant() + "_";
                    Check(w[2].StartsWith(prefix, StringComparison.Ordinal), w[2] + " starts with " + prefix);
                    CheckEnumMember(t, w[2].Substring(prefix.Length), long.Parse(w[3]), w[2]);
                    seen[t] = seen.ContainsKey(t) ? seen[t] + 1 : 1;
                    enumerators++;
                }
                else if (w.Length == 3 && w[0] == "define")
                {
                    CheckDefine(w[1], ulong.Parse(w[2]));
                    defines++;
                }
            }
            // The other way round: every member of a mirrored enum is in the header.
            foreach (KeyValuePair<Type, int> e in seen)
            {
                Equal(e.Value, Enum.GetValues(e.Key).Length, "members of " + e.Key.Name + " (the header's enumerators)");
            }
            foreach (KeyValuePair<string, Type> e in s_defineEnums)
            {
                int inHeader = 0;
                foreach (string line in File.ReadAllLines(file))
                {
                    inHeader += line.StartsWith("define " + e.Key, StringComparison.Ordinal) ? 1 : 0;
                }
                int members = 0;
                foreach (object v in Enum.GetValues(e.Value))
                {
                    members += Convert.ToUInt64(v) != 0 || e.Value != typeof(TwRequestFlags) ? 1 : 0; // TwRequestFlags.None is C#'s own
                }
                Equal(inHeader, members, "members of " + e.Value.Name + " (the header's " + e.Key + "* constants)");
            }
            Check(enumerators > 100 && seen.Count == 22, "compared " + enumerators + " enumerators of " + seen.Count + " enums");
            Check(defines >= 13, "compared " + defines + " constants");
        }

        private static void CheckEnumMember(Type t, string cName, long value, string what)
        {
            foreach (string member in Enum.GetNames(t))
            {
                if (Loose(member) == Loose(cName))
                {
                    Equal(value, Convert.ToInt64(Enum.Parse(t, member)), what + " = " + t.Name + "." + member);
                    return;
                }
            }
            throw new TestFailure(t.Name + " has no member for " + what);
        }

        private static void CheckDefine(string name, ulong value)
        {
            foreach (KeyValuePair<string, Type> e in s_defineEnums)
            {
                if (name.StartsWith(e.Key, StringComparison.Ordinal))
                {
                    CheckEnumMember(e.Value, name.Substring(e.Key.Length), (long)value, name);
                    return;
                }
            }
            uint v = TwLibrary.NativeVersion;
            switch (name)
            {
                // The header's version is the library's it was generated with: tw_version().
                case "TW_VERSION_MAJOR": Equal((ulong)((v >> 16) & 0xff), value, name); return;
                case "TW_VERSION_MINOR": Equal((ulong)((v >> 8) & 0xff), value, name); return;
                case "TW_VERSION_PATCH": Equal((ulong)(v & 0xff), value, name); return;
            }
            string field = Pascal(name.Substring(3).ToLowerInvariant()); // TW_NO_PLAYER -> NoPlayer
            foreach (Type holder in new[] { typeof(TwConstants), typeof(TwLibrary) })
            {
                FieldInfo f = holder.GetField(field, BindingFlags.Public | BindingFlags.Static);
                if (f != null && f.IsLiteral)
                {
                    Equal(value, Convert.ToUInt64(f.GetRawConstantValue()), name + " = " + holder.Name + "." + field);
                    return;
                }
            }
            throw new TestFailure("no C# constant mirrors " + name + " (TwConstants." + field + ")");
        }

        private static int CountFieldsIn(string file, string structName)
        {
            int n = 0;
            foreach (string line in File.ReadAllLines(file))
            {
                if (line.StartsWith("offsetof " + structName + " ", StringComparison.Ordinal))
                {
                    n++;
                }
            }
            return n;
        }
    }
}
