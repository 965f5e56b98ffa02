// Blittable mirrors of the session structs and enums in include/tickwire.h
// (tw_session_config, tw_request, tw_session_event with its union, tw_session_stats).
// The relay topology's own enums and structs (the policies, the kick and reject
// reasons, the relay event members, tw_relay_player_stats) are in TwRelayTypes.cs.
//
// The same rules as TwTypes.cs: field order, types and sizes follow the C header
// exactly; the test program checks every size against the native size getters and
// every field offset against the C compiler's offsetof. Field names are the C names in
// PascalCase. No constants or static fields inside a mirrored struct (the offset test
// counts fields): constants live in TwConstants and the flag enums.
//
// New fields in the header take bytes from a struct's reserved tail (the relay modes'
// settings and figures did): mirror them here in the same place and shrink the
// Reserved array by the same amount; the offset test says when it is right.

using System;
using System.Runtime.InteropServices;

namespace Tickwire
{
    /// <summary>tw_session_mode: the topology of a session.</summary>
    public enum TwSessionMode : uint
    {
        /// <summary>GGPO-style rollback between peers.</summary>
        P2P = 1,
        /// <summary>Local determinism check: every tick is rolled back and simulated again.</summary>
        SyncTest = 2,
        /// <summary>Watches a P2P match through one of its peers.</summary>
        Spectator = 3,
        /// <summary>Plays a recorded replay back.</summary>
        Replay = 4,
        /// <summary>
        /// The relay topology's server: binds and listens; clients that join become players
        /// (NumPlayers slots). Its clock is the master: it never waits. It has no player of its
        /// own: every ADVANCE it hands out is final, and a joining client's snapshot is asked
        /// for with a DUMP_STATE request.
        /// <para>
        /// Not Unity Relay: tickwire's relay is its own authoritative server with client-side
        /// prediction, a TwSession you run yourself (a dedicated server build or the host's
        /// scene) that simulates the game and sends every client the canonical inputs. It is
        /// not Unity Relay, the Unity Gaming Services product that forwards packets between
        /// players through Unity's servers, and needs neither that service nor Unity Transport.
        /// </para>
        /// </summary>
        RelayServer = 5,
        /// <summary>
        /// A relay client: TwSession.SetServer, Start, and push this client's input every due
        /// tick as player TwConstants.LocalPlayer. It joins with a snapshot of the server's
        /// state (a RESTORE request), predicts ahead of the authoritative state and
        /// re-simulates from it when a prediction was wrong.
        /// <para>
        /// Not Unity Relay: tickwire's relay is its own authoritative server with client-side
        /// prediction, a TwSession you run yourself (a dedicated server build or the host's
        /// scene) that simulates the game and sends every client the canonical inputs. It is
        /// not Unity Relay, the Unity Gaming Services product that forwards packets between
        /// players through Unity's servers, and needs neither that service nor Unity Transport.
        /// </para>
        /// </summary>
        RelayClient = 6,
    }

    /// <summary>tw_prediction: how a P2P session guesses a remote input that has not arrived.</summary>
    public enum TwPrediction : uint
    {
        /// <summary>Repeat the player's last confirmed input (held buttons stay held).</summary>
        RepeatLast = 0,
        /// <summary>Predict all-zero input.</summary>
        Zero = 1,
    }

    /// <summary>tw_request_kind: what a request asks. Run every request, in order.</summary>
    public enum TwRequestKind : uint
    {
        None = 0,
        /// <summary>Store the current state in snapshot Slot, then TwSession.ConfirmSave(Tick, checksum).</summary>
        Save = 1,
        /// <summary>Replace the current state with snapshot Slot (the start of Tick).</summary>
        Load = 2,
        /// <summary>Simulate Tick with TwSession.ReadInputs (and ReadInputStatus).</summary>
        Advance = 3,
        /// <summary>Replace the current state with the serialized bytes of TwSession.ReadState.</summary>
        Restore = 4,
        /// <summary>Serialize snapshot Slot and hand it over with TwSession.ProvideState(Tick, bytes).</summary>
        DumpState = 5,
    }

    /// <summary>TW_REQUEST_FLAG_*: the bits of TwRequest.Flags (ADVANCE requests).</summary>
    [Flags]
    public enum TwRequestFlags : uint
    {
        None = 0,
        /// <summary>Re-simulating after a rollback: mute sounds and effects.</summary>
        Resimulating = 1,
        /// <summary>At least one input is a prediction: a later rollback may replace this tick.</summary>
        Predicted = 2,
        /// <summary>
        /// Every input of the tick is final (confirmed, canonical or disconnected): its outcome
        /// will not change. A re-simulation of such a tick carries Resimulating too. In P2P a
        /// tick simulated with predictions that proved right is never simulated again, so it
        /// never carries this flag: there, TwSessionStats.ConfirmedTick says which ticks are
        /// settled.
        /// </summary>
        Authoritative = 4,
    }

