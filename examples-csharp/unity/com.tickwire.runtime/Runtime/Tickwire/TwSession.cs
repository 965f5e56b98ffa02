using System;
using System.Runtime.InteropServices;
using Tickwire.Native;

namespace Tickwire
{
    /// <summary>
    /// A tickwire session: the rollback topologies (P2P, SYNCTEST, SPECTATOR, REPLAY)
    /// and the relay topology (RELAY_SERVER, RELAY_CLIENT with prediction), driving the
    /// engine's simulation through requests. The engine owns the game state; the
    /// session asks it to SAVE, LOAD, ADVANCE, RESTORE and DUMP_STATE.
    ///
    /// Setup (constructor, players, spectators, server, replay, Start, recording,
    /// tuning) throws <see cref="TickwireException"/> with the code and the library's
    /// message. The per-frame calls (TicksDue, PushInput, Advance, PollRequest, the
    /// Read* copies, ConfirmSave, ProvideState, PollEvent, RequestSnapshot, stats)
    /// return a <see cref="TwResult"/> (or a bool) and never allocate. Any call after
    /// Dispose throws ObjectDisposedException.
    ///
    /// Not thread-safe: call it from one thread at a time (the engine's main thread).
    /// A call made while another thread is inside one does nothing and gets
    /// <see cref="TwResult.Busy"/> (or throws with it), never memory corruption.
    /// The network thread (P2P, SPECTATOR, the relay modes) never calls managed code.
    ///
    /// The engine loop, once per frame:
    /// <code>
    /// int due; session.TicksDue(out due);
    /// for (int i = 0; i &lt; due; i++) {
    ///     session.PushInput(me, myInput);          // relay client: TwConstants.LocalPlayer
    ///     session.Advance();                       // Ok, or a status (WindowFull, ...)
    ///     TwRequest r;
    ///     while (session.TryPollRequest(out r)) { /* SAVE, LOAD, ADVANCE, ... in order */ }
    /// }
    /// TwSessionEvent e;
    /// while (session.TryPollEvent(out e)) { /* react */ }
    /// </code>
    /// </summary>
    public sealed unsafe partial class TwSession : IDisposable
    {
        private readonly SessionHandle _handle;
        /// <summary>This session's entry in TwLog's handler table (0: no log).</summary>
        private int _logId;
        private readonly TwSessionMode _mode;
        private readonly int _numPlayers;
        private readonly int _inputSize;
        private readonly int _stateSlots;
        private string _localAddress;

        // Live sessions, so that DisposeAll can release them before a Unity domain reload.
        private static readonly LiveHandles s_live = new LiveHandles();
        private readonly WeakReference _liveToken;

        /// <summary>
        /// Creates a session. Get config from TwSessionConfig.Default(mode) (or its
        /// RelayServer / RelayClient builders) and change fields. P2P, SPECTATOR and the
        /// relay modes bind their UDP socket (config's bind address) and start the network
        /// thread now. Then add players (P2P), spectators (P2P), the watched host
        /// (SPECTATOR), the server (RELAY_CLIENT: SetServer) or the replay (REPLAY), and
        /// call Start.
        /// </summary>
        public TwSession(TwSessionConfig config) : this(config, null)
        {
        }

        /// <summary>
        /// As above, with security settings (P2P: the match secret; SPECTATOR: the spectators'
        /// secret; RELAY_SERVER: the connect key and public address; RELAY_CLIENT: the connect
        /// token from the backend). config.Host.Security points at them during this call
        /// only; dispose security afterwards (the session keeps its own copy). Null keeps
        /// config.Host.Security (IntPtr.Zero by default: encrypted and open to anyone). A bad
        /// setting throws TickwireException (InvalidArgument, naming the tw_security_config field).
        /// </summary>
        public TwSession(TwSessionConfig config, TwSecurity security)
        {
            TwLibrary.EnsureCompatible();
            IntPtr raw = IntPtr.Zero;
            TwResult r;
            bool held = false;
            try
            {
                if (security != null)
                {
                    config.Host.Security = security.AcquirePointer();
                    held = true;
                }
                r = TwNative.tw_session_create(&config, &raw);
            }
            finally
            {
                if (held)
                {
                    security.ReleasePointer();
                }
            }
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
            _handle = new SessionHandle(raw);
            uint slots;
            r = TwNative.tw_session_state_slots(_handle, &slots);
            if (r != TwResult.Ok)
            {
                TickwireException e = TickwireException.FromLastError(r);
                _handle.Dispose();
                throw e;
            }
            _mode = config.Mode;
            _numPlayers = (int)config.NumPlayers;
            _inputSize = (int)config.InputSize;
            _stateSlots = (int)slots;
            _liveToken = s_live.Add(_handle);
        }

