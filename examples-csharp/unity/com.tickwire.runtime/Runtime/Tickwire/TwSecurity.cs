using System;
using System.Runtime.InteropServices;
using Tickwire.Native;

namespace Tickwire
{
    /// <summary>
    /// The security settings of a host or session (a tw_security_config), kept in unmanaged
    /// memory that Dispose wipes (zeroes) and frees: keys and tokens are not copied around
    /// the managed heap. Pass it to the TwHost or TwSession constructor, which points
    /// TwHostConfig.Security at it for the duration of the create call only (the library
    /// copies what it needs); dispose it once the host or session exists.
    ///
    /// Who may connect, and what a host shows when it connects:
    /// <list type="bullet">
    /// <item>P2P: every peer sets the same match secret (<see cref="ForMatch"/>, from the
    /// matchmaker); a stranger without it cannot complete a handshake. A spectator secret
    /// lets spectators in with a secret of their own (a SPECTATOR session sets only that).</item>
    /// <item>RELAY_SERVER: the backend's connect key and the address clients reach the server
    /// at (<see cref="ForRelayServer"/>); only clients with a valid, unexpired connect token
    /// for that address get in, one connection per token at a time.</item>
    /// <item>RELAY_CLIENT: a connect token minted by the backend (<see cref="TwConnectToken"/>),
    /// <see cref="ForRelayClient"/>.</item>
    /// </list>
    /// Without a TwSecurity every connection is still encrypted, and open to anyone.
    ///
    /// Setup-time only: the setters throw ArgumentException for a wrong length (keys and
    /// secrets are TwConstants.KeySize bytes, tokens TwConstants.ConnectTokenSize); the
    /// library checks the rest when the host or session is created (TickwireException,
    /// naming the field). Any call after Dispose throws ObjectDisposedException. Not
    /// thread-safe: set it up on one thread.
    /// </summary>
    public sealed unsafe class TwSecurity : IDisposable
    {
        private readonly SecretMemory _memory;

        /// <summary>The defaults (tw_security_config_init_default): encrypted, no secret, key or token.</summary>
        public TwSecurity()
        {
            TwLibrary.EnsureCompatible();
            _memory = new SecretMemory(sizeof(TwSecurityConfig));
            TwResult r = TwNative.tw_security_config_init_default((TwSecurityConfig*)_memory.DangerousGetHandle());
            if (r != TwResult.Ok)
            {
                TickwireException e = TickwireException.FromLastError(r);
                _memory.Dispose();
                throw e;
            }
        }

        // --- builders ---------------------------------------------------------------------------

        /// <summary>A P2P peer: the match's secret (TwConstants.KeySize bytes), the same on every peer.</summary>
        public static TwSecurity ForMatch(ReadOnlySpan<byte> matchSecret)
        {
            TwSecurity s = new TwSecurity();
            s.SetMatchSecret(matchSecret);
            return s;
        }

        /// <summary>A SPECTATOR session: the spectators' secret the P2P peers were given.</summary>
        public static TwSecurity ForSpectator(ReadOnlySpan<byte> spectatorSecret)
        {
            TwSecurity s = new TwSecurity();
            s.SetSpectatorSecret(spectatorSecret);
            return s;
        }

        /// <summary>
        /// A relay server that admits only connect-token holders: the backend's key
        /// (TwConstants.KeySize bytes) and the address clients reach this server at
        /// ("203.0.113.7:7000"; the tokens must name it).
        /// </summary>
        public static TwSecurity ForRelayServer(ReadOnlySpan<byte> connectKey, string publicAddress)
        {
            TwSecurity s = new TwSecurity();
            s.SetConnectKey(connectKey, publicAddress);
            return s;
        }

        /// <summary>A relay client: the connect token (TwConstants.ConnectTokenSize bytes) the backend gave it.</summary>
        public static TwSecurity ForRelayClient(ReadOnlySpan<byte> connectToken)
        {
            TwSecurity s = new TwSecurity();
            s.SetConnectToken(connectToken);
            return s;
        }

        /// <summary>
        /// No encryption or authentication at all (benchmarks, debugging): anyone on the path can
        /// read, forge and replay packets. Both ends must choose it.
        /// </summary>
        public static TwSecurity InsecurePlaintext()
        {
            TwSecurity s = new TwSecurity();
            s.Mode = TwSecurityMode.InsecurePlaintext;
            return s;
        }

        // --- keys ---------------------------------------------------------------------------------