    /// <summary>tw_input_status: where an input of an ADVANCE request comes from (one byte each).</summary>
    public enum TwInputStatus : byte
    {
        /// <summary>The real input; it will never change.</summary>
        Confirmed = 0,
        /// <summary>A guess; a rollback follows if the real input differs.</summary>
        Predicted = 1,
        /// <summary>The player is gone from this tick on; the input bytes are zeros.</summary>
        Disconnected = 2,
    }

    /// <summary>tw_session_event_kind: what happened. Events inform; the simulation stays correct either way.</summary>
    public enum TwSessionEventKind : uint
    {
        None = 0,
        /// <summary>Every peer has been heard from; ticks start being due.</summary>
        Synchronized = 1,
        /// <summary>A connection is up (Data.Peer).</summary>
        PeerConnected = 2,
        /// <summary>Nothing heard from the peer for a while (Data.Peer.DisconnectInUs).</summary>
        PeerInterrupted = 3,
        /// <summary>An interrupted peer was heard again (Data.Peer).</summary>
        PeerResumed = 4,
        /// <summary>The session gave up on the peer, or its connection closed (Data.Peer).</summary>
        PeerDisconnected = 5,
        /// <summary>A player's inputs count as disconnected from Data.Player.Tick on.</summary>
        PlayerDisconnected = 6,
        /// <summary>
        /// The prediction window is full at Data.Tick.Tick, waiting for the peer's inputs (P2P) or
        /// the server's steps (relay client; Peer is the server): Advance answers WindowFull
        /// until they come. Once per stall.
        /// </summary>
        PredictionWindowFull = 7,
        /// <summary>A rollback needed a state older than the ring holds (Data.Tick.Tick).</summary>
        RollbackTooFar = 8,
        /// <summary>
        /// The checksums of a confirmed tick differ from the peer's (Data.Desync). RELAY_CLIENT:
        /// its authoritative state differs from the server's; TwSession.RequestSnapshot recovers.
        /// </summary>
        Desync = 9,
        /// <summary>A desync dump is ready: TwSession.TakeDesyncDump or WriteDesyncDump (Data.Tick.Tick).</summary>
        DesyncDumpReady = 10,
        /// <summary>
        /// SYNCTEST: re-simulating a tick gave another checksum (Data.SynctestMismatch). Two
        /// DumpState requests of that tick follow (saved, then resimulated), then
        /// SynctestStatesReady.
        /// </summary>
        SynctestMismatch = 11,
        /// <summary>A spectator fell too far behind and was dropped.</summary>
        SpectatorDropped = 12,
        /// <summary>
        /// A connection from an address nobody registered was refused. RELAY_SERVER: a client
        /// was refused (Data.Rejected.Reason).
        /// </summary>
        ConnectionRejected = 13,
        /// <summary>The network thread died (Data.Fatal): dispose the session.</summary>
        Fatal = 14,
        /// <summary>
        /// RELAY_SERVER and RELAY_CLIENT: a player is in the canonical steps from Data.Relay.Tick
        /// on (Data.Relay.Player). Server: a new client took a free slot (Peer is its
        /// connection). Client: another player appeared; a client that joins a match in
        /// progress is told of every player already there (once, at the tick of its
        /// snapshot), never of itself (Joined).
        /// </summary>
        PlayerJoined = 15,
        /// <summary>
        /// RELAY_SERVER: a player came back on a new connection with its token and has its old
        /// slot again (Data.Relay; Peer is the new connection). A DUMP_STATE request follows.
        /// </summary>
        PlayerReconnected = 16,
        /// <summary>
        /// RELAY_SERVER and RELAY_CLIENT: a player is gone from the canonical steps from
        /// Data.Relay.Tick on. Server: its connection ended (Data.Relay.DisconnectReason); its
        /// slot waits SlotTimeoutMs for it, unless the client left on purpose (reason Client: it
        /// disposed its session): then PlayerSlotFreed follows at once.
        /// </summary>
        PlayerLeft = 17,
        /// <summary>
        /// RELAY_SERVER: a player's slot is free and its token void (Data.Relay.Player): it left
        /// on purpose, or it dropped and did not come back within SlotTimeoutMs.
        /// </summary>
        PlayerSlotFreed = 18,
        /// <summary>RELAY_SERVER: a player was removed and its connection closed (Data.Relay.KickReason).</summary>
        PlayerKicked = 19,
        /// <summary>
        /// RELAY_CLIENT: the server's snapshot arrived: this client is player Data.Relay.Player
        /// from Data.Relay.Tick on (Data.Relay.IsReconnect: its old slot, back after a drop). The
        /// RESTORE request of that tick came with the advance that raised it; the catch-up
        /// follows, then Synchronized.
        /// </summary>
        Joined = 20,
        /// <summary>
        /// RELAY_CLIENT: the connection to the server dropped (Data.Relay.DisconnectReason); the
        /// client reconnects by itself within ReconnectWindowMs (Joined with IsReconnect follows).
        /// </summary>
        Reconnecting = 21,
        /// <summary>
        /// RELAY_CLIENT: the predicted timeline was dropped at Data.Relay.Tick and a new snapshot
        /// asked for (after RequestSnapshot, or when steps it needed never came); Joined follows.
        /// </summary>
        Resyncing = 22,
        /// <summary>
        /// RELAY_CLIENT: the connection to the server is gone for good (Data.Relay.DisconnectReason):
        /// no more ticks (TicksDue gives 0, Advance answers Finished); dispose the session.
        /// </summary>
        ServerLost = 23,
        /// <summary>
        /// P2P: the confirmed tick stood still for ProgressTimeoutMs, or advanced at less than
        /// half the tick rate for twice that, although messages still flow (an announced loading
        /// stall is charged to the peer's LoadingGraceMs first); Peer is the connection whose
        /// inputs hold it back (0: the local inputs), Data.Tick.Tick the first unconfirmed tick.
        /// A remote peer is dropped right after (PeerDisconnected, reason NoProgress).
        /// </summary>
        NoProgress = 24,
        /// <summary>
        /// RELAY_SERVER: player Data.Relay.Player needed a canonical step older than StepHistory
        /// (far behind, or its link stalled that long). It is not kicked: it is sent a snapshot
        /// of a coming tick and the steps from there; its client sees Resyncing, then Joined.
        /// </summary>
        PlayerCatchingUp = 25,
        /// <summary>
        /// P2P, RELAY_SERVER and RELAY_CLIENT: a message sent with TwSession.SendMessage arrived
        /// from the member on Peer (Data.Message): copy it with TwSession.ReadMessage before
        /// polling again.
        /// </summary>
        Message = 26,
        /// <summary>
        /// P2P, before the match runs: progress with one remote peer (Data.Progress; Peer is
        /// its connection, 0 while this side waits for it to dial). Raised for every remote
        /// peer at Start (Step 0: connecting) and when its connection is up (Step 1).
        /// </summary>
        SynchronizingWithPeer = 27,
        /// <summary>
        /// P2P, before the match runs: this side has heard from the peer of
        /// Data.Progress.Player: Data.Progress.Synchronized of Data.Progress.Total remote peers
        /// are synchronized now. Synchronized follows once all are.
        /// </summary>
        SynchronizedWithPeer = 28,
        /// <summary>
        /// SYNCTEST: both states of a mismatch at Data.Tick.Tick are in hand:
        /// TwSession.TakeSynctestState(Saved / Resimulated), then diff them.
        /// </summary>
        SynctestStatesReady = 29,
        /// <summary>
        /// RELAY_CLIENT: the input delay in force changed (Data.InputDelay): the part of the
        /// round trip beyond MaxPrediction shows as input delay (Spill). Raise MaxPrediction to
        /// hide more of a long round trip. At most once a second.
        /// </summary>
        InputDelayChanged = 30,
        /// <summary>
        /// P2P: a majority of the live remote peers propose that local player
        /// Data.Player.Player disconnected from Data.Player.Tick (they lost this peer, or
        /// dropped it): the match goes on without this side. Raised once per local player.
        /// </summary>
        RemovedByPeers = 31,
        /// <summary>
        /// P2P: the remote peer Peer proposes that player Data.Player.Player disconnected from
        /// Data.Player.Tick, but this side still hears that player (or it is this side's own)
        /// and no majority agrees: held, not taken, not passed on. Peer is named, not dropped.
        /// </summary>
        ProposalRefused = 32,
        /// <summary>
        /// P2P: player Data.Player.Player's inputs reached the peers differently by check tick
        /// Data.Player.Tick (its peer sent different peers different inputs, or a peer misreports
        /// them). With a strict majority of the other peers (four or more against one liar) the
        /// majority's inputs stand for everyone and no Desync follows between honest peers; Peer
        /// is the peer this side now takes them from (it had others and resimulated), or 0.
        /// Without a majority a Desync naming the player follows. Once per player.
        /// </summary>
        InputsDisagree = 33,
        /// <summary>
        /// P2P with a rendezvous (TwSession.SetRendezvous): the path to remote player
        /// Data.Path.Player changed (Data.Path): Relayed as soon as the rendezvous introduces its
        /// peer, Direct once a connectivity check succeeds (Data.Path.Address is the peer's;
        /// again when its NAT maps it anew), back to Relayed (the relay's address) when a direct
        /// path stops answering for 1 s. The connection and the match go on through every change.
        /// </summary>
        PathChanged = 34,
        /// <summary>
        /// P2P with a rendezvous: the rendezvous refused this side's ticket (Data.Refusal.Reason).
        /// Advisory (a refusal is not authenticated): the session keeps trying; once per reason in
        /// a row.
        /// </summary>
        RendezvousRefused = 35,
    }