        /// <summary>The owned native handle (for code that calls the C API itself).</summary>
        public SessionHandle Handle
        {
            get { return _handle; }
        }

        /// <summary>True once Dispose (or DisposeAll) has destroyed the native session.</summary>
        public bool IsDisposed
        {
            get { return _handle.IsClosed; }
        }

        /// <summary>The topology the session was created with (the config's Mode). Throws ObjectDisposedException after Dispose.</summary>
        public TwSessionMode Mode
        {
            get
            {
                ThrowIfDisposed();
                return _mode;
            }
        }

        /// <summary>Players in the match (the config's NumPlayers). Throws ObjectDisposedException after Dispose.</summary>
        public int NumPlayers
        {
            get
            {
                ThrowIfDisposed();
                return _numPlayers;
            }
        }

        /// <summary>Bytes per input (the config's InputSize). Throws ObjectDisposedException after Dispose.</summary>
        public int InputSize
        {
            get
            {
                ThrowIfDisposed();
                return _inputSize;
            }
        }

        /// <summary>
        /// How many state snapshots the engine must hold: every SAVE, LOAD and
        /// DUMP_STATE request names a slot in 0..StateSlots. Known from creation, so the
        /// engine allocates its snapshot array once. 0 for SPECTATOR and REPLAY. Throws
        /// ObjectDisposedException after Dispose.
        /// </summary>
        public int StateSlots
        {
            get
            {
                ThrowIfDisposed();
                return _stateSlots;
            }
        }

        /// <summary>
        /// P2P, SPECTATOR and the relay modes: the address the socket is bound to, for
        /// example "127.0.0.1:40123" (the real port when bound to port 0; what a relay
        /// server's clients pass to SetServer). Computed once.
        /// Throws InvalidState in the modes without a socket.
        /// </summary>
        public string LocalAddress
        {
            get
            {
                ThrowIfDisposed();
                if (_localAddress == null)
                {
                    byte* buf = stackalloc byte[64];
                    UIntPtr len;
                    ThrowIfFailed(TwNative.tw_session_local_address(_handle, buf, (UIntPtr)64, &len));
                    _localAddress = TwText.FromUtf8(buf, 64);
                }
                return _localAddress;
            }
        }

        // --- setup (throws) ------------------------------------------------------------------

        /// <summary>P2P, before Start: player (0-based) plays on this machine.</summary>
        public void AddLocalPlayer(uint player)
        {
            ThrowIfDisposed();
            ThrowIfFailed(TwNative.tw_session_add_local_player(_handle, player));
        }

        /// <summary>
        /// P2P, before Start: player plays on the peer at address ("192.0.2.7:7000",
        /// "[2001:db8::7]:7000", or a host name and port: "peer.lan:7000", as
        /// TwHost.Connect). Players sharing an address share a connection (names: the same
        /// text). Every peer lists the same players in the same order. A name is looked up
        /// off this thread; neither this call nor Start waits for it, and a name that gives
        /// no address ends the session with a Fatal event naming it. With a rendezvous
        /// (SetRendezvous) address is null: the player's peer is met through it (one player
        /// per peer); without one, null throws NullArgument.
        /// </summary>
        public void AddRemotePlayer(uint player, string address)
        {
            ThrowIfDisposed();
            if (address == null)
            {
                ThrowIfFailed(TwNative.tw_session_add_remote_player(_handle, player, null));
                return;
            }
            byte[] text = TwText.ToUtf8Z(address);
            fixed (byte* a = text)
            {
                ThrowIfFailed(TwNative.tw_session_add_remote_player(_handle, player, a));
            }
        }

        /// <summary>
        /// P2P with a rendezvous (SetRendezvous), before Start: player plays on a peer met
        /// through the rendezvous (AddRemotePlayer with a null address). One player per peer.
        /// </summary>
        public void AddRendezvousPlayer(uint player)
        {
            AddRemotePlayer(player, null);
        }

