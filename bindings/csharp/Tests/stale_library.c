/*
 * A stand-in for a stale libtickwire: the version and size getters of an imaginary
 * other build (with the session API) whose ABI number and tw_event size differ. The C# test runs against it
 * with --expect-stale-library and checks that the bindings refuse it with a clear
 * TickwireAbiException before any other call.
 *
 *   cc -shared -fPIC stale_library.c -o stale/libtickwire.so
 */
#include <stddef.h>
#include <stdint.h>

uint32_t tw_abi_version(void) { return 0; }
size_t tw_host_config_size(void) { return 96; }
size_t tw_link_sim_config_size(void) { return 160; }
size_t tw_event_size(void) { return 64; }
size_t tw_peer_stats_size(void) { return 256; }
size_t tw_host_stats_size(void) { return 256; }
size_t tw_session_config_size(void) { return 320; }
size_t tw_request_size(void) { return 64; }
size_t tw_session_event_size(void) { return 128; }
size_t tw_session_stats_size(void) { return 256; }