    /// <summary>tw_synctest_state: which state of a synctest mismatch TakeSynctestState copies.</summary>
    public enum TwSynctestState : uint
    {
        /// <summary>The state the first simulation of the tick saved.</summary>
        Saved = 0,
        /// <summary>The state after the rollback and resimulation.</summary>
        Resimulated = 1,
    }

    /// <summary>
    /// tw_session_config (320 bytes). Get one from <see cref="Default"/> (or the
    /// <see cref="RelayServer"/> and <see cref="RelayClient"/> builders), then change
    /// fields. Fields marked with modes (P2P, SYNCTEST, SPECTATOR, RELAY_SERVER,
    /// RELAY_CLIENT) are ignored by the other modes.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwSessionConfig
    {
        public uint StructSize;
        public TwSessionMode Mode;
        /// <summary>
        /// Players in the match, 1..=255; the same on every peer, spectator and replay. RELAY_SERVER
        /// and RELAY_CLIENT: the player slots, 1..=64, the same on the server and its clients.
        /// </summary>
        public uint NumPlayers;
        /// <summary>
        /// Bytes per input, 1..=TwConstants.MaxInputSize (255); the same for every player. P2P:
        /// one tick of every player's input must fit one datagram (4 players of 255 bytes, 8 of
        /// 129, 16 of 49, 32 of 12).
        /// </summary>
        public uint InputSize;
        /// <summary>Ticks per second, in (0, 10000].</summary>
        public double TickRateHz;
        /// <summary>
        /// P2P: most ticks simulated past the confirmed inputs, 0..=64; 0 is lockstep. RELAY_CLIENT:
        /// most ticks predicted past the authoritative state, 1..=64; latency beyond it becomes
        /// input delay (about a round trip plus the server's buffering: 12 at 100 ms and 60 Hz).
        /// </summary>
        public uint MaxPrediction;
        /// <summary>
        /// P2P: local inputs apply this many ticks later, 0..=32. RELAY_CLIENT with
        /// TwInputDelayMode.Fixed: the base input delay, 0..=32.
        /// </summary>
        public uint InputDelay;
        /// <summary>SYNCTEST: ticks rolled back every tick, 1..=32.</summary>
        public uint CheckDistance;
        /// <summary>
        /// P2P: compare checksums with the peers every this many ticks (0 = off). RELAY_SERVER:
        /// send the checksum of its state every this many ticks, for the clients' desync checks.
        /// </summary>
        public uint DesyncInterval;
        /// <summary>
        /// P2P: drop a silent peer after this long; 0 = never (and the progress watch,
        /// ProgressTimeoutMs, is off). Changeable later with TwSession.SetTimeouts.
        /// </summary>
        public uint DisconnectTimeoutMs;
        /// <summary>
        /// P2P: report a silent peer (PeerInterrupted) after this long; 0 = no notice. Below
        /// DisconnectTimeoutMs unless either is 0. Changeable later with TwSession.SetTimeouts.
        /// </summary>
        public uint DisconnectNotifyMs;
        /// <summary>SPECTATOR: ticks played per advance while catching up, 1..=16.</summary>
        public uint SpectatorCatchupSpeed;
        /// <summary>SPECTATOR: more than this many received ticks not yet played starts catching up.</summary>
        public uint SpectatorMaxBehind;
        /// <summary>
        /// P2P: spectators this peer may serve (default 4; 0: none). Each costs the upload of one
        /// more peer (every player's confirmed inputs, about 2.3 KB/s for 4 players of 2 bytes,
        /// and a snapshot when it joins mid-match); GGPO allows 32.
        /// </summary>
        public uint MaxSpectators;
        /// <summary>P2P: non-zero saves only confirmed ticks: fewer saves, longer re-simulations.</summary>
        public uint SparseSaving;
        public TwPrediction Prediction;
        /// <summary>
        /// P2P: a peer that keeps talking while its inputs hold the confirmed tick still for this
        /// long, or under half the tick rate for twice this long, is dropped
        /// (TwDisconnectReason.NoProgress, and a NoProgress event names it): the longest hitch an
        /// engine may take without announcing it with TwSession.SetLoading. Default 1500; 0 =
        /// DisconnectTimeoutMs (the behaviour before this field, which took the place of a
        /// reserved zero); never longer than DisconnectTimeoutMs.
        /// </summary>
        public uint ProgressTimeoutMs;
        /// <summary>
        /// P2P, SPECTATOR and the relay modes: the transport settings (MaxClients 0 = players - 1
        /// + spectators in P2P, 2 * players on a relay server).
        /// </summary>
        public TwHostConfig Host;
        /// <summary>
        /// P2P, SPECTATOR and the relay modes: the address to bind, NUL-terminated UTF-8; use
        /// Get/SetBindAddress.
        /// </summary>
        public fixed byte BindAddress[64];
        /// <summary>RELAY_CLIENT: the share of inputs its lead loop lets reach the server late, in (0, 0.5].</summary>
        public double LateRate;
        /// <summary>RELAY_SERVER and RELAY_CLIENT (the same on both): server ticks between its updates, 1..=60.</summary>
        public uint ServerSendInterval;
        /// <summary>
        /// RELAY_CLIENT: client ticks between its input packets, 1..=60; every tick while the uplink
        /// loses more than half of LateRate (held 10 s after it falls).
        /// </summary>
        public uint ClientSendInterval;
        /// <summary>
        /// RELAY_SERVER: a client's inputs queued this many ticks beyond its queue's usual span are
        /// merged into one tick, 1..=1024.
        /// </summary>
        public uint JitterMaxDepth;
        /// <summary>RELAY_SERVER: a client whose queue passes this is kicked (Overflow), JitterMaxDepth..=4096.</summary>
        public uint JitterHardCap;
        /// <summary>RELAY_SERVER: a client without an input for this many ticks in a row is kicked (Starved).</summary>
        public uint JitterMaxStarvedTicks;
        /// <summary>RELAY_SERVER: the input used for a tick whose input has not arrived.</summary>
        public TwUnderflowPolicy JitterUnderflow;
        /// <summary>RELAY_SERVER: what a tick does when a client's next input is late.</summary>
        public TwLatePolicy JitterLatePolicy;
        /// <summary>RELAY_CLIENT: where the base input delay comes from.</summary>
        public TwInputDelayMode InputDelayMode;
        /// <summary>RELAY_CLIENT with TwInputDelayMode.FromRtt: the share of the round trip shown as delay, percent, 0..=400.</summary>
        public uint InputDelayRttPercent;
        /// <summary>RELAY_CLIENT with TwInputDelayMode.FromRtt: the most ticks of base input delay, 0..=32.</summary>
        public uint InputDelayMax;
        /// <summary>RELAY_CLIENT: most authoritative ticks simulated per advance while catching up, 1..=256.</summary>
        public uint CatchupTicks;
        /// <summary>RELAY_SERVER: how long a dropped player's slot waits for it to come back with its token.</summary>
        public uint SlotTimeoutMs;
        /// <summary>RELAY_SERVER: a connection without a Hello within this time is closed (NoHello).</summary>
        public uint HelloTimeoutMs;
        /// <summary>RELAY_CLIENT: how long it reconnects by itself after its connection timed out (0 = never).</summary>
        public uint ReconnectWindowMs;
        /// <summary>RELAY_SERVER: canonical steps kept for clients that have not acknowledged them, 1..=100000 (one further behind is sent a snapshot: PlayerCatchingUp).</summary>
        public uint StepHistory;
        /// <summary>RELAY_SERVER: most steps past a client's acknowledged one sent to it, 16..=256 (default 256; the RTT and loss size it below that).</summary>
        public uint StepWindow;
        /// <summary>RELAY_SERVER: bytes per second per client before redundant step copies are left out (0 = no cap); never stalls.</summary>
        public uint BandwidthCap;
        /// <summary>RELAY_SERVER: most datagrams one update to one client takes, 1..=64 (default 16).</summary>
        public uint MaxUpdateDatagrams;
        /// <summary>
        /// Every mode: the catch-up cap of TwSession.TicksDue in milliseconds, 1..=10000 (default
        /// 250) and at least one tick. After a longer hitch only this much time is turned into
        /// ticks and the rest is dropped, not simulated: one call hands out at most about
        /// MaxCatchUpMs * TickRateHz / 1000 ticks (15 at 60 Hz; P2P and relay clients up to 10%
        /// more while their time sync runs fast). 0 is refused.
        /// </summary>
        public uint MaxCatchUpMs;
        /// <summary>
        /// P2P: the time each peer's announced stalls (TwSession.SetLoading) may hold the match
        /// without counting as no progress, in total over the match, in milliseconds (default
        /// 10000; 0 = none). It took the place of the last reserved bytes.
        /// </summary>
        public uint LoadingGraceMs;

        /// <summary>
        /// The library's defaults (tw_session_config_init_default, P2P, 2 players, 2-byte
        /// inputs, 60 Hz, bound to "0.0.0.0:0") with Mode set to mode.
        /// </summary>
        public static TwSessionConfig Default(TwSessionMode mode = TwSessionMode.P2P)
        {
            TwLibrary.EnsureCompatible();
            TwSessionConfig c;
            TwResult r = Native.TwNative.tw_session_config_init_default(&c);
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
            c.Mode = mode;
            return c;
        }

        /// <summary>
        /// A relay server's config: the library's defaults with numPlayers player slots of
        /// inputSize-byte inputs, bound to bindAddress ("0.0.0.0:7777"). Its clients use the
        /// same numPlayers, inputSize, TickRateHz and ServerSendInterval.
        /// <para>
        /// Not Unity Relay: tickwire's relay is its own authoritative server with client-side
        /// prediction, a TwSession you run yourself (a dedicated server build or the host's
        /// scene) that simulates the game and sends every client the canonical inputs. It is
        /// not Unity Relay, the Unity Gaming Services product that forwards packets between
        /// players through Unity's servers, and needs neither that service nor Unity Transport.
        /// </para>
        /// </summary>
        public static TwSessionConfig RelayServer(uint numPlayers, uint inputSize, string bindAddress)
        {
            TwSessionConfig c = Default(TwSessionMode.RelayServer);
            c.NumPlayers = numPlayers;
            c.InputSize = inputSize;
            c.SetBindAddress(bindAddress);
            return c;
        }

        /// <summary>
        /// A relay client's config: the library's defaults with numPlayers player slots of
        /// inputSize-byte inputs (the server's), bound to bindAddress (default any port).
        /// Name the server with TwSession.SetServer before Start. Raise MaxPrediction above its
        /// default for round trips beyond about 60 ms at 60 Hz.
        /// <para>
        /// Not Unity Relay: tickwire's relay is its own authoritative server with client-side
        /// prediction, a TwSession you run yourself (a dedicated server build or the host's
        /// scene) that simulates the game and sends every client the canonical inputs. It is
        /// not Unity Relay, the Unity Gaming Services product that forwards packets between
        /// players through Unity's servers, and needs neither that service nor Unity Transport.
        /// </para>
        /// </summary>
        public static TwSessionConfig RelayClient(uint numPlayers, uint inputSize, string bindAddress = "0.0.0.0:0")
        {
            TwSessionConfig c = Default(TwSessionMode.RelayClient);
            c.NumPlayers = numPlayers;
            c.InputSize = inputSize;
            c.SetBindAddress(bindAddress);
            return c;
        }

        /// <summary>The bind address as a string (allocates).</summary>
        public string GetBindAddress()
        {
            fixed (byte* p = BindAddress)
            {
                return TwText.FromUtf8(p, 64);
            }
        }

        /// <summary>
        /// Sets the address to bind ("0.0.0.0:7000", "127.0.0.1:0", "[::]:0"; the default is
        /// "0.0.0.0:0", IPv4 only). "" is the automatic bind: any free port on a dual-stack
        /// socket that reaches IPv4 and IPv6 peers. Throws ArgumentException if its UTF-8
        /// form does not fit in 63 bytes.
        /// </summary>
        public void SetBindAddress(string address)
        {
            byte[] text = TwText.ToUtf8Z(address);
            if (text.Length > 64)
            {
                throw new ArgumentException("a bind address has at most 63 bytes of UTF-8: " + address, "address");
            }
            fixed (byte* p = BindAddress)
            {
                for (int i = 0; i < 64; i++)
                {
                    p[i] = i < text.Length ? text[i] : (byte)0;
                }
            }
        }
    }

