// The security tests: TwSecurity (settings in wiped unmanaged memory), TwSecurity.GenerateKey
// and TwConnectToken.Generate, and what the library does with them over real UDP on
// 127.0.0.1: a match secret shared or not, insecure plaintext on one end only, a relay-style
// host admitting connect-token holders (and refusing a token for another address, made with
// another key, or already in use), a relay session whose client joins with a token, and
// what a relay server's engine learns of each token holder (its client id and user data).
// Part of the test program (Program is partial).

using System;
using System.Collections.Generic;
using Tickwire;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        private static void RunSecurityTests()
        {
            Run("security: TwSecurity defaults, setters, lengths, Dispose", SecuritySettings);
            Run("security: GenerateKey and TwConnectToken.Generate; bad arguments throw with the library's message", SecurityKeysAndTokens);
            Run("security: bad settings throw TickwireException naming the field at create", SecurityBadSettings);
            Run("security: a shared match secret connects; another secret is refused (DeniedUnverified: unauthenticated)", SecurityMatchSecret);
            Run("security: insecure plaintext on one end only is refused (SecurityMismatch); on both ends connects", SecurityPlaintext);
            Run("security: connect tokens: admitted; another address, another key, in use: refused", SecurityConnectTokens);
            Run("security: a relay session admits a client with a token, refuses one with a foreign token", SecurityRelaySession);
            Run("security: all-zero secrets and keys, and a spectator secret equal to the match secret, are refused naming the field", SecurityZeroSecretsRefused);
            Run("security: a relay server sees each token holder's client id and user data (PlayerJoined, GetPlayerIdentity); a free slot is Empty", SecurityRelayIdentity);
        }

        // --- helpers ---------------------------------------------------------------------------

        /// <summary>A free address on 127.0.0.1, found by binding port 0 (a server with a connect key needs its port first).</summary>
        private static string FreeLocalAddress()
        {
            using (TwHost probe = new TwHost("127.0.0.1:0"))
            {
                return probe.LocalAddress;
            }
        }

        private static TwHostConfig ServerConfig()
        {
            TwHostConfig c = TwHostConfig.Default();
            c.MaxClients = 4;
            return c;
        }

        /// <summary>
        /// Connects client to server and runs both until the client has a Connected or a
        /// Disconnected event for that connection; returns it. The server's events go to serverEvents.
        /// </summary>
        private static TwEvent ConnectOutcome(TwHost server, TwHost client, string address, List<TwEvent> serverEvents)
        {
            uint peer = client.Connect(address);
            Timer sw = Timer.StartNew();
            while (sw.ElapsedMilliseconds < DeadlineMs)
            {
                server.Flush();
                client.Flush();
                TwEvent ev;
                while (server.TryPollEvent(out ev))
                {
                    serverEvents.Add(ev);
                }
                while (client.TryPollEvent(out ev))
                {
                    if (ev.Peer == peer && (ev.Kind == TwEventKind.Connected || ev.Kind == TwEventKind.Disconnected))
                    {
                        return ev;
                    }
                }
                System.Threading.Thread.Sleep(1);
            }
            throw new TestFailure("timed out after " + DeadlineMs + " ms waiting for the connection to " + address);
        }

        private static void Connected(TwEvent ev, string what)
        {
            Check(ev.Kind == TwEventKind.Connected,
                  what + ": expected Connected, got " + ev.Kind + (ev.Kind == TwEventKind.Disconnected ? " (" + ev.Data.Disconnected.Reason + ")" : ""));
        }

        /// <summary>
        /// A client host that gives a handshake up after 1 s: a refusal that cannot be
        /// authenticated (a wrong or missing credential) is only a hint, so the client tries
        /// until its connect timeout and then reports DeniedUnverified.
        /// </summary>
        private static TwHostConfig Impatient()
        {
            TwHostConfig c = TwHostConfig.Default();
            c.ConnectTimeoutMs = 1000;
            return c;
        }

        private static void Refused(TwEvent ev, TwDisconnectReason reason, string what)
        {
            Check(ev.Kind == TwEventKind.Disconnected, what + ": expected Disconnected, got " + ev.Kind);
            Equal(reason, ev.Data.Disconnected.Reason, what + ": the reason");
        }

        /// <summary>
        /// The host's figures once done(figures) holds (they are a snapshot a few tens of ms
        /// old), or the last ones at the deadline.
        /// </summary>
        private static TwHostStats HostStatsWhen(TwHost h, Func<TwHostStats, bool> done)
        {
            Timer sw = Timer.StartNew();
            TwHostStats st;
            while (true)
            {
                Equal(TwResult.Ok, h.GetStats(out st), "GetStats");
                if (done(st) || sw.ElapsedMilliseconds > DeadlineMs)
                {
                    return st;
                }
                h.Flush();
                System.Threading.Thread.Sleep(5);
            }
        }

        // --- tests -------------------------------------------------------------------------------

        private static void SecuritySettings()
        {
            TwSecurityConfig raw = TwSecurityConfig.Default();
            Equal(1240u, raw.StructSize, "TwSecurityConfig.Default().StructSize");
            Equal(TwSecurityMode.Encrypted, raw.Mode, "the default mode");

            byte[] key = TwSecurity.GenerateKey();
            using (TwSecurity s = new TwSecurity())
            {
                Equal(TwSecurityMode.Encrypted, s.Mode, "default mode");
                Check(!s.HasMatchSecret && !s.HasSpectatorSecret && !s.HasConnectKey && !s.HasConnectToken, "nothing set");
                s.SetMatchSecret(key);
                s.SetSpectatorSecret(key);
                Check(s.HasMatchSecret && s.HasSpectatorSecret, "secrets set");
                s.ClearMatchSecret();
                s.ClearSpectatorSecret();
                Check(!s.HasMatchSecret && !s.HasSpectatorSecret, "secrets cleared");
                s.SetConnectKey(key, "203.0.113.7:7000");
                Check(s.HasConnectKey, "connect key set");
                Equal("203.0.113.7:7000", s.PublicAddress, "public address");
                s.ClearConnectKey();
                Check(!s.HasConnectKey && s.PublicAddress.Length == 0, "connect key and address cleared");
                s.SetConnectToken(new byte[TwConstants.ConnectTokenSize]);
                Check(s.HasConnectToken, "token set");
                s.ClearConnectToken();
                Check(!s.HasConnectToken, "token cleared");
                s.Mode = TwSecurityMode.InsecurePlaintext;
                Equal(TwSecurityMode.InsecurePlaintext, s.Mode, "mode set");

                Throws<ArgumentException>(() => s.SetMatchSecret(new byte[31]), "a 31-byte match secret");
                Throws<ArgumentException>(() => s.SetSpectatorSecret(new byte[33]), "a 33-byte spectators' secret");
                Throws<ArgumentException>(() => s.SetConnectKey(new byte[16], "127.0.0.1:7000"), "a 16-byte connect key");
                Throws<ArgumentException>(() => s.SetConnectKey(key, new string('1', 64)), "a 64-byte public address");
                Throws<ArgumentNullException>(() => s.SetConnectKey(key, null), "a null public address");
                Throws<ArgumentException>(() => s.SetConnectToken(new byte[5]), "a 5-byte token");
                Check(!s.HasConnectKey && !s.HasConnectToken, "a refused setter changes nothing");
            }

            TwSecurity d = TwSecurity.ForMatch(key);
            Check(d.HasMatchSecret && !d.IsDisposed, "ForMatch");
            d.Dispose();
            d.Dispose(); // twice is fine
            Check(d.IsDisposed, "IsDisposed");
            Throws<ObjectDisposedException>(() => d.SetMatchSecret(key), "a setter after Dispose");
            Throws<ObjectDisposedException>(() => { TwSecurityMode m = d.Mode; }, "a getter after Dispose");
            Throws<ObjectDisposedException>(() => new TwHost(TwHostConfig.Default(), "127.0.0.1:0", d), "a host with disposed settings");
            Throws<ObjectDisposedException>(() => new TwSession(SessionConfig(TwSessionMode.P2P), d), "a session with disposed settings");

            // Forgotten settings are wiped and freed by the finalizer; nothing crashes.
            for (int i = 0; i < 100; i++)
            {
                TwSecurity.ForSpectator(key);
            }
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }

        private static void SecurityKeysAndTokens()
        {
            byte[] a = TwSecurity.GenerateKey();
            byte[] b = TwSecurity.GenerateKey();
            Equal(TwConstants.KeySize, a.Length, "key length");
            Check(!Same(a, b), "two keys differ");
            ThrowsTw(TwResult.InvalidArgument, () => TwSecurity.GenerateKey(new byte[31]), "GenerateKey into 31 bytes");
            Contains(TwLibrary.LastErrorMessage(), "out_size", "the message names out_size");

            byte[] token = TwConnectToken.Generate(a, 0x1234, 42, "127.0.0.1:7000,[::1]:7000", 60, 5, new byte[] { 1, 2, 3 });
            Equal(TwConstants.ConnectTokenSize, token.Length, "token length");
            Equal((byte)1, token[0], "token version byte");
            byte[] token2 = TwConnectToken.Generate(a, 0x1234, 42, new[] { "127.0.0.1:7000", "[::1]:7000" }, 60);
            Check(!Same(token, token2), "two tokens differ (fresh nonce and key)");
            byte[] into = new byte[TwConstants.ConnectTokenSize];
            TwConnectToken.Generate(a, 0x1234, 43, "127.0.0.1:7000", 60, 0, default(ReadOnlySpan<byte>), into);
            Equal((byte)1, into[0], "a token minted into a buffer");

            TickwireException e;
            e = ThrowsTw(TwResult.InvalidArgument, () => TwConnectToken.Generate(new byte[31], 1, 1, "127.0.0.1:7000", 60), "a 31-byte key");
            Contains(e.NativeMessage, "key_size", "names key_size");
            e = ThrowsTw(TwResult.InvalidArgument, () => TwConnectToken.Generate(a, 1, 1, "localhost:7000", 60), "a name, not an address");
            Contains(e.NativeMessage, "server_addresses", "names server_addresses");
            e = ThrowsTw(TwResult.InvalidArgument, () => TwConnectToken.Generate(a, 1, 1, "", 60), "no address");
            Contains(e.NativeMessage, "server_addresses", "names server_addresses (none)");
            string nine = "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5,127.0.0.1:6,127.0.0.1:7,127.0.0.1:8,127.0.0.1:9";
            e = ThrowsTw(TwResult.InvalidArgument, () => TwConnectToken.Generate(a, 1, 1, nine, 60), "nine addresses");
            Contains(e.NativeMessage, "server_addresses", "names server_addresses (nine)");
            e = ThrowsTw(TwResult.InvalidArgument, () => TwConnectToken.Generate(a, 1, 1, "127.0.0.1:7000", 0), "expire_seconds 0");
            Contains(e.NativeMessage, "expire_seconds", "names expire_seconds");
            e = ThrowsTw(TwResult.InvalidArgument,
                         () => TwConnectToken.Generate(a, 1, 1, "127.0.0.1:7000", 60, 0, new byte[TwConstants.ConnectTokenUserDataSize + 1]),
                         "257 bytes of user data");
            Contains(e.NativeMessage, "user_data", "names user_data");
            e = ThrowsTw(TwResult.InvalidArgument,
                         () => TwConnectToken.Generate(a, 1, 1, "127.0.0.1:7000", 60, 0, default(ReadOnlySpan<byte>), new byte[100]),
                         "a 100-byte token buffer");
            Contains(e.NativeMessage, "out_size", "names out_size");
            Throws<ArgumentNullException>(() => TwConnectToken.Generate(a, 1, 1, (string)null, 60), "null addresses");
            Throws<ArgumentNullException>(() => TwConnectToken.Generate(a, 1, 1, (string[])null, 60), "a null address list");
        }

        private static void SecurityBadSettings()
        {
            byte[] key = TwSecurity.GenerateKey();
            TickwireException e;
            using (TwSecurity s = TwSecurity.ForMatch(key))
            {
                s.Mode = TwSecurityMode.InsecurePlaintext;
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwHost(TwHostConfig.Default(), "127.0.0.1:0", s), "plaintext with a secret");
                Contains(e.NativeMessage, "tw_security_config.mode", "names the mode");
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(SessionConfig(TwSessionMode.P2P), s), "a session: plaintext with a secret");
                Contains(e.NativeMessage, "tw_security_config.mode", "a session's message names the mode");
            }
            using (TwSecurity s = TwSecurity.ForRelayServer(key, "not an address"))
            {
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwHost(ServerConfig(), "127.0.0.1:0", s), "a bad public address");
                Contains(e.NativeMessage, "public_address", "names public_address");
            }
            using (TwSecurity s = TwSecurity.ForRelayServer(key, ""))
            {
                // Empty: the bound address (port included), which 0.0.0.0 is not.
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwHost(ServerConfig(), "0.0.0.0:0", s), "no public address, any IP");
                Contains(e.NativeMessage, "public_address", "names public_address (empty)");
            }
            using (TwSecurity s = TwSecurity.ForRelayServer(key, "127.0.0.1:7000"))
            {
                s.SetMatchSecret(key);
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwHost(ServerConfig(), "127.0.0.1:0", s), "a connect key and a match secret");
                Contains(e.NativeMessage, "has_connect_key", "names has_connect_key");
            }
            byte[] token = TwConnectToken.Generate(key, 0x77, 1, "127.0.0.1:7000", 60);
            TwHostConfig cfg = TwHostConfig.Default();
            using (TwSecurity s = TwSecurity.ForRelayClient(token))
            {
                cfg.ProtocolId = 0x78;
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwHost(cfg, "127.0.0.1:0", s), "a token for another protocol id");
                Contains(e.NativeMessage, "connect_token", "names connect_token (protocol id)");
            }
            token[0] ^= 0xff;
            using (TwSecurity s = TwSecurity.ForRelayClient(token))
            {
                cfg.ProtocolId = 0x77;
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwHost(cfg, "127.0.0.1:0", s), "a token with a wrong version byte");
                Contains(e.NativeMessage, "connect_token", "names connect_token (version)");
            }
            // The raw struct through the IntPtr field: a wrong struct_size is a version mismatch.
            TwSecurityConfig raw = TwSecurityConfig.Default();
            raw.StructSize = 1000;
            TwHostConfig rawCfg = TwHostConfig.Default();
            rawCfg.Security = (IntPtr)(&raw);
            e = ThrowsTw(TwResult.VersionMismatch, () => new TwHost(rawCfg, "127.0.0.1:0"), "struct_size 1000");
            Contains(e.NativeMessage, "tw_security_config.struct_size", "names struct_size");
            raw = TwSecurityConfig.Default();
            raw.Mode = (TwSecurityMode)7;
            rawCfg.Security = (IntPtr)(&raw);
            e = ThrowsTw(TwResult.InvalidArgument, () => new TwHost(rawCfg, "127.0.0.1:0"), "mode 7");
            Contains(e.NativeMessage, "mode 7", "names the mode");
            // TwSecurity overrides a raw pointer; null keeps it.
            using (TwSecurity s = new TwSecurity())
            using (TwHost h = new TwHost(rawCfg, "127.0.0.1:0", s))
            {
                Check(h.LocalAddress.StartsWith("127.0.0.1:", StringComparison.Ordinal), "TwSecurity replaced the bad raw pointer");
            }
        }

        private static void SecurityMatchSecret()
        {
            byte[] secret = TwSecurity.GenerateKey();
            byte[] other = TwSecurity.GenerateKey();
            var serverEvents = new List<TwEvent>();
            TwHost server;
            using (TwSecurity s = TwSecurity.ForMatch(secret))
            {
                server = new TwHost(ServerConfig(), "127.0.0.1:0", s);
            } // the host keeps its own copy: the settings may go now
            using (server)
            {
                TwHost good;
                using (TwSecurity s = TwSecurity.ForMatch(secret))
                {
                    good = new TwHost(TwHostConfig.Default(), "127.0.0.1:0", s);
                }
                using (good)
                using (TwSecurity s = TwSecurity.ForMatch(other))
                using (TwHost stranger = new TwHost(Impatient(), "127.0.0.1:0", s))
                using (TwHost open = new TwHost(Impatient(), "127.0.0.1:0"))
                {
                    Connected(ConnectOutcome(server, good, server.LocalAddress, serverEvents), "the same secret");
                    Refused(ConnectOutcome(server, stranger, server.LocalAddress, serverEvents), TwDisconnectReason.DeniedUnverified, "another secret");
                    Refused(ConnectOutcome(server, open, server.LocalAddress, serverEvents), TwDisconnectReason.DeniedUnverified, "no secret");
                    TwHostStats st = HostStatsWhen(server, x => x.AuthRefused >= 2);
                    // Each refused client keeps answering until its 1 s connect timeout (the
                    // refusal is unauthenticated, so only a hint to it): one response per
                    // 100 ms resend, each refused and counted.
                    Check(st.AuthRefused >= 2 && st.AuthRefused <= 2 * 12, "the server counts the refused handshakes: " + st.AuthRefused);
                    Equal(0UL, st.SecurityMismatch, "no security mismatch");
                    Equal(0UL, st.Forged, "nothing forged");
                    Equal(1, CountKind(serverEvents, TwEventKind.Connected), "the server saw one connection");
                    uint peer = serverEvents.Find(ev => ev.Kind == TwEventKind.Connected).Peer;
                    TwPeerStats ps;
                    Equal(TwResult.Ok, server.GetPeerStats(peer, out ps), "peer stats");
                    Equal(0UL, ps.Replayed, "nothing replayed");
                    Equal(0UL, ps.Forged, "nothing forged on the connection");
                }
            }
        }

        private static void SecurityPlaintext()
        {
            var serverEvents = new List<TwEvent>();
            using (TwHost server = new TwHost(ServerConfig(), "127.0.0.1:0"))
            using (TwSecurity plain = TwSecurity.InsecurePlaintext())
            using (TwHost client = new TwHost(TwHostConfig.Default(), "127.0.0.1:0", plain))
            {
                Refused(ConnectOutcome(server, client, server.LocalAddress, serverEvents), TwDisconnectReason.SecurityMismatch, "plaintext to encrypted");
                Check(HostStatsWhen(server, x => x.SecurityMismatch >= 1).SecurityMismatch >= 1, "the server counts the mismatch");
            }
            using (TwSecurity plain = TwSecurity.InsecurePlaintext())
            using (TwHost server = new TwHost(ServerConfig(), "127.0.0.1:0", plain))
            using (TwHost client = new TwHost(TwHostConfig.Default(), "127.0.0.1:0", plain))
            {
                Connected(ConnectOutcome(server, client, server.LocalAddress, serverEvents), "plaintext on both ends");
            }
        }

        private static void SecurityConnectTokens()
        {
            byte[] key = TwSecurity.GenerateKey();
            string address = FreeLocalAddress();
            TwHostConfig cfg = ServerConfig();
            var serverEvents = new List<TwEvent>();
            using (TwSecurity s = TwSecurity.ForRelayServer(key, address))
            using (TwHost server = new TwHost(cfg, address, s))
            {
                byte[] token = TwConnectToken.Generate(key, cfg.ProtocolId, 1, address, 60, 0, new byte[] { 7 });
                byte[] elsewhere = TwConnectToken.Generate(key, cfg.ProtocolId, 2, "127.0.0.1:1", 60);
                byte[] foreign = TwConnectToken.Generate(TwSecurity.GenerateKey(), cfg.ProtocolId, 3, address, 60);
                using (TwSecurity t = TwSecurity.ForRelayClient(token))
                using (TwHost holder = new TwHost(TwHostConfig.Default(), "127.0.0.1:0", t))
                using (TwHost copier = new TwHost(TwHostConfig.Default(), "127.0.0.1:0", t))
                using (TwSecurity te = TwSecurity.ForRelayClient(elsewhere))
                using (TwHost wrongAddress = new TwHost(Impatient(), "127.0.0.1:0", te))
                using (TwSecurity tf = TwSecurity.ForRelayClient(foreign))
                using (TwHost wrongKey = new TwHost(Impatient(), "127.0.0.1:0", tf))
                using (TwHost none = new TwHost(Impatient(), "127.0.0.1:0"))
                {
                    Connected(ConnectOutcome(server, holder, address, serverEvents), "a token for this server");
                    Refused(ConnectOutcome(server, copier, address, serverEvents), TwDisconnectReason.TokenInUse, "the same token again");
                    Refused(ConnectOutcome(server, wrongAddress, address, serverEvents), TwDisconnectReason.DeniedUnverified, "a token for another address");
                    Refused(ConnectOutcome(server, wrongKey, address, serverEvents), TwDisconnectReason.DeniedUnverified, "a token made with another key");
                    Refused(ConnectOutcome(server, none, address, serverEvents), TwDisconnectReason.DeniedUnverified, "no token");
                    // One for the token in use (authenticated: final at once), and each of the
                    // three unauthenticated refusals once per resend until the 1 s timeout.
                    ulong refused = HostStatsWhen(server, x => x.AuthRefused >= 4).AuthRefused;
                    Check(refused >= 4 && refused <= 1 + 3 * 12, "the server counts every refusal: " + refused);
                }
            }
        }

        private static void SecurityRelaySession()
        {
            byte[] key = TwSecurity.GenerateKey();
            string address = FreeLocalAddress();
            TwSessionConfig scfg = TwSessionConfig.RelayServer(RelaySlots, SessionGame.InputSize, address);
            TwSession server;
            using (TwSecurity s = TwSecurity.ForRelayServer(key, address))
            {
                server = new TwSession(scfg, s);
            }
            using (server)
            {
                Equal(address, server.LocalAddress, "the server is at its public address");
                SessionGame serverGame = new SessionGame((int)scfg.NumPlayers, server.StateSlots);
                serverGame.RecordAfterAdvance = true;
                server.Start();
                TwSessionConfig ccfg = RelayConfig(TwSessionMode.RelayClient);
                byte[] token = TwConnectToken.Generate(key, ccfg.Host.ProtocolId, 1, address, 60);
                byte[] foreign = TwConnectToken.Generate(TwSecurity.GenerateKey(), ccfg.Host.ProtocolId, 2, address, 60);
                TwSession good, bad;
                using (TwSecurity t = TwSecurity.ForRelayClient(token))
                {
                    good = new TwSession(ccfg, t);
                }
                TwSessionConfig impatient = ccfg;
                impatient.Host.ConnectTimeoutMs = 1000; // an unauthenticated refusal: tried until then
                using (TwSecurity t = TwSecurity.ForRelayClient(foreign))
                {
                    bad = new TwSession(impatient, t);
                }
                using (good)
                using (bad)
                {
                    SessionGame goodGame = new SessionGame((int)ccfg.NumPlayers, good.StateSlots);
                    SessionGame badGame = new SessionGame((int)ccfg.NumPlayers, bad.StateSlots);
                    good.SetServer(address);
                    bad.SetServer(address);
                    good.Start();
                    bad.Start();
                    Timer sw = Timer.StartNew();
                    while (sw.ElapsedMilliseconds < 2 * DeadlineMs &&
                           (goodGame.Count(TwSessionEventKind.Synchronized) == 0 || badGame.Count(TwSessionEventKind.ServerLost) == 0))
                    {
                        serverGame.RelayFrame(server, 0);
                        goodGame.RelayFrame(good, 0);
                        badGame.RelayFrame(bad, 1);
                        System.Threading.Thread.Sleep(2);
                    }
                    Check(goodGame.Count(TwSessionEventKind.Joined) == 1, "the token holder joined");
                    Check(goodGame.Count(TwSessionEventKind.Synchronized) == 1, "the token holder caught up");
                    TwSessionEvent lost;
                    Check(badGame.Find(TwSessionEventKind.ServerLost, out lost), "the client with a foreign token lost the server");
                    Equal(TwDisconnectReason.DeniedUnverified, lost.Data.Relay.DisconnectReason, "why");
                    Equal(0, badGame.Count(TwSessionEventKind.Joined), "the client with a foreign token never joined");
                }
            }
        }

        private static void SecurityZeroSecretsRefused()
        {
            // 32 zero bytes are what an engine sends when it forgot to fill the secret in:
            // the key anyone knows. The library must refuse them by name at create, never
            // run a match that looks protected and is not.
            byte[] zero = new byte[TwConstants.KeySize];
            byte[] key = TwSecurity.GenerateKey();
            TickwireException e;
            using (TwSecurity s = TwSecurity.ForMatch(zero))
            {
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(SessionConfig(TwSessionMode.P2P), s), "a session with an all-zero match secret");
                Contains(e.NativeMessage, "match_secret is all zero bytes", "names match_secret");
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwHost(TwHostConfig.Default(), "127.0.0.1:0", s), "a host with an all-zero match secret");
                Contains(e.NativeMessage, "match_secret is all zero bytes", "a host's message names match_secret");
            }
            using (TwSecurity s = TwSecurity.ForMatch(key))
            {
                s.SetSpectatorSecret(zero);
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(SessionConfig(TwSessionMode.P2P), s), "an all-zero spectator secret");
                Contains(e.NativeMessage, "spectator_secret is all zero bytes", "names spectator_secret");
                s.SetSpectatorSecret(key);
                e = ThrowsTw(TwResult.InvalidArgument, () => new TwSession(SessionConfig(TwSessionMode.P2P), s), "a spectator secret equal to the match secret");
                Contains(e.NativeMessage, "spectator_secret equals match_secret", "names both secrets");
                // The same settings with a secret of their own are taken: the refusals above
                // are about the bytes, not about having a spectator secret at all.
                s.SetSpectatorSecret(TwSecurity.GenerateKey());
                using (TwSession ok = new TwSession(SessionConfig(TwSessionMode.P2P), s))
                {
                    Check(!ok.IsDisposed, "distinct random secrets are accepted");
                }
            }
            string address = FreeLocalAddress();
            using (TwSecurity s = TwSecurity.ForRelayServer(zero, address))
            {
                e = ThrowsTw(TwResult.InvalidArgument,
                             () => new TwSession(TwSessionConfig.RelayServer(RelaySlots, SessionGame.InputSize, address), s),
                             "a relay server with an all-zero connect key");
                Contains(e.NativeMessage, "connect_key is all zero bytes", "names connect_key");
            }
        }

        private static void SecurityRelayIdentity()
        {
            byte[] key = TwSecurity.GenerateKey();
            string address = FreeLocalAddress();
            TwSessionConfig scfg = TwSessionConfig.RelayServer(RelaySlots, SessionGame.InputSize, address);
            TwSession server;
            using (TwSecurity s = TwSecurity.ForRelayServer(key, address))
            {
                server = new TwSession(scfg, s);
            }
            using (server)
            {
                SessionGame serverGame = new SessionGame((int)scfg.NumPlayers, server.StateSlots);
                serverGame.RecordAfterAdvance = true;
                server.Start();
                TwSessionConfig ccfg = RelayConfig(TwSessionMode.RelayClient);
                // Two backend accounts: ids that do not fit 32 bits (the field is 64-bit end to
                // end), user data of different lengths, the second the whole 256 bytes.
                ulong[] ids = { 0x1122334455667788UL, 0x8000000000000042UL };
                byte[][] data = { new byte[] { (byte)'r', (byte)'e', (byte)'d', 0, 7 }, new byte[TwConstants.ConnectTokenUserDataSize] };
                for (int i = 0; i < data[1].Length; i++)
                {
                    data[1][i] = (byte)(255 - i);
                }
                var clients = new List<TwSession>();
                var games = new List<SessionGame>();
                try
                {
                    for (int i = 0; i < 2; i++)
                    {
                        byte[] token = TwConnectToken.Generate(key, ccfg.Host.ProtocolId, ids[i], address, 60, 0, data[i]);
                        using (TwSecurity t = TwSecurity.ForRelayClient(token))
                        {
                            clients.Add(new TwSession(ccfg, t));
                        }
                        games.Add(new SessionGame((int)ccfg.NumPlayers, clients[i].StateSlots));
                        clients[i].SetServer(address);
                        clients[i].Start();
                    }
                    Timer sw = Timer.StartNew();
                    while (sw.ElapsedMilliseconds < 2 * DeadlineMs &&
                           (games[0].Count(TwSessionEventKind.Joined) == 0 || games[1].Count(TwSessionEventKind.Joined) == 0 ||
                            serverGame.Count(TwSessionEventKind.PlayerJoined) < 2))
                    {
                        serverGame.RelayFrame(server, 0);
                        for (int i = 0; i < 2; i++)
                        {
                            games[i].RelayFrame(clients[i], (uint)i);
                        }
                        System.Threading.Thread.Sleep(2);
                    }
                    Equal(2, serverGame.Count(TwSessionEventKind.PlayerJoined), "the server saw two players join");
                    var slotOf = new Dictionary<ulong, uint>();
                    foreach (TwSessionEvent ev in serverGame.Events)
                    {
                        if (ev.Kind == TwSessionEventKind.PlayerJoined)
                        {
                            Equal(TwCredential.ConnectToken, ev.Data.Relay.Credential, "PlayerJoined: the credential");
                            Check(ev.Data.Relay.ClientId == ids[0] || ev.Data.Relay.ClientId == ids[1],
                                  "PlayerJoined: a client id of ours (" + ev.Data.Relay.ClientId.ToString("x") + ")");
                            Check(!slotOf.ContainsKey(ev.Data.Relay.ClientId), "each client id joined once");
                            slotOf[ev.Data.Relay.ClientId] = ev.Data.Relay.Player;
                        }
                    }
                    Equal(2, slotOf.Count, "both client ids were seen");
                    for (int i = 0; i < 2; i++)
                    {
                        // The slot each client was told (Joined) is the slot the server named.
                        TwSessionEvent joined;
                        Check(games[i].Find(TwSessionEventKind.Joined, out joined), "client " + i + " joined");
                        Equal(slotOf[ids[i]], joined.Data.Relay.Player, "client " + i + "'s slot on both ends");
                        TwPlayerIdentity id;
                        Equal(TwResult.Ok, server.GetPlayerIdentity(slotOf[ids[i]], out id), "GetPlayerIdentity of client " + i);
                        Equal(TwCredential.ConnectToken, id.Credential, "client " + i + ": the credential");
                        Equal(ids[i], id.ClientId, "client " + i + ": the token's client id");
                        byte[] got = id.GetUserData();
                        Equal(TwConstants.ConnectTokenUserDataSize, got.Length, "client " + i + ": 256 bytes of user data");
                        for (int b = 0; b < got.Length; b++)
                        {
                            byte want = b < data[i].Length ? data[i][b] : (byte)0;
                            if (got[b] != want)
                            {
                                throw new TestFailure("client " + i + ": user data byte " + b + " is " + got[b] + ", the token had " + want +
                                                      (b >= data[i].Length ? " (zero padding)" : ""));
                            }
                        }
                        // The span copy takes a prefix, for a caller with a smaller buffer.
                        byte* three = stackalloc byte[3];
                        Equal(3, id.CopyUserData(new Span<byte>(three, 3)), "CopyUserData into 3 bytes");
                        Check(three[0] == data[i][0] && three[2] == data[i][2], "CopyUserData copies the first bytes");
                    }
                    // Every other slot is free.
                    int free = 0;
                    for (uint p = 0; p < RelaySlots; p++)
                    {
                        if (p == slotOf[ids[0]] || p == slotOf[ids[1]])
                        {
                            continue;
                        }
                        TwPlayerIdentity none;
                        Equal(TwResult.Empty, server.GetPlayerIdentity(p, out none), "GetPlayerIdentity of free slot " + p);
                        Equal(0UL, none.ClientId, "a free slot gives a zeroed identity");
                        Check(!server.TryGetPlayerIdentity(p, out none), "TryGetPlayerIdentity of a free slot is false");
                        free++;
                    }
                    Equal((int)RelaySlots - 2, free, "free slots checked");
                    TwPlayerIdentity beyond;
                    Equal(TwResult.InvalidArgument, server.GetPlayerIdentity(RelaySlots, out beyond), "a player beyond NumPlayers");
                    Equal(TwResult.InvalidState, clients[0].GetPlayerIdentity(0, out beyond), "a relay client has no player identities");
                }
                finally
                {
                    foreach (TwSession c in clients)
                    {
                        c.Dispose();
                    }
                }
            }
        }

        private static bool Same(byte[] a, byte[] b)
        {
            if (a.Length != b.Length)
            {
                return false;
            }
            for (int i = 0; i < a.Length; i++)
            {
                if (a[i] != b[i])
                {
                    return false;
                }
            }
            return true;
        }

        private static int CountKind(List<TwEvent> events, TwEventKind kind)
        {
            int n = 0;
            foreach (TwEvent ev in events)
            {
                n += ev.Kind == kind ? 1 : 0;
            }
            return n;
        }
    }
}