        /// <summary>
        /// P2P, before Start and before the remote players: meet the match's other peers
        /// through the rendezvous at address (IP and port) with this player's ticket
        /// (TwConstants.ConnectTokenSize bytes from the game's backend: TwRendezvous.GenerateTicket,
        /// a connect token minted with the rendezvous's key whose user data starts with the
        /// match claim), instead of at addresses given; then add each remote player with
        /// AddRendezvousPlayer. Needs the players' secret (TwSecurity.ForMatch) and exactly one
        /// local player, the ticket's slot (checked at Start).
        /// <para>
        /// At Start the session registers with the rendezvous, which introduces the other peers
        /// and relays their packets at once (sealed end to end: it cannot read them); the peers
        /// check the direct paths between them and move to one that answers. PathChanged events
        /// (Data.Path) report each change: Relayed, then Direct, back to Relayed if a direct path
        /// stops answering; GetNetworkStats' Path says the path now. privateMatch
        /// (TwConstants.RendezvousPrivate) relays everything and tells nobody this side's
        /// address: every pair with a private peer stays relayed. A refused ticket is a
        /// RendezvousRefused event (advisory; the session keeps trying).
        /// </para>
        /// Throws TickwireException: InvalidArgument (an unparsable address, a ticket that is not
        /// a connect token, no players' secret), InvalidState (not P2P, or started).
        /// </summary>
        public void SetRendezvous(string address, ReadOnlySpan<byte> ticket, bool privateMatch = false)
        {
            ThrowIfDisposed();
            byte[] text = TwText.ToUtf8Z(address);
            uint flags = privateMatch ? TwConstants.RendezvousPrivate : 0u;
            fixed (byte* a = text)
            fixed (byte* t = &MemoryMarshal.GetReference(ticket))
            {
                ThrowIfFailed(TwNative.tw_session_set_rendezvous(_handle, a, t, (UIntPtr)ticket.Length, flags));
            }
        }

        /// <summary>P2P, any time: accept a spectator connecting from address.</summary>
        public void AddSpectator(string address)
        {
            ThrowIfDisposed();
            byte[] text = TwText.ToUtf8Z(address);
            fixed (byte* a = text)
            {
                ThrowIfFailed(TwNative.tw_session_add_spectator(_handle, a));
            }
        }

        /// <summary>
        /// SPECTATOR, before Start: the P2P peer whose match to watch, by IP or host name with
        /// its port (as TwHost.Connect; it must have added this session's address). A name that
        /// gives no address ends the session with a Fatal event.
        /// </summary>
        public void Spectate(string address)
        {
            ThrowIfDisposed();
            byte[] text = TwText.ToUtf8Z(address);
            fixed (byte* a = text)
            {
                ThrowIfFailed(TwNative.tw_session_spectate(_handle, a));
            }
        }

        /// <summary>REPLAY, before Start: the replay to play, as the bytes of a replay file (copied).</summary>
        public void LoadReplay(ReadOnlySpan<byte> replay)
        {
            ThrowIfDisposed();
            fixed (byte* p = &MemoryMarshal.GetReference(replay))
            {
                ThrowIfFailed(TwNative.tw_session_load_replay(_handle, p, (UIntPtr)replay.Length));
            }
        }

        /// <summary>
        /// REPLAY, before Start: reads the replay file at path: a regular file of at most
        /// TwConstants.MaxReplaySize bytes (a FIFO, a directory, a device or a larger file
        /// throws InvalidArgument without being read).
        /// </summary>
        public void LoadReplayFile(string path)
        {
            ThrowIfDisposed();
            byte[] text = TwText.ToUtf8Z(path);
            fixed (byte* p = text)
            {
                ThrowIfFailed(TwNative.tw_session_load_replay_file(_handle, p));
            }
        }

        /// <summary>
        /// P2P, SPECTATOR and the relay modes: simulates latency, jitter and loss on this session's
        /// datagrams in one direction (development and tests). Get config from
        /// TwLinkSimConfig.Default() and change fields.
        /// </summary>
        public void SetLinkSim(TwDirection direction, TwLinkSimConfig config)
        {
            ThrowIfDisposed();
            ThrowIfFailed(TwNative.tw_session_set_link_sim(_handle, (uint)direction, &config));
        }

        /// <summary>Turns the link simulator of one direction off.</summary>
        public void ClearLinkSim(TwDirection direction)
        {
            ThrowIfDisposed();
            ThrowIfFailed(TwNative.tw_session_set_link_sim(_handle, (uint)direction, null));
        }