    /// <summary>
    /// tw_request (64 bytes), filled by TwSession.PollRequest. The inputs, statuses or
    /// state it refers to are read with TwSession.ReadInputs / ReadInputStatus /
    /// ReadState until the next poll.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwRequest
    {
        public TwRequestKind Kind;
        /// <summary>The tick it concerns (SAVE and LOAD: the state at its start).</summary>
        public uint Tick;
        /// <summary>SAVE, LOAD, DUMP_STATE: the snapshot slot, in 0..TwSession.StateSlots.</summary>
        public uint Slot;
        public TwRequestFlags Flags;
        /// <summary>ADVANCE: the number of inputs (players).</summary>
        public uint NumPlayers;
        /// <summary>ADVANCE: bytes per input.</summary>
        public uint InputSize;
        /// <summary>ADVANCE: NumPlayers * InputSize; RESTORE: the state's length.</summary>
        public ulong DataLen;
        public fixed byte Reserved[32];

        /// <summary>ADVANCE after a rollback: mute sounds and effects.</summary>
        public bool IsResimulating
        {
            get { return (Flags & TwRequestFlags.Resimulating) != 0; }
        }

        /// <summary>ADVANCE with at least one predicted input.</summary>
        public bool IsPredicted
        {
            get { return (Flags & TwRequestFlags.Predicted) != 0; }
        }

        /// <summary>ADVANCE whose inputs are all final: its outcome will not change.</summary>
        public bool IsAuthoritative
        {
            get { return (Flags & TwRequestFlags.Authoritative) != 0; }
        }
    }