        /// <summary>
        /// A new key from the operating system's secure random generator (tw_generate_key):
        /// a match secret, a spectators' secret or a connect-token key. TwConstants.KeySize bytes.
        /// </summary>
        public static byte[] GenerateKey()
        {
            byte[] key = new byte[TwConstants.KeySize];
            GenerateKey(key);
            return key;
        }

        /// <summary>Fills key (exactly TwConstants.KeySize bytes, else InvalidArgument) with a new key.</summary>
        public static void GenerateKey(Span<byte> key)
        {
            TwLibrary.EnsureCompatible();
            TwResult r;
            fixed (byte* p = &MemoryMarshal.GetReference(key))
            {
                r = TwNative.tw_generate_key(p, (UIntPtr)key.Length);
            }
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
        }

        // --- settings -------------------------------------------------------------------------------

        /// <summary>Encrypted (the default) or InsecurePlaintext (which takes no secret, key or token).</summary>
        public TwSecurityMode Mode
        {
            get
            {
                TwSecurityConfig* c = Acquire();
                try
                {
                    return c->Mode;
                }
                finally
                {
                    _memory.DangerousRelease();
                }
            }
            set
            {
                TwSecurityConfig* c = Acquire();
                try
                {
                    c->Mode = value;
                }
                finally
                {
                    _memory.DangerousRelease();
                }
            }
        }

        /// <summary>A match secret is set (SetMatchSecret).</summary>
        public bool HasMatchSecret
        {
            get { return Flag(0); }
        }

        /// <summary>A spectators' secret is set (SetSpectatorSecret).</summary>
        public bool HasSpectatorSecret
        {
            get { return Flag(1); }
        }

        /// <summary>A connect key is set (SetConnectKey).</summary>
        public bool HasConnectKey
        {
            get { return Flag(2); }
        }

        /// <summary>A connect token is set (SetConnectToken).</summary>
        public bool HasConnectToken
        {
            get { return Flag(3); }
        }

        /// <summary>The public address set with the connect key ("" if none). Allocates.</summary>
        public string PublicAddress
        {
            get
            {
                TwSecurityConfig* c = Acquire();
                try
                {
                    return TwText.FromUtf8(c->PublicAddress, 64);
                }
                finally
                {
                    _memory.DangerousRelease();
                }
            }
        }

        /// <summary>P2P: the match's secret, TwConstants.KeySize bytes (copied).</summary>
        public void SetMatchSecret(ReadOnlySpan<byte> secret)
        {
            CheckLength(secret, TwConstants.KeySize, "secret", "a match secret");
            TwSecurityConfig* c = Acquire();
            try
            {
                Copy(secret, c->MatchSecret, TwConstants.KeySize);
                c->HasMatchSecret = 1;
            }
            finally
            {
                _memory.DangerousRelease();
            }
        }

        /// <summary>Removes the match secret (wiped).</summary>
        public void ClearMatchSecret()
        {
            TwSecurityConfig* c = Acquire();
            try
            {
                Wipe(c->MatchSecret, TwConstants.KeySize);
                c->HasMatchSecret = 0;
            }
            finally
            {
                _memory.DangerousRelease();
            }
        }

        /// <summary>
        /// The spectators' secret, TwConstants.KeySize bytes (copied): P2P peers with a match
        /// secret also admit spectators showing it; a SPECTATOR session shows it.
        /// </summary>
        public void SetSpectatorSecret(ReadOnlySpan<byte> secret)
        {
            CheckLength(secret, TwConstants.KeySize, "secret", "a spectators' secret");
            TwSecurityConfig* c = Acquire();
            try
            {
                Copy(secret, c->SpectatorSecret, TwConstants.KeySize);
                c->HasSpectatorSecret = 1;
            }
            finally
            {
                _memory.DangerousRelease();
            }
        }

        /// <summary>Removes the spectators' secret (wiped).</summary>
        public void ClearSpectatorSecret()
        {
            TwSecurityConfig* c = Acquire();
            try
            {
                Wipe(c->SpectatorSecret, TwConstants.KeySize);
                c->HasSpectatorSecret = 0;
            }
            finally
            {
                _memory.DangerousRelease();
            }
        }