        /// <summary>
        /// Ends setup. P2P connects to the peers (PeerConnected events follow, then
        /// Synchronized once every peer is heard); SPECTATOR connects to the watched
        /// host; SYNCTEST and REPLAY run at once. RELAY_SERVER starts its clock and
        /// accepts clients (PlayerJoined events follow); RELAY_CLIENT connects to the
        /// server (PeerConnected, then Joined with the snapshot, then Synchronized once
        /// caught up).
        /// </summary>
        public void Start()
        {
            ThrowIfDisposed();
            ThrowIfFailed(TwNative.tw_session_start(_handle));
        }

        /// <summary>
        /// P2P, before the first tick: records every input from tick 0 on, as ticks
        /// become final. initialState is the engine's serialized state at tick 0 (may be
        /// empty, at most TwConstants.MaxReplaySize less the 28-byte replay header); a REPLAY
        /// session hands it back as a RESTORE request.
        /// </summary>
        public void StartRecording(ReadOnlySpan<byte> initialState)
        {
            ThrowIfDisposed();
            fixed (byte* p = &MemoryMarshal.GetReference(initialState))
            {
                ThrowIfFailed(TwNative.tw_session_start_recording(_handle, p, (UIntPtr)initialState.Length));
            }
        }

        /// <summary>
        /// P2P: drops remote player on purpose, like GGPO's ggpo_disconnect_player. Its peer (with
        /// every player behind it) is dropped: PeerDisconnected follows here and on the peer
        /// (TwDisconnectReason.KickedByEngine), and the match goes on with that player's inputs
        /// marked TwInputStatus.Disconnected. Ok; InvalidArgument for no such player or a local
        /// one; InvalidState in another mode, before the match runs, or when the peer is already
        /// gone (TwLibrary.LastErrorMessage says which).
        /// </summary>
        public TwResult DisconnectPlayer(uint player)
        {
            ThrowIfDisposed();
            return TwNative.tw_session_disconnect_player(_handle, player);
        }

        /// <summary>
        /// P2P: the silence timeouts from now on, as TwSessionConfig.DisconnectTimeoutMs (0 =
        /// never dropped) and DisconnectNotifyMs (0 = no PeerInterrupted notice), checked as at
        /// create: the notice below the drop unless either is 0. Any time; before Start it
        /// replaces the configured values. Throws TickwireException: InvalidArgument for a
        /// notice not below the drop, InvalidState in another mode.
        /// </summary>
        public void SetTimeouts(uint disconnectTimeoutMs, uint disconnectNotifyMs)
        {
            ThrowIfDisposed();
            ThrowIfFailed(TwNative.tw_session_set_timeouts(_handle, disconnectTimeoutMs, disconnectNotifyMs));
        }

        /// <summary>
        /// P2P: announces (true) or ends (false) a stall of this side's engine, such as a loading
        /// screen mid-match. The peers then do not count this side's held-back inputs as no
        /// progress (TwSessionConfig.ProgressTimeoutMs) until their LoadingGraceMs for it is
        /// spent: that grace is per peer for the whole match, so a stall announced for ever is
        /// still dropped once it runs out. The flag goes to the peers with every message, and
        /// messages go only from the engine's calls: while loading, keep calling TicksDue (and
        /// PollEvent) each frame without advancing. An engine that makes no calls at all is
        /// silent, and dropped after DisconnectTimeoutMs whatever it announced. Any time; before
        /// Start it applies from the start. Throws TickwireException: InvalidState in another
        /// mode.
        /// </summary>
        public void SetLoading(bool loading)
        {
            ThrowIfDisposed();
            ThrowIfFailed(TwNative.tw_session_set_loading(_handle, loading ? 1u : 0u));
        }

        /// <summary>P2P: every local player's input delay (0..=32 ticks) from the next tick on.</summary>
        public void SetInputDelay(uint ticks)
        {
            ThrowIfDisposed();
            ThrowIfFailed(TwNative.tw_session_set_input_delay(_handle, ticks));
        }

        /// <summary>
        /// P2P: local player's own input delay (0..=32 ticks) from the next tick on, as GGPO's
        /// ggpo_set_frame_delay; the other local players keep theirs.
        /// </summary>
        public void SetPlayerInputDelay(uint player, uint ticks)
        {
            ThrowIfDisposed();
            ThrowIfFailed(TwNative.tw_session_set_player_input_delay(_handle, player, ticks));
        }