    /// <summary>tw_session_event_peer: PEER_CONNECTED, PEER_INTERRUPTED, PEER_RESUMED, PEER_DISCONNECTED.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventPeer
    {
        /// <summary>The lowest player index behind the connection, or TwConstants.NoPlayer.</summary>
        public uint Player;
        /// <summary>
        /// PEER_DISCONNECTED: why, a TwDisconnectReason (Timeout: silence, or no tick confirmed
        /// for the disconnect timeout; ProtocolError: its messages contradicted what this side
        /// knows, and its connection was closed). Else 0.
        /// </summary>
        public uint Reason;
        /// <summary>PEER_INTERRUPTED: microseconds of further silence before the peer is dropped.</summary>
        public ulong DisconnectInUs;
        /// <summary>
        /// PEER_CONNECTED: what the connection proved (a P2P peer's role follows it: a
        /// spectators' secret never takes a player's place); else Open (0).
        /// </summary>
        public TwCredential Credential;
        /// <summary>Must be ignored.</summary>
        public uint Reserved0;
    }

    /// <summary>tw_session_event_player: PLAYER_DISCONNECTED.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventPlayer
    {
        public uint Player;
        /// <summary>First tick simulated with a disconnected input.</summary>
        public uint Tick;
    }

    /// <summary>tw_session_event_tick: PREDICTION_WINDOW_FULL, ROLLBACK_TOO_FAR, DESYNC_DUMP_READY.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventTick
    {
        public uint Tick;
    }

