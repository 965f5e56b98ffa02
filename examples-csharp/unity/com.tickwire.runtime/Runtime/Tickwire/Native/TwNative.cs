// The raw layer: one extern per function of include/tickwire.h, named exactly like the
// C symbol (tests/run.sh checks that the two lists are the same). Pointer-level and
// blittable: no string, bool or array crosses here, so no call needs a marshalling
// stub and none allocates. Hosts pass as HostHandle, whose marshalling adds a
// reference for the duration of the call (a concurrent Dispose cannot free the host
// under a running call); sessions pass as SessionHandle, likewise.
//
// C types: size_t -> UIntPtr, const char* / char* -> byte* (UTF-8), tw_result ->
// TwResult (int), uint32_t -> uint, tw_host* -> HostHandle (IntPtr for destroy),
// tw_session* -> SessionHandle (IntPtr for create and destroy), tw_rendezvous* ->
// RendezvousHandle (IntPtr for create and destroy), void* / uint8_t* -> byte*.

using System;
using System.Runtime.InteropServices;

namespace Tickwire.Native
{
    internal static unsafe class TwNative
    {
#if (UNITY_IOS || UNITY_TVOS) && !UNITY_EDITOR
        // iOS and tvOS link libtickwire.a statically into the player.
        internal const string Lib = "__Internal";
#else
        // libtickwire.so / libtickwire.dylib / tickwire.dll: no prefix, no extension.
        internal const string Lib = "tickwire";
#endif

        // --- versions, errors, sizes (any thread) ---------------------------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern uint tw_version();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern byte* tw_version_string();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern uint tw_abi_version();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern byte* tw_result_str(int result);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_last_error_message(byte* buf, UIntPtr buf_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_config_init_default(TwHostConfig* config);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_link_sim_config_init_default(TwLinkSimConfig* config);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_host_config_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_link_sim_config_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_event_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_peer_stats_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_host_stats_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_config_init_default(TwSessionConfig* config);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_session_config_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_request_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_session_event_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_session_stats_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_relay_player_stats_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_network_stats_size();

        // --- security: settings, keys, connect tokens (any thread) -----------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_security_config_init_default(TwSecurityConfig* config);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_security_config_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_generate_key(byte* @out, UIntPtr out_size);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_connect_token_generate(byte* key, UIntPtr key_size, uint protocol_id, ulong client_id,
                                                                  byte* server_addresses, uint expire_seconds, uint timeout_seconds,
                                                                  byte* user_data, UIntPtr user_data_size, byte* out_token,
                                                                  UIntPtr out_size);