        /// <summary>
        /// P2P: the input to predict for player while its real input has not arrived
        /// (InputSize bytes), for example "neutral stick, no buttons".
        /// </summary>
        public void SetPrediction(uint player, ReadOnlySpan<byte> input)
        {
            ThrowIfDisposed();
            // An empty span may have a null reference, which the C call reads as "back to
            // the configured prediction"; a dummy byte keeps it a (wrong-length) input.
            byte dummy = 0;
            fixed (byte* p = &MemoryMarshal.GetReference(input))
            {
                byte* q = p != null ? p : &dummy;
                ThrowIfFailed(TwNative.tw_session_set_prediction(_handle, player, q, (UIntPtr)input.Length));
            }
        }

        /// <summary>P2P: back to the configured prediction (TwSessionConfig.Prediction) for player.</summary>
        public void ClearPrediction(uint player)
        {
            ThrowIfDisposed();
            ThrowIfFailed(TwNative.tw_session_set_prediction(_handle, player, null, UIntPtr.Zero));
        }

        // --- the engine loop (TwResult, never allocates) -------------------------------------

        /// <summary>
        /// Pumps the network and sets ticks to the number of ticks to simulate now. Call
        /// it once per frame, also while nothing is due; then advance that many times. It
        /// covers at most TwSessionConfig.MaxCatchUpMs of time (default 250 ms, 15 ticks at
        /// 60 Hz): after a longer hitch the excess is dropped, not simulated.
        /// InvalidState before Start; NetworkThreadGone after a Fatal event.
        /// </summary>
        public TwResult TicksDue(out int ticks)
        {
            ThrowIfDisposed();
            uint n = 0;
            TwResult r = TwNative.tw_session_ticks_due(_handle, &n);
            ticks = (int)n;
            return r;
        }

        /// <summary>
        /// Gives player's input (exactly InputSize bytes, copied) for the next Advance.
        /// P2P: local players only; SYNCTEST: every player; RELAY_CLIENT:
        /// TwConstants.LocalPlayer, every due tick (also before it has joined);
        /// RELAY_SERVER: none (it has no player of its own).
        /// </summary>
        public TwResult PushInput(uint player, ReadOnlySpan<byte> input)
        {
            ThrowIfDisposed();
            fixed (byte* p = &MemoryMarshal.GetReference(input))
            {
                return TwNative.tw_session_push_input(_handle, player, p, (UIntPtr)input.Length);
            }
        }

        /// <summary>
        /// Runs one tick as requests to poll (all of them, in order, before the next
        /// Advance). Ok, or a status that is not an error: NotSynchronized, WindowFull
        /// (P2P and a relay client at the prediction cap: skip the tick, but poll: the
        /// requests may hold a rollback), WaitingForInput (SPECTATOR), Finished (REPLAY at
        /// its end; a relay client after ServerLost, whose TicksDue is 0 from then on); a
        /// relay client answers NotSynchronized until it has joined and while it
        /// reconnects. Negative on an error.
        /// </summary>
        public TwResult Advance()
        {
            ThrowIfDisposed();
            return TwNative.tw_session_advance(_handle);
        }

        /// <summary>Takes the next request of the last Advance: Ok, Empty (none left) or an error.</summary>
        public TwResult PollRequest(out TwRequest request)
        {
            ThrowIfDisposed();
            request = default(TwRequest);
            fixed (TwRequest* p = &request)
            {
                return TwNative.tw_session_poll_request(_handle, p);
            }
        }

        /// <summary>True when a request was written; false when none is left (or on an error).</summary>
        public bool TryPollRequest(out TwRequest request)
        {
            return PollRequest(out request) == TwResult.Ok;
        }

        /// <summary>
        /// Reports the checksum of the state saved for tick (the answer to a SAVE). Any
        /// deterministic 64-bit hash of the state works.
        /// </summary>
        public TwResult ConfirmSave(uint tick, ulong checksum)
        {
            ThrowIfDisposed();
            return TwNative.tw_session_confirm_save(_handle, tick, checksum);
        }

        /// <summary>
        /// The serialized state of tick (the answer to a DUMP_STATE), copied: for a P2P desync
        /// dump or spectator, or a relay server's snapshot for joining clients.
        /// </summary>
        public TwResult ProvideState(uint tick, ReadOnlySpan<byte> state)
        {
            ThrowIfDisposed();
            fixed (byte* p = &MemoryMarshal.GetReference(state))
            {
                return TwNative.tw_session_provide_state(_handle, tick, p, (UIntPtr)state.Length);
            }
        }

        /// <summary>Takes the next event: Ok, Empty (none now) or an error. Drain it every frame.</summary>
        public TwResult PollEvent(out TwSessionEvent ev)
        {
            ThrowIfDisposed();
            ev = default(TwSessionEvent);
            fixed (TwSessionEvent* p = &ev)
            {
                return TwNative.tw_session_poll_event(_handle, p);
            }
        }

