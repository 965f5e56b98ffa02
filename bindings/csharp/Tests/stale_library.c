/*
 * Stand-ins for a stale libtickwire, for the C# ABI check:
 *
 * - by default, the version and size getters of an imaginary other build (with the
 *   session and relay APIs) whose ABI number and tw_event size differ. The C# test
 *   runs against it with --expect-stale-library and checks that the bindings refuse it
 *   with a clear TickwireAbiException before any other call.
 * - with -DTW_STALE_BEFORE_RELAY, a build from before the relay additions: the same
 *   ABI number and struct sizes (the relay fields took reserved bytes), but no
 *   tw_relay_player_stats_size (nor tw_security_config_size). The C# test runs against
 *   it with --expect-pre-relay-library and checks that the bindings name the missing
 *   function.
 * - with -DTW_STALE_BEFORE_SECURITY, a build from before encryption: the same ABI
 *   number and struct sizes (tw_host_config.security and the security counters took
 *   reserved bytes), but no tw_security_config_size. The C# test runs against it with
 *   --expect-pre-security-library and checks that the bindings name the missing
 *   function (such a library would read TwHostConfig.Security as reserved bytes, and
 *   speak an unencrypted protocol).
 * - with -DTW_STALE_BEFORE_NAT, a build from before NAT traversal: the same ABI number
 *   and struct sizes (tw_network_stats.path and path_address took reserved bytes), but
 *   no tw_rendezvous_stats_size. The C# test runs against it with
 *   --expect-pre-nat-library and checks that the bindings name the missing function
 *   (such a library has no rendezvous, and would leave TwNetworkStats.Path at None).
 *
 *   cc -shared -fPIC stale_library.c -o stale/libtickwire.so
 *   cc -shared -fPIC -DTW_STALE_BEFORE_RELAY stale_library.c -o pre-relay/libtickwire.so
 *   cc -shared -fPIC -DTW_STALE_BEFORE_SECURITY stale_library.c -o pre-security/libtickwire.so
 *   cc -shared -fPIC -DTW_STALE_BEFORE_NAT stale_library.c -o pre-nat/libtickwire.so
 */
#include <stddef.h>
#include <stdint.h>

#if defined(TW_STALE_BEFORE_RELAY)
uint32_t tw_abi_version(void) { return 1; }
size_t tw_event_size(void) { return 128; }
#elif defined(TW_STALE_BEFORE_SECURITY)
uint32_t tw_abi_version(void) { return 1; }
size_t tw_event_size(void) { return 128; }
size_t tw_relay_player_stats_size(void) { return 128; }
#elif defined(TW_STALE_BEFORE_NAT)
uint32_t tw_abi_version(void) { return 1; }
size_t tw_event_size(void) { return 128; }
size_t tw_relay_player_stats_size(void) { return 128; }
size_t tw_security_config_size(void) { return 1240; }
size_t tw_network_stats_size(void) { return 128; }
size_t tw_session_message_stats_size(void) { return 64; }
size_t tw_player_identity_size(void) { return 304; }
#else
uint32_t tw_abi_version(void) { return 0; }
size_t tw_event_size(void) { return 64; }
size_t tw_relay_player_stats_size(void) { return 128; }
size_t tw_security_config_size(void) { return 1240; }
size_t tw_network_stats_size(void) { return 128; }
size_t tw_session_message_stats_size(void) { return 64; }
size_t tw_player_identity_size(void) { return 304; }
size_t tw_rendezvous_stats_size(void) { return 80; }
#endif
size_t tw_host_config_size(void) { return 96; }
size_t tw_link_sim_config_size(void) { return 160; }
size_t tw_peer_stats_size(void) { return 256; }
size_t tw_host_stats_size(void) { return 256; }
size_t tw_session_config_size(void) { return 320; }
size_t tw_request_size(void) { return 64; }
size_t tw_session_event_size(void) { return 128; }
size_t tw_session_stats_size(void) { return 256; }