    /// <summary>tw_session_event_desync: DESYNC.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventDesync
    {
        /// <summary>The confirmed tick whose checksums differ.</summary>
        public uint Tick;
        /// <summary>
        /// P2P: the player whose peer sent different peers different inputs, plus one (0: none
        /// found): the desync is that peer's, not the reporting one's.
        /// </summary>
        public uint Culprit;
        public ulong LocalChecksum;
        public ulong RemoteChecksum;
    }

    /// <summary>tw_session_event_mismatch: SYNCTEST_MISMATCH.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventMismatch
    {
        /// <summary>The tick whose starting state differs.</summary>
        public uint Tick;
        public uint Reserved0;
        /// <summary>Checksum of the first simulation.</summary>
        public ulong ExpectedChecksum;
        /// <summary>Checksum after the rollback.</summary>
        public ulong ActualChecksum;
    }

    /// <summary>tw_session_event_input_delay: InputDelayChanged, a relay client's input delay in force.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventInputDelay
    {
        /// <summary>The input delay now, in ticks.</summary>
        public uint Ticks;
        /// <summary>The part of it that is latency beyond MaxPrediction (0: none).</summary>
        public uint Spill;
    }

    /// <summary>
    /// tw_session_event_progress: SynchronizingWithPeer and SynchronizedWithPeer, a P2P
    /// session's connection progress (GGPO's SYNCHRONIZING_WITH_PEER and
    /// SYNCHRONIZED_WITH_PEER).
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventProgress
    {
        /// <summary>The lowest player index behind the remote peer.</summary>
        public uint Player;
        /// <summary>0 connecting, 1 connected (waiting for its first message), 2 synchronized.</summary>
        public uint Step;
        /// <summary>Remote peers this side is synchronized with now.</summary>
        public uint Synchronized;
        /// <summary>Remote peers of the match.</summary>
        public uint Total;
    }