        /// <summary>True when an event was written; false when there is none (or on an error).</summary>
        public bool TryPollEvent(out TwSessionEvent ev)
        {
            return PollEvent(out ev) == TwResult.Ok;
        }

        /// <summary>The session's figures (ticks, rollbacks, checks, bytes, ...).</summary>
        public TwResult GetStats(out TwSessionStats stats)
        {
            ThrowIfDisposed();
            stats = default(TwSessionStats);
            fixed (TwSessionStats* p = &stats)
            {
                return TwNative.tw_session_get_stats(_handle, p);
            }
        }

        /// <summary>Transport statistics (RTT, loss, bytes) of the connection peer (from an event or GetPlayerPeer).</summary>
        public TwResult GetPeerStats(uint peer, out TwPeerStats stats)
        {
            ThrowIfDisposed();
            stats = default(TwPeerStats);
            fixed (TwPeerStats* p = &stats)
            {
                return TwNative.tw_session_peer_stats(_handle, peer, p);
            }
        }

        /// <summary>
        /// P2P: the net-overlay figures of remote player (RTT, loss, kbps, the frame
        /// advantage both ways, the input queues; with a rendezvous, the path to it and
        /// where it goes), as GGPO's ggpo_get_network_stats; see <see cref="TwNetworkStats"/>.
        /// Empty while its peer is not connected. Allocates nothing: call it every frame.
        /// </summary>
        public TwResult GetNetworkStats(uint player, out TwNetworkStats stats)
        {
            ThrowIfDisposed();
            stats = default(TwNetworkStats);
            fixed (TwNetworkStats* p = &stats)
            {
                return TwNative.tw_session_network_stats(_handle, player, p);
            }
        }

        /// <summary>
        /// P2P: the connection of remote player (0 for a local player). RELAY_SERVER: the
        /// connection of player's slot (InvalidState when the slot has none).
        /// </summary>
        public TwResult GetPlayerPeer(uint player, out uint peer)
        {
            ThrowIfDisposed();
            uint p = 0;
            TwResult r = TwNative.tw_session_player_peer(_handle, player, &p);
            peer = p;
            return r;
        }

        // --- lifetime -------------------------------------------------------------------------

        /// <summary>
        /// Destroys the native session: peers see a disconnect, the network thread is
        /// joined (at most 1 second), the socket is closed. Safe to call twice.
        /// </summary>
        public void Dispose()
        {
            if (_handle == null)
            {
                return;
            }
            _handle.Dispose();
            s_live.Remove(_liveToken);
            TwLog.Unregister(ref _logId);
        }

        /// <summary>
        /// Logs through handler: records at minLevel and above (tw_session_set_log), called from
        /// inside PollEvent / TryPollEvent on the polling thread, never from the network
        /// thread. Connections up and down with reasons, malformed or forged datagrams
        /// summarized once a second, network-thread faults; and the session's events as they are polled: desyncs, peers interrupted and
        /// disconnected, players joining and leaving. Null or TwLogLevel.Off
        /// turns it off. Use a handler that does not allocate per frame itself; the
        /// library calls it only when there is a record. Throws TickwireException.
        /// </summary>
        public void SetLog(TwLogHandler handler, TwLogLevel minLevel = TwLogLevel.Info)
        {
            ThrowIfDisposed();
            SessionHandle h = _handle;
            ThrowIfFailed(TwLog.Set(ref _logId, handler, minLevel, (fn, user, level) => TwNative.tw_session_set_log(h, fn, user, level)));
        }

        /// <summary>
        /// Disposes every live session of this process. For Unity: the package calls it
        /// before a domain reload and when play mode ends.
        /// </summary>
        public static void DisposeAll()
        {
            s_live.DisposeAll();
        }

        /// <summary>How many sessions are alive (created and not yet disposed or collected).</summary>
        public static int LiveCount
        {
            get { return s_live.CountOpen(); }
        }

        /// <summary>Entries of the live list, collected ones included (for tests).</summary>
        internal static int LiveEntries
        {
            get { return s_live.Count; }
        }

        private void ThrowIfDisposed()
        {
            if (_handle.IsClosed)
            {
                throw new ObjectDisposedException("TwSession", "this tickwire session has been disposed");
            }
        }

        private static void ThrowIfFailed(TwResult r)
        {
            if (r < 0)
            {
                throw TickwireException.FromLastError(r);
            }
        }
    }
}