        /// <summary>
        /// RELAY_SERVER (or any accepting host): admit only holders of a connect token made with
        /// key (TwConstants.KeySize bytes, copied) for publicAddress, the address clients reach
        /// this host at ("203.0.113.7:7000"; at most 63 bytes of UTF-8). An empty publicAddress
        /// stands for the bind address, which must then be a specific IP and port.
        /// </summary>
        public void SetConnectKey(ReadOnlySpan<byte> key, string publicAddress)
        {
            CheckLength(key, TwConstants.KeySize, "key", "a connect key");
            byte[] text = TwText.ToUtf8Z(publicAddress);
            if (text.Length > 64)
            {
                throw new ArgumentException("a public address has at most 63 bytes of UTF-8: " + publicAddress, "publicAddress");
            }
            TwSecurityConfig* c = Acquire();
            try
            {
                Copy(key, c->ConnectKey, TwConstants.KeySize);
                for (int i = 0; i < 64; i++)
                {
                    c->PublicAddress[i] = i < text.Length ? text[i] : (byte)0;
                }
                c->HasConnectKey = 1;
            }
            finally
            {
                _memory.DangerousRelease();
            }
        }

        /// <summary>Removes the connect key (wiped) and the public address.</summary>
        public void ClearConnectKey()
        {
            TwSecurityConfig* c = Acquire();
            try
            {
                Wipe(c->ConnectKey, TwConstants.KeySize);
                Wipe(c->PublicAddress, 64);
                c->HasConnectKey = 0;
            }
            finally
            {
                _memory.DangerousRelease();
            }
        }

        /// <summary>RELAY_CLIENT: the connect token to show (TwConstants.ConnectTokenSize bytes, copied).</summary>
        public void SetConnectToken(ReadOnlySpan<byte> token)
        {
            CheckLength(token, TwConstants.ConnectTokenSize, "token", "a connect token");
            TwSecurityConfig* c = Acquire();
            try
            {
                Copy(token, c->ConnectToken, TwConstants.ConnectTokenSize);
                c->ConnectTokenSize = (uint)TwConstants.ConnectTokenSize;
            }
            finally
            {
                _memory.DangerousRelease();
            }
        }

        /// <summary>Removes the connect token (wiped).</summary>
        public void ClearConnectToken()
        {
            TwSecurityConfig* c = Acquire();
            try
            {
                Wipe(c->ConnectToken, TwConstants.ConnectTokenSize);
                c->ConnectTokenSize = 0;
            }
            finally
            {
                _memory.DangerousRelease();
            }
        }

        /// <summary>True once Dispose has wiped and freed the settings.</summary>
        public bool IsDisposed
        {
            get { return _memory.IsClosed; }
        }

        /// <summary>Wipes (zeroes) and frees the settings. Safe to call twice.</summary>
        public void Dispose()
        {
            _memory.Dispose();
        }

        // --- for TwHost and TwSession -----------------------------------------------------------

        /// <summary>
        /// The tw_security_config, kept alive until <see cref="ReleasePointer"/>: a Dispose in
        /// between waits for it (the memory is freed at the release). Throws
        /// ObjectDisposedException after Dispose.
        /// </summary>
        internal IntPtr AcquirePointer()
        {
            return (IntPtr)Acquire();
        }

        internal void ReleasePointer()
        {
            _memory.DangerousRelease();
        }

        // --- internals -----------------------------------------------------------------------------

        private TwSecurityConfig* Acquire()
        {
            if (_memory.IsClosed)
            {
                throw new ObjectDisposedException("TwSecurity", "these tickwire security settings have been disposed");
            }
            bool added = false;
            _memory.DangerousAddRef(ref added); // throws ObjectDisposedException if disposed meanwhile
            return (TwSecurityConfig*)_memory.DangerousGetHandle();
        }

        private bool Flag(int which)
        {
            TwSecurityConfig* c = Acquire();
            try
            {
                switch (which)
                {
                    case 0: return c->HasMatchSecret != 0;
                    case 1: return c->HasSpectatorSecret != 0;
                    case 2: return c->HasConnectKey != 0;
                    default: return c->ConnectTokenSize != 0;
                }
            }
            finally
            {
                _memory.DangerousRelease();
            }
        }

        private static void CheckLength(ReadOnlySpan<byte> bytes, int want, string param, string what)
        {
            if (bytes.Length != want)
            {
                throw new ArgumentException(what + " is " + want + " bytes, got " + bytes.Length, param);
            }
        }

        private static void Copy(ReadOnlySpan<byte> from, byte* to, int n)
        {
            for (int i = 0; i < n; i++)
            {
                to[i] = from[i];
            }
        }