    /// <summary>tw_session_event_fatal: FATAL, what went wrong as NUL-terminated UTF-8.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwSessionEventFatal
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

    /// <summary>tw_session_event_message: MESSAGE.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventMessage
    {
        /// <summary>
        /// The sender's lowest player index (P2P: a player of the sending peer; RELAY_SERVER:
        /// the client's slot), or TwConstants.NoPlayer when a relay server sent it. Pass it to
        /// SendMessage to answer (a relay client answers with SessionMessageTargetAll).
        /// </summary>
        public uint Player;
        /// <summary>Payload size in bytes, at most TwConstants.SessionMessageMaxSize; ReadMessage copies it.</summary>
        public uint Size;
    }

    /// <summary>
    /// tw_session_message_stats (64 bytes): the figures of a session's message side channel
    /// (TwSession.GetMessageStats), zero in the modes without one. New figures take space from
    /// Reserved.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwSessionMessageStats
    {
        /// <summary>Messages SendMessage accepted (once per connection a message went to).</summary>
        public ulong Sent;
        /// <summary>Messages received and handed out as Message events.</summary>
        public ulong Received;
        /// <summary>Messages dropped on arrival: their sender already had SessionMessageUnreadBytes waiting.</summary>
        public ulong DroppedUnread;
        /// <summary>Messages dropped on arrival from a non-member (a spectator, a client not joined) or oversized.</summary>
        public ulong DroppedRefused;
        public fixed ulong Reserved[4];
    }

    /// <summary>
    /// tw_session_event_data: the union. Read only the member named by TwSessionEvent.Kind
    /// (Relay for the relay kinds 15..23, Rejected for ConnectionRejected, Path for
    /// PathChanged, Refusal for RendezvousRefused).
    /// </summary>
    [StructLayout(LayoutKind.Explicit, Size = 120)]
    public unsafe struct TwSessionEventData
    {
        [FieldOffset(0)] public TwSessionEventPeer Peer;
        [FieldOffset(0)] public TwSessionEventPlayer Player;
        [FieldOffset(0)] public TwSessionEventTick Tick;
        [FieldOffset(0)] public TwSessionEventDesync Desync;
        [FieldOffset(0)] public TwSessionEventMismatch SynctestMismatch;
        [FieldOffset(0)] public TwSessionEventRelay Relay;
        [FieldOffset(0)] public TwSessionEventRejected Rejected;
        [FieldOffset(0)] public TwSessionEventFatal Fatal;
        [FieldOffset(0)] public TwSessionEventMessage Message;
        [FieldOffset(0)] public TwSessionEventProgress Progress;
        [FieldOffset(0)] public TwSessionEventInputDelay InputDelay;
        [FieldOffset(0)] public TwSessionEventPath Path;
        [FieldOffset(0)] public TwSessionEventRefusal Refusal;
        /// <summary>Fixes the size and the 8-byte alignment of the union.</summary>
        [FieldOffset(0)] public fixed ulong Reserved[15];
    }

    /// <summary>tw_session_event (128 bytes), filled by TwSession.PollEvent. A plain copy.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEvent
    {
        public TwSessionEventKind Kind;
        /// <summary>The connection it concerns (0 if none), as in TwSession.GetPeerStats.</summary>
        public uint Peer;
        public TwSessionEventData Data;
    }