        // --- tw_host (serialize calls on one host) ---------------------------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_create(TwHostConfig* config, byte* bind_address, IntPtr* out_host);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void tw_host_destroy(IntPtr host);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_connect(HostHandle host, byte* address, uint* out_peer);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_send(HostHandle host, uint peer, uint channel, byte* data, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_flush(HostHandle host);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_disconnect(HostHandle host, uint peer);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_poll_event(HostHandle host, TwEvent* out_event);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_read_message(HostHandle host, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_peer_stats(HostHandle host, uint peer, TwPeerStats* out_stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_get_stats(HostHandle host, TwHostStats* out_stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_set_link_sim(HostHandle host, uint direction, TwLinkSimConfig* config);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_local_address(HostHandle host, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        // --- tw_session: setup (serialize calls on one session) -----------------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_create(TwSessionConfig* config, IntPtr* out_session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void tw_session_destroy(IntPtr session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_add_local_player(SessionHandle session, uint player);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_add_remote_player(SessionHandle session, uint player, byte* address);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_add_spectator(SessionHandle session, byte* address);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_spectate(SessionHandle session, byte* address);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_set_server(SessionHandle session, byte* address);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_load_replay(SessionHandle session, byte* data, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_load_replay_file(SessionHandle session, byte* path);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_set_link_sim(SessionHandle session, uint direction, TwLinkSimConfig* config);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_start(SessionHandle session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_local_address(SessionHandle session, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        // --- external carrier (a host or session bound to "remote:<id>") -------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_push_datagrams(HostHandle host, TwDatagram* items, UIntPtr count, UIntPtr* out_taken);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_pull_datagrams(HostHandle host, TwDatagram* items, UIntPtr max_items, byte* buffer,
                                                               UIntPtr buffer_len, UIntPtr* out_count);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_push_datagrams(SessionHandle session, TwDatagram* items, UIntPtr count, UIntPtr* out_taken);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_pull_datagrams(SessionHandle session, TwDatagram* items, UIntPtr max_items, byte* buffer,
                                                                  UIntPtr buffer_len, UIntPtr* out_count);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_state_slots(SessionHandle session, uint* out_slots);

        // --- tw_session: the engine loop, tuning, statistics ------------------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_ticks_due(SessionHandle session, uint* out_ticks);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_push_input(SessionHandle session, uint player, byte* input, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_advance(SessionHandle session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_poll_request(SessionHandle session, TwRequest* out_request);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_confirm_save(SessionHandle session, uint tick, ulong checksum);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_provide_state(SessionHandle session, uint tick, byte* data, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_poll_event(SessionHandle session, TwSessionEvent* out_event);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_set_input_delay(SessionHandle session, uint delay);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_set_player_input_delay(SessionHandle session, uint player, uint delay);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_set_prediction(SessionHandle session, uint player, byte* input, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_get_stats(SessionHandle session, TwSessionStats* out_stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_peer_stats(SessionHandle session, uint peer, TwPeerStats* out_stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_player_peer(SessionHandle session, uint player, uint* out_peer);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_request_snapshot(SessionHandle session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_player_stats(SessionHandle session, uint player, TwRelayPlayerStats* out_stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_player_identity(SessionHandle session, uint player, TwPlayerIdentity* out_identity);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_player_identity_size();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_network_stats(SessionHandle session, uint player, TwNetworkStats* out_stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_kick_player(SessionHandle session, uint player, uint reason_code);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_disconnect_player(SessionHandle session, uint player);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_set_timeouts(SessionHandle session, uint disconnect_timeout_ms, uint disconnect_notify_ms);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_set_loading(SessionHandle session, uint loading);

        // --- tw_session: byte copies (request data, desync dumps, replays) ---------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_request_inputs(SessionHandle session, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_request_input_status(SessionHandle session, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_request_state(SessionHandle session, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_take_desync_dump(SessionHandle session, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_take_synctest_state(SessionHandle session, uint which, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_write_desync_dump(SessionHandle session, byte* path);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_start_recording(SessionHandle session, byte* initial_state, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_copy_replay(SessionHandle session, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_save_replay(SessionHandle session, byte* path);

        // --- tw_session: the message side channel (chat, settings, loadouts) ----------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_send_message(SessionHandle session, uint target, byte* data, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_read_message(SessionHandle session, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_get_message_stats(SessionHandle session, TwSessionMessageStats* out_stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_session_message_stats_size();

        // --- P2P behind NATs: a rendezvous (TwSession.SetRendezvous), the service (TwRendezvous) ---

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_set_rendezvous(SessionHandle session, byte* address, byte* ticket, UIntPtr ticket_len,
                                                                  uint flags);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_match_claim_write(ulong match_id, uint slot, uint players, byte* @out, UIntPtr out_size);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_rendezvous_create(byte* bind_address, byte* key, UIntPtr key_size, uint protocol_id,
                                                             uint relay_bytes_per_sec, uint match_secs, IntPtr* out_rendezvous);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void tw_rendezvous_destroy(IntPtr rendezvous);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_rendezvous_local_address(RendezvousHandle rendezvous, byte* buf, UIntPtr buf_len, UIntPtr* out_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_rendezvous_get_stats(RendezvousHandle rendezvous, TwRendezvousStats* out_stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr tw_rendezvous_stats_size();

        // --- the log hook (TwLog.cs) ------------------------------------------------------

        /// <summary>tw_log_fn: callback is a pointer to a static [MonoPInvokeCallback] method of this type.</summary>
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void TwLogFn(IntPtr user, uint level, byte* message, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_session_set_log(SessionHandle session, IntPtr callback, IntPtr user, uint min_level);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern TwResult tw_host_set_log(HostHandle host, IntPtr callback, IntPtr user, uint min_level);
    }
}