        internal static void Wipe(byte* p, int n)
        {
            for (int i = 0; i < n; i++)
            {
                p[i] = 0;
            }
        }

        /// <summary>
        /// Unmanaged memory that is zeroed before it is freed, once: by Dispose or, if the owner
        /// forgot, by the finalizer. Reference-counted like the host and session handles.
        /// </summary>
        private sealed class SecretMemory : SafeHandle
        {
            private readonly int _size;

            internal SecretMemory(int size) : base(IntPtr.Zero, true)
            {
                _size = size;
                SetHandle(Marshal.AllocHGlobal(size));
                Wipe((byte*)handle, size);
            }

            public override bool IsInvalid
            {
                get { return handle == IntPtr.Zero; }
            }

            protected override bool ReleaseHandle()
            {
                Wipe((byte*)handle, _size);
                Marshal.FreeHGlobal(handle);
                return true;
            }
        }
    }

    /// <summary>
    /// Connect tokens, as a game backend mints them (tw_connect_token_generate, netcode.io
    /// style). A client shows its token to a RELAY_SERVER whose connect key made it, and gets
    /// in only while the token is valid, only at one of the token's server addresses, and
    /// one connection at a time. Hand tokens to clients over your own secure channel
    /// (HTTPS): whoever holds one can use it.
    /// </summary>
    public static unsafe class TwConnectToken
    {
        /// <summary>
        /// Mints a connect token (TwConstants.ConnectTokenSize bytes) for one client.
        /// key: the backend's and servers' key (TwConstants.KeySize bytes, TwSecurity.GenerateKey);
        /// protocolId: the game's TwHostConfig.ProtocolId; clientId: the player's id in the
        /// backend; serverAddresses: 1 to TwConstants.ConnectTokenMaxAddresses addresses,
        /// comma-separated ("203.0.113.7:7000,[2001:db8::7]:7000"); expireSeconds: how long from
        /// now it can be used to connect (at least 1; reconnects need a valid token too, so
        /// cover the match); timeoutSeconds: the connection timeout both ends use (0: each
        /// end's own); userData: up to TwConstants.ConnectTokenUserDataSize bytes of game data.
        /// Throws TickwireException (InvalidArgument naming the argument, Io if the OS random
        /// generator or clock failed).
        /// </summary>
        public static byte[] Generate(ReadOnlySpan<byte> key, uint protocolId, ulong clientId, string serverAddresses,
                                      uint expireSeconds, uint timeoutSeconds = 0,
                                      ReadOnlySpan<byte> userData = default(ReadOnlySpan<byte>))
        {
            byte[] token = new byte[TwConstants.ConnectTokenSize];
            Generate(key, protocolId, clientId, serverAddresses, expireSeconds, timeoutSeconds, userData, token);
            return token;
        }

        /// <summary>As above, with the server addresses as a list.</summary>
        public static byte[] Generate(ReadOnlySpan<byte> key, uint protocolId, ulong clientId, string[] serverAddresses,
                                      uint expireSeconds, uint timeoutSeconds = 0,
                                      ReadOnlySpan<byte> userData = default(ReadOnlySpan<byte>))
        {
            if (serverAddresses == null)
            {
                throw new ArgumentNullException("serverAddresses");
            }
            return Generate(key, protocolId, clientId, string.Join(",", serverAddresses), expireSeconds, timeoutSeconds, userData);
        }

        /// <summary>
        /// As above, into token (exactly TwConstants.ConnectTokenSize bytes, else InvalidArgument):
        /// a backend minting many tokens can reuse one buffer.
        /// </summary>
        public static void Generate(ReadOnlySpan<byte> key, uint protocolId, ulong clientId, string serverAddresses,
                                    uint expireSeconds, uint timeoutSeconds, ReadOnlySpan<byte> userData, Span<byte> token)
        {
            TwLibrary.EnsureCompatible();
            byte[] addresses = TwText.ToUtf8Z(serverAddresses);
            TwResult r;
            fixed (byte* k = &MemoryMarshal.GetReference(key))
            fixed (byte* a = addresses)
            fixed (byte* u = &MemoryMarshal.GetReference(userData))
            fixed (byte* t = &MemoryMarshal.GetReference(token))
            {
                r = TwNative.tw_connect_token_generate(k, (UIntPtr)key.Length, protocolId, clientId, a, expireSeconds,
                                                       timeoutSeconds, u, (UIntPtr)userData.Length, t, (UIntPtr)token.Length);
            }
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
        }
    }
}
