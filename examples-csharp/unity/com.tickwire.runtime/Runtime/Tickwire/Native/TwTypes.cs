// Blittable mirrors of the structs and enums in include/tickwire.h.
//
// Field order, types and sizes follow the C header exactly; the test program checks
// every size against the native size getters and every field offset against the C
// compiler's offsetof. Field names are the C names in PascalCase
// (loss_p_good_to_bad -> LossPGoodToBad). No bool, no references, no strings inside
// a struct: every struct here can be passed by pointer without marshalling.
//
// C# 7.2 only (Debian's mcs and Unity both compile it).

using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Tickwire
{
    /// <summary>tw_result: 0 is success, negative is an error, positive is a status (test with r &gt;= 0).</summary>
    public enum TwResult : int
    {
        Ok = 0,
        /// <summary>Success, but nothing to return (no event to poll).</summary>
        Empty = 1,
        /// <summary>TwSession.Advance: not every peer has been heard from yet. Not an error.</summary>
        NotSynchronized = 2,
        /// <summary>TwSession.Advance (P2P, relay client): the prediction window is full; skip the tick but poll its requests.</summary>
        WindowFull = 3,
        /// <summary>TwSession.Advance (spectator): no input for the next tick yet. Not an error.</summary>
        WaitingForInput = 4,
        /// <summary>TwSession.Advance: the session is over (a replay at its end, a relay client after ServerLost). Not an error.</summary>
        Finished = 5,
        NullArgument = -1,
        InvalidArgument = -2,
        /// <summary>The buffer is too small; the length out-parameter holds the size needed.</summary>
        BufferTooSmall = -3,
        InvalidState = -4,
        /// <summary>struct_size unknown to the library: bindings and library disagree.</summary>
        VersionMismatch = -5,
        Io = -6,
        AddressInUse = -7,
        /// <summary>A queue to the network thread is full: flush, retry on a later frame.</summary>
        QueueFull = -8,
        UnknownPeer = -9,
        /// <summary>The network thread stopped; dispose the host.</summary>
        NetworkThreadGone = -10,
        /// <summary>A bug inside tickwire panicked; the host is unusable.</summary>
        Panic = -11,
        MessageTooLarge = -12,
        /// <summary>Another call on the same host or session was in progress (another thread); nothing was done.</summary>
        Busy = -13,
    }

    /// <summary>tw_event_kind.</summary>
    public enum TwEventKind : uint
    {
        None = 0,
        Connected = 1,
        Disconnected = 2,
        Message = 3,
        Fatal = 4,
    }

    /// <summary>tw_disconnect_reason.</summary>
    public enum TwDisconnectReason : uint
    {
        /// <summary>
        /// The client (the side that dialled) closed the connection on purpose (disposed its
        /// session or host). A relay server frees that player's slot at once.
        /// </summary>
        Client = 1,
        Server = 2,
        Timeout = 3,
        Kicked = 4,
        VersionMismatch = 5,
        ServerFull = 6,
        ProtocolError = 7,
        Flooding = 8,
        /// <summary>One end is InsecurePlaintext and the other is not: both must choose it. Seen by the connecting side.</summary>
        SecurityMismatch = 9,
        /// <summary>
        /// The handshake did not prove what the other end requires: a wrong or missing match
        /// secret, or a connect token that is forged, made with another key, for another
        /// server address or another game.
        /// </summary>
        AuthFailed = 10,
        /// <summary>The connect token has expired: get a new one from the backend.</summary>
        TokenExpired = 11,
        /// <summary>The connect token is held by another live connection (one at a time).</summary>
        TokenInUse = 12,
        /// <summary>
        /// A new connection from the same address replaced this one: the peer restarted, or
        /// dialled again after losing this connection (it did not close it; a relay server
        /// keeps the player's slot for its token). Seen by the accepting side only.
        /// </summary>
        Replaced = 13,
        /// <summary>
        /// The engine at the other end removed this side on purpose, for good: a relay
        /// server's engine kicked this client (TwSession.KickPlayer: ServerLost, no reconnect,
        /// its slot freed), or a P2P peer's engine dropped this peer (TwSession.DisconnectPlayer:
        /// PeerDisconnected on both sides). Unlike Kicked (the relay's own kick, which keeps
        /// the slot and reconnects), it is final.
        /// </summary>
        KickedByEngine = 14,
        /// <summary>
        /// The address was a host name that gave no usable address (no such name, no DNS,
        /// or only addresses of the other family than the bound socket's); nothing was
        /// sent. Final. On a TwHost: the Disconnected of the peer Connect returned; a relay
        /// client: ServerLost. Seen by the dialling side only.
        /// </summary>
        ResolveFailed = 15,
        /// <summary>
        /// A relay server refused the connect token: another live connection holds a token
        /// for the same client id (one connection per player at a time). Try again once the
        /// other connection has ended.
        /// </summary>
        ClientIdInUse = 16,
        /// <summary>
        /// The handshake was refused by a denial that could not be authenticated (it answered
        /// no proof of this side's credential, so anyone on the path could have forged it: a
        /// wrong or missing secret or token, a security-mode or version mismatch), and went on
        /// until ConnectTimeoutMs without being accepted. The stated reason is only logged, as
        /// a hint. Final for a relay client. Seen by the dialling side only.
        /// </summary>
        DeniedUnverified = 17,
        /// <summary>
        /// P2P: the peer's inputs held the match's confirmed tick still for ProgressTimeoutMs, or
        /// below half the tick rate for twice that, although it kept talking (without
        /// SetLoading): dropped. Sent to the dropped peer too.
        /// </summary>
        NoProgress = 18,
    }

    /// <summary>tw_security_mode (TwSecurityConfig.Mode, TwSecurity.Mode).</summary>
    public enum TwSecurityMode : uint
    {
        /// <summary>
        /// Every packet after the handshake is encrypted and authenticated (X25519, then
        /// ChaCha20-Poly1305 with a key per connection and direction). The default.
        /// </summary>
        Encrypted = 0,
        /// <summary>
        /// Nothing is encrypted or authenticated: anyone on the path can read, forge and replay
        /// packets. Benchmarks and debugging only. Both ends must choose it (else the connecting
        /// side gets TwDisconnectReason.SecurityMismatch); it cannot carry a secret, key or token.
        /// </summary>
        InsecurePlaintext = 1,
        /// <summary>
        /// The handshake as Encrypted, then packets left to the carrier to protect: only for a
        /// host or session on an external carrier (bound to "remote:&lt;id&gt;") that authenticates
        /// every remote and encrypts (Steam, EOS); refused on a UDP socket. Both ends must choose it.
        /// </summary>
        Carrier = 2,
    }

    /// <summary>tw_direction (tw_host_set_link_sim).</summary>
    public enum TwDirection : uint
    {
        Outbound = 0,
        Inbound = 1,
    }

    /// <summary>tw_jitter_kind.</summary>
    public enum TwJitterKind : uint
    {
        None = 0,
        Uniform = 1,
        Gaussian = 2,
        Pareto = 3,
    }

    /// <summary>tw_loss_kind.</summary>
    public enum TwLossKind : uint
    {
        None = 0,
        Bernoulli = 1,
        GilbertElliott = 2,
    }

    /// <summary>The channels of the default layout (TW_CHANNEL_*).</summary>
    public enum TwChannel : uint
    {
        /// <summary>May be lost, may arrive in any order.</summary>
        Unreliable = 0,
        /// <summary>May be lost; older than the newest delivered is dropped.</summary>
        Sequenced = 1,
        /// <summary>Exactly once, in order; large messages are fragmented.</summary>
        Reliable = 2,
    }

    /// <summary>Constants of the C header.</summary>
    public static class TwConstants
    {
        /// <summary>
        /// TW_MAX_DATAGRAM_SIZE: the largest datagram any host sends, and the buffer a pull of
        /// one datagram should offer (TwHost.PullDatagrams, TwSession.PullDatagrams).
        /// </summary>
        public const int MaxDatagramSize = 1200;

        /// <summary>
        /// TW_MIN_CARRIER_DATAGRAM_SIZE: the smallest TwHostConfig.MaxDatagramSize a carrier may
        /// declare (a reliable fragment with its headers must fit one datagram).
        /// </summary>
        public const int MinCarrierDatagramSize = 1105;

        /// <summary>TW_MAX_UNRELIABLE_SIZE: largest message on the unreliable and sequenced channels.</summary>
        public const int MaxUnreliableSize = 1159;

        /// <summary>
        /// TW_MAX_PENDING_RESOLUTIONS: host names one host (or networked session) may be
        /// looking up at once; connects by name beyond this throw TickwireException
        /// (QueueFull) until some lookups have answered.
        /// </summary>
        public const int MaxPendingResolutions = 16;

        /// <summary>
        /// TW_NO_PLAYER: TwSessionEventPeer.Player when no player is behind the connection;
        /// TwSessionEventRelay.Player and TwSessionStats.LocalPlayer when there is no slot.
        /// </summary>
        public const uint NoPlayer = 0xFFFFFFFF;

        /// <summary>
        /// TW_LOCAL_PLAYER: TwSession.PushInput's player on a RELAY_CLIENT: this client's own
        /// player, whichever slot the server gives it (the slot is not known before the Joined
        /// event, but inputs go to the server from the first due tick on).
        /// </summary>
        public const uint LocalPlayer = 0xFFFFFFFE;

        /// <summary>
        /// TW_MAX_REPLAY_SIZE: the largest replay file LoadReplayFile reads (1 GiB), and, less
        /// the 28-byte replay header, the largest initial state StartRecording takes.
        /// </summary>
        public const int MaxReplaySize = 1073741824;

        /// <summary>
        /// TW_MAX_INPUT_SIZE: the largest TwSessionConfig.InputSize (bytes of one player's input
        /// per tick). P2P: one tick of every player's input must also fit one datagram.
        /// </summary>
        public const int MaxInputSize = 255;

        /// <summary>TW_KEY_SIZE: bytes of a key (a match secret, a spectators' secret, a connect-token key).</summary>
        public const int KeySize = 32;

        /// <summary>TW_CONNECT_TOKEN_SIZE: bytes of a connect token (TwConnectToken.Generate).</summary>
        public const int ConnectTokenSize = 1024;

        /// <summary>TW_CONNECT_TOKEN_MAX_ADDRESSES: most server addresses one connect token names.</summary>
        public const int ConnectTokenMaxAddresses = 8;

        /// <summary>TW_CONNECT_TOKEN_USER_DATA_SIZE: most bytes of game data in a connect token.</summary>
        public const int ConnectTokenUserDataSize = 256;

        /// <summary>TW_SESSION_MESSAGE_MAX_SIZE: the largest session message (TwSession.SendMessage), 16 KiB.</summary>
        public const int SessionMessageMaxSize = 16384;

        /// <summary>
        /// TW_SESSION_MESSAGE_TARGET_ALL: TwSession.SendMessage's target for every connected member
        /// (P2P: every remote player's peer; RELAY_SERVER: every player's client; RELAY_CLIENT: the server).
        /// </summary>
        public const uint SessionMessageTargetAll = 0xFFFFFFFF;

        /// <summary>
        /// TW_SESSION_MESSAGE_QUEUE_BYTES: SendMessage answers QueueFull while the peer's send queue
        /// (every channel) would hold more than this with the message.
        /// </summary>
        public const int SessionMessageQueueBytes = 65536;

        /// <summary>
        /// TW_SESSION_MESSAGE_UNREAD_BYTES: bytes of one member's messages that may wait for PollEvent
        /// (each counted with 64 more); past it that member's messages are dropped and counted.
        /// </summary>
        public const int SessionMessageUnreadBytes = 131072;

        /// <summary>
        /// TW_RENDEZVOUS_PRIVATE: the flag TwSession.SetRendezvous(address, ticket, true) sets:
        /// relay everything, so that no peer learns another's address (nor this side theirs).
        /// Every pair with a private peer is relayed.
        /// </summary>
        public const uint RendezvousPrivate = 1;

        /// <summary>
        /// TW_MATCH_CLAIM_SIZE: bytes of the match claim (TwMatchClaim.Write) at the start of a
        /// rendezvous ticket's user data.
        /// </summary>
        public const int MatchClaimSize = 18;
    }

    /// <summary>
    /// tw_host_config (96 bytes). Get one from <see cref="Default"/>, then change fields.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwHostConfig
    {
        public uint StructSize;
        public uint ProtocolId;
        /// <summary>0 (default) refuses incoming connections: a pure client.</summary>
        public uint MaxClients;
        public uint MaxMessageSize;
        public uint KeepaliveIntervalMs;
        public uint TimeoutMs;
        public uint ConnectTimeoutMs;
        public uint HandshakeRetryMs;
        public uint SendQueueLimitBytes;
        public uint RecvBufferBytes;
        public uint SendBufferBytes;
        public uint AutoFlushIntervalUs;
        public ulong SimSeed;
        /// <summary>
        /// const tw_security_config*: read only while the host or session is created; IntPtr.Zero
        /// (the default) is encrypted and open to anyone. Leave it zero and pass a
        /// <see cref="TwSecurity"/> to the TwHost or TwSession constructor instead: it sets this
        /// for the duration of the create call only.
        /// </summary>
        public IntPtr Security;
        /// <summary>Incoming connections one IP address may hold (default 8; 0: no limit).</summary>
        public uint MaxClientsPerIp;
        /// <summary>A peer's budget: messages a second (default 8192).</summary>
        public uint MaxMessagesPerSec;
        /// <summary>A peer's budget: datagram bytes a second (default 4194304).</summary>
        public uint MaxBytesPerSec;
        /// <summary>Bytes of one peer's messages waiting to be polled (default 262144).</summary>
        public uint MaxRecvQueueBytes;
        /// <summary>Messages in one datagram, 1..=582 (default 64).</summary>
        public uint MaxFramesPerDatagram;
        /// <summary>
        /// A host on an external carrier (bound to "remote:&lt;id&gt;"): the carrier's largest
        /// datagram, TwConstants.MinCarrierDatagramSize..TwConstants.MaxDatagramSize (Steam's
        /// unreliable messages: 1200; EOS P2P: 1170; WebRTC data channels: 1200). 0 (the
        /// default): 1200. A host with a UDP socket must leave it 0.
        /// </summary>
        public uint MaxDatagramSize;
        /// <summary>Must stay zero.</summary>
        public fixed byte Reserved[8];

        /// <summary>The library's defaults (tw_host_config_init_default), with StructSize set.</summary>
        public static TwHostConfig Default()
        {
            TwLibrary.EnsureCompatible();
            TwHostConfig c;
            TwResult r = Native.TwNative.tw_host_config_init_default(&c);
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
            return c;
        }
    }

    /// <summary>
    /// tw_link_sim_config (160 bytes): one direction of a simulated link. Get one from
    /// <see cref="Default"/> (a perfect link), then change fields.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwLinkSimConfig
    {
        public uint StructSize;
        public TwJitterKind JitterKind;
        public TwLossKind LossKind;
        /// <summary>Must stay zero.</summary>
        public uint Reserved0;
        public ulong LatencyUs;
        public double JitterUs;
        public double JitterShape;
        public double LossProbability;
        public double LossPGoodToBad;
        public double LossPBadToGood;
        public double LossInGood;
        public double LossInBad;
        public double Duplicate;
        public double Reorder;
        public ulong ReorderDelayUs;
        public ulong BandwidthBytesPerSec;
        public ulong QueueLimitBytes;
        /// <summary>Must be 0 for now (the host's SimSeed seeds every simulator).</summary>
        public ulong Seed;
        /// <summary>Must stay zero.</summary>
        public fixed byte Reserved[32];

        /// <summary>A perfect link (tw_link_sim_config_init_default), with StructSize set.</summary>
        public static TwLinkSimConfig Default()
        {
            TwLibrary.EnsureCompatible();
            TwLinkSimConfig c;
            TwResult r = Native.TwNative.tw_link_sim_config_init_default(&c);
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
            return c;
        }
    }

    /// <summary>tw_event_connected: the peer's address as NUL-terminated UTF-8, and what it proved.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwEventConnected
    {
        public fixed byte Address[64];
        /// <summary>What the peer proved in the handshake. Decide who a peer is by this, never by its address.</summary>
        public TwCredential Credential;
        /// <summary>Must be ignored.</summary>
        public uint Reserved0;
        /// <summary>
        /// TwCredential.ConnectToken: the token's client id (its user data: TwSession.GetPlayerIdentity
        /// on a relay server); else 0.
        /// </summary>
        public ulong ClientId;

        /// <summary>The address as a string. Allocates: call it on connect, not per frame.</summary>
        public string GetAddress()
        {
            fixed (byte* p = Address)
            {
                return TwText.FromUtf8(p, 64);
            }
        }
    }

    /// <summary>tw_event_disconnected.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwEventDisconnected
    {
        public TwDisconnectReason Reason;
    }

    /// <summary>tw_event_message: read the payload with TwHost.ReadMessage before the next poll.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwEventMessage
    {
        public TwChannel Channel;
        public uint Size;
    }

    /// <summary>tw_event_fatal: what went wrong, NUL-terminated UTF-8.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwEventFatal
    {
        public fixed byte Message[120];

        /// <summary>The message as a string (allocates).</summary>
        public string GetMessage()
        {
            fixed (byte* p = Message)
            {
                return TwText.FromUtf8(p, 120);
            }
        }
    }

    /// <summary>tw_event_data: the union. Read only the member named by TwEvent.Kind.</summary>
    [StructLayout(LayoutKind.Explicit, Size = 120)]
    public unsafe struct TwEventData
    {
        [FieldOffset(0)] public TwEventConnected Connected;
        [FieldOffset(0)] public TwEventDisconnected Disconnected;
        [FieldOffset(0)] public TwEventMessage Message;
        [FieldOffset(0)] public TwEventFatal Fatal;
        /// <summary>Fixes the size and the 8-byte alignment of the union.</summary>
        [FieldOffset(0)] public fixed ulong Reserved[15];
    }

    /// <summary>tw_event (128 bytes), filled by TwHost.PollEvent. A plain copy; keep it as long as you like.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwEvent
    {
        public TwEventKind Kind;
        /// <summary>The peer it concerns; 0 for host-wide events (Fatal).</summary>
        public uint Peer;
        public TwEventData Data;
    }

    /// <summary>tw_peer_stats (256 bytes). Times in microseconds, rates per second.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwPeerStats
    {
        public double SrttUs;
        public double MinRttUs;
        public double RttVarUs;
        public double JitterUs;
        public double RtoUs;
        /// <summary>Fraction of recent packets never acknowledged, in [0, 1].</summary>
        public double Loss;
        public double SentBytesPerSec;
        public double RecvBytesPerSec;
        public double SentPacketsPerSec;
        public double RecvPacketsPerSec;
        public ulong PacketsSent;
        public ulong PacketsReceived;
        public ulong BytesSent;
        public ulong BytesReceived;
        public ulong Resent;
        public ulong Malformed;
        public ulong SendQueueBytes;
        /// <summary>Encrypted packets from this peer refused before decryption: already received, or too old.</summary>
        public ulong Replayed;
        /// <summary>Encrypted packets from this peer's address whose authentication failed (forged, tampered, truncated).</summary>
        public ulong Forged;
        public fixed ulong Reserved[13];
    }

    /// <summary>tw_host_stats (256 bytes): counters since the host started.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwHostStats
    {
        public ulong DatagramsReceived;
        public ulong DatagramsSent;
        public ulong BytesReceived;
        public ulong BytesSent;
        public ulong Malformed;
        public ulong WrongProtocol;
        public ulong WrongVersion;
        public ulong UnknownSender;
        public ulong BadCookie;
        public ulong ChallengesSent;
        public ulong Denied;
        public ulong Connections;
        public ulong SendsRejected;
        public ulong ConnectsRejected;
        public ulong SocketSendDropped;
        public ulong SocketSendErrors;
        public ulong SocketRecvErrors;
        public ulong EventBacklog;
        /// <summary>Handshakes refused because one end is insecure plaintext and the other not.</summary>
        public ulong SecurityMismatch;
        /// <summary>Handshakes refused for their credentials: a wrong or missing match secret, a bad or in-use token.</summary>
        public ulong AuthRefused;
        /// <summary>Encrypted packets (all connections) refused as already received or too old.</summary>
        public ulong Replayed;
        /// <summary>Encrypted packets and handshake confirmations (all connections) whose authentication failed.</summary>
        public ulong Forged;
        public fixed ulong Reserved[10];
    }

    /// <summary>
    /// tw_datagram (24 bytes): one datagram between the engine's carrier (Steam, EOS, WebRTC)
    /// and a host or session bound to "remote:&lt;id&gt;". Blittable: an array of them is passed
    /// to the library as it is.
    ///
    /// Push (TwHost.PushDatagrams, TwSession.PushDatagrams): the engine fills Remote (where it
    /// came from), Data and Len (its bytes, only read during the call) and AgeUs.
    /// Pull (PullDatagrams): the library fills Remote (where it goes), Data (pointing into the
    /// buffer the caller gave) and Len; AgeUs is 0. <see cref="TwDatagramBatch"/> keeps both
    /// ends in one pinned buffer.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwDatagram
    {
        /// <summary>The remote's id on the carrier (its "remote:&lt;id&gt;" address).</summary>
        public ulong Remote;
        /// <summary>const uint8_t*: Len bytes; null only when Len is 0. Must point at pinned or native memory.</summary>
        public byte* Data;
        /// <summary>The datagram's size in bytes.</summary>
        public uint Len;
        /// <summary>
        /// Push: how many microseconds before the push it arrived, when the carrier knows
        /// (Steam: now minus m_usecTimeReceived); 0 means at the push. Pull: 0.
        /// </summary>
        public uint AgeUs;
    }

    /// <summary>UTF-8 helpers for the few strings that cross the ABI (setup time only).</summary>
    internal static unsafe class TwText
    {
        /// <summary>Decodes a NUL-terminated UTF-8 string of at most maxLen bytes.</summary>
        internal static string FromUtf8(byte* p, int maxLen)
        {
            if (p == null)
            {
                return string.Empty;
            }
            int n = 0;
            while (n < maxLen && p[n] != 0)
            {
                n++;
            }
            return n == 0 ? string.Empty : Encoding.UTF8.GetString(p, n);
        }

        /// <summary>Decodes a static NUL-terminated UTF-8 string from the library.</summary>
        internal static string FromUtf8(byte* p)
        {
            return FromUtf8(p, int.MaxValue);
        }

        /// <summary>Encodes text as NUL-terminated UTF-8 (for address arguments).</summary>
        internal static byte[] ToUtf8Z(string text)
        {
            if (text == null)
            {
                throw new ArgumentNullException("text");
            }
            int n = Encoding.UTF8.GetByteCount(text);
            byte[] bytes = new byte[n + 1];
            Encoding.UTF8.GetBytes(text, 0, text.Length, bytes, 0);
            return bytes;
        }
    }
}