    /// <summary>
    /// tw_session_stats (256 bytes): figures of a session, zero where the mode has no
    /// such figure. New figures take space from Reserved. A relay client's net graph:
    /// RttUs, LeadTicks, ServerBufferDepth, PredictionDistance, ResimulatedTicks,
    /// LateInputs. A relay server's per-player figures: TwSession.GetPlayerStats.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwSessionStats
    {
        /// <summary>
        /// Non-zero once started and every connection is up (RELAY_SERVER: once started;
        /// RELAY_CLIENT: once joined and caught up).
        /// </summary>
        public uint Running;
        public TwSessionMode Mode;
        /// <summary>The next tick to simulate.</summary>
        public uint CurrentTick;
        /// <summary>Every input before this tick is final (RELAY_CLIENT: the authoritative tick).</summary>
        public uint ConfirmedTick;
        /// <summary>P2P: mean ticks this peer runs ahead of the others (negative: behind).</summary>
        public float FramesAhead;
        /// <summary>P2P: the longest rollback so far, in ticks. RELAY_CLIENT: the deepest re-prediction.</summary>
        public uint MaxRollback;
        /// <summary>P2P and RELAY_CLIENT: the tick clock's time scale (1.0 = real time).</summary>
        public double TimeScale;
        /// <summary>P2P: rollbacks done. RELAY_CLIENT: re-predictions (paid only when a prediction was wrong).</summary>
        public ulong Rollbacks;
        /// <summary>P2P and RELAY_CLIENT: ticks re-simulated in total.</summary>
        public ulong ResimulatedTicks;
        public ulong WindowFullTicks;
        /// <summary>
        /// P2P: checksums compared with peers. RELAY_CLIENT: server checksums compared with its
        /// own. RELAY_SERVER: checksum reports sent.
        /// </summary>
        public ulong ChecksCompared;
        /// <summary>P2P and RELAY_CLIENT: desyncs detected.</summary>
        public ulong Desyncs;
        public ulong MalformedMessages;
        public ulong SendErrors;
        public ulong SynctestMismatches;
        /// <summary>Incoming connections refused (RELAY_SERVER: for any TwRejectReason).</summary>
        public ulong RejectedConnections;
        public ulong BytesSent;
        public ulong BytesReceived;
        /// <summary>SPECTATOR: ticks received and not played yet.</summary>
        public uint FramesBehind;
        public uint ConnectedPeers;
        /// <summary>P2P: the current input delay in ticks. RELAY_CLIENT: the delay in force.</summary>
        public uint InputDelay;
        /// <summary>Snapshot slots the engine holds (as TwSession.StateSlots).</summary>
        public uint StateSlots;
        /// <summary>
        /// RELAY_CLIENT: how long before the server consumes it an input is sampled, in
        /// fractional ticks (half the round trip plus the median arrival margin).
        /// </summary>
        public double LeadTicks;
        /// <summary>RELAY_CLIENT: how far the interpolated server timeline is behind the newest update, in ticks.</summary>
        public double InterpDelayTicks;
        /// <summary>RELAY_CLIENT: the smoothed round trip to the server, in microseconds.</summary>
        public double RttUs;
        /// <summary>
        /// RELAY_CLIENT: canonical ticks where the server did not use its input on time.
        /// RELAY_SERVER: inputs whose first copy arrived after their tick.
        /// </summary>
        public ulong LateInputs;
        /// <summary>RELAY_CLIENT: server steps that merged several of its inputs. RELAY_SERVER: over every player.</summary>
        public ulong MergedSteps;
        /// <summary>RELAY_CLIENT: server steps that used none of its inputs. RELAY_SERVER: over every player.</summary>
        public ulong EmptySteps;
        /// <summary>RELAY_CLIENT: discrete clock corrections (snaps, loop re-acquisitions).</summary>
        public ulong ClockCorrections;
        /// <summary>RELAY_CLIENT: canonical ticks where its own input had been mispredicted (only when late).</summary>
        public ulong LocalMispredictions;
        /// <summary>RELAY_CLIENT: canonical ticks where another player's input or presence had been mispredicted.</summary>
        public ulong RemoteMispredictions;
        /// <summary>RELAY_CLIENT: inputs waiting in its jitter buffer on the server, as the server last said.</summary>
        public uint ServerBufferDepth;
        /// <summary>RELAY_CLIENT: current minus authoritative tick.</summary>
        public uint PredictionDistance;
        /// <summary>RELAY_SERVER: players connected. RELAY_CLIENT: 1 once it has a player slot.</summary>
        public uint Players;
        /// <summary>RELAY_CLIENT: its player slot, or TwConstants.NoPlayer before it has one.</summary>
        public uint LocalPlayer;
        /// <summary>RELAY_CLIENT: times it got its slot back after a dropped connection.</summary>
        public uint Reconnects;
        /// <summary>RELAY_CLIENT and RELAY_SERVER: snapshots asked for again on a live connection.</summary>
        public uint Resyncs;
        /// <summary>
        /// RELAY_CLIENT: client ticks between its input packets now: ClientSendInterval, or 1 while
        /// the uplink loses more than half of LateRate.
        /// </summary>
        public uint InputSendInterval;
        /// <summary>RELAY_CLIENT: copies of each input it sends now (1: no redundancy).</summary>
        public uint InputCopies;
        public fixed ulong Reserved[2];
    }
}
