// The blittable mirror of tw_security_config (include/tickwire.h), under the rules of
// TwTypes.cs: field order, types and sizes follow the C header exactly, and the test
// program checks the size against tw_security_config_size and every offset against the
// C compiler's offsetof.
//
// Most code does not use this struct directly: TwSecurity (TwSecurity.cs) keeps one in
// unmanaged memory that it wipes when disposed, so that keys and tokens are not copied
// around the managed heap, and the TwHost and TwSession constructors point
// TwHostConfig.Security at it for the duration of the create call only.

using System;
using System.Runtime.InteropServices;

namespace Tickwire
{
    /// <summary>
    /// tw_credential: what a connection's peer proved in its handshake (TwEventConnected,
    /// TwSessionEventPeer and TwSessionEventRelay's Credential, TwPlayerIdentity). Roles
    /// follow it, never the address.
    /// </summary>
    public enum TwCredential : uint
    {
        /// <summary>Nothing: insecure plaintext, or an open endpoint (encrypted, anyone may connect).</summary>
        Open = 0,
        /// <summary>The match's (players') secret.</summary>
        PlayerSecret = 1,
        /// <summary>The spectators' secret. A P2P peer never gives it a player's place.</summary>
        SpectatorSecret = 2,
        /// <summary>A connect token from the game's backend; ClientId is the token's.</summary>
        ConnectToken = 3,
        /// <summary>Seen by a client that showed a connect token: the server opened it, so it holds the backend's key.</summary>
        TokenServer = 4,
    }

    /// <summary>
    /// tw_security_config (1240 bytes): encryption, match and spectator secrets, a relay
    /// server's connect key and public address, a relay client's connect token. Read only
    /// while a host or session is created. See <see cref="TwSecurity"/>.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwSecurityConfig
    {
        public uint StructSize;
        public TwSecurityMode Mode;
        /// <summary>Non-zero: MatchSecret holds the match's secret (P2P).</summary>
        public uint HasMatchSecret;
        /// <summary>Non-zero: SpectatorSecret holds the spectators' secret.</summary>
        public uint HasSpectatorSecret;
        /// <summary>Non-zero: ConnectKey holds the backend's key; only connect-token holders get in.</summary>
        public uint HasConnectKey;
        /// <summary>0 (no token) or TwConstants.ConnectTokenSize: ConnectToken holds a token to show.</summary>
        public uint ConnectTokenSize;
        public fixed byte MatchSecret[32];
        public fixed byte SpectatorSecret[32];
        public fixed byte ConnectKey[32];
        /// <summary>
        /// With HasConnectKey: the address clients reach this host at, NUL-terminated UTF-8
        /// ("203.0.113.7:7000"); tokens must name it. Empty: the bind address, which must
        /// then be a specific IP and port.
        /// </summary>
        public fixed byte PublicAddress[64];
        public fixed byte ConnectToken[1024];
        /// <summary>Must stay zero.</summary>
        public fixed byte Reserved[32];

        /// <summary>The defaults (tw_security_config_init_default): encrypted, no secret, key or token.</summary>
        public static TwSecurityConfig Default()
        {
            TwLibrary.EnsureCompatible();
            TwSecurityConfig c;
            TwResult r = Native.TwNative.tw_security_config_init_default(&c);
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
            return c;
        }
    }
}
