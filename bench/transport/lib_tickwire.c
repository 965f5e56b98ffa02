/*
 * tickwire behind the harness's interface, through its C ABI only (include/tickwire.h):
 * the runtime's internals change under other hands, the header is the contract.
 * Unreliable goes on TW_CHANNEL_UNRELIABLE, reliable on TW_CHANNEL_RELIABLE. Every
 * call's result is checked; a failure prints the call and tw_last_error_message.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tickwire.h"
#include "tw_adapter.h"

int bt_tw_fail(const char *what, tw_result r) {
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    fprintf(stderr, "tickwire: %s: %s (%d): %s\n", what, tw_result_str(r), (int)r, msg);
    return -1;
}

static int tw_init(void) {
    /* A header and a library of different ABIs would make every figure meaningless. */
    if (tw_abi_version() != TW_ABI_VERSION || tw_host_config_size() != sizeof(tw_host_config) ||
        tw_event_size() != sizeof(tw_event)) {
        fprintf(stderr, "tickwire: the library's ABI differs from include/tickwire.h\n");
        return -1;
    }
    return 0;
}

static void tw_fini(void) {
}

int bt_tw_host(uint32_t mode, const char *bind, uint32_t max_peers, tw_host **out) {
    tw_security_config sec;
    tw_host_config cfg;
    CHECK(tw_security_config_init_default(&sec));
    CHECK(tw_host_config_init_default(&cfg));
    sec.mode = mode;
    cfg.security = &sec;
    cfg.max_clients = max_peers;
    /* Every client of the benchmark comes from 127.0.0.1 (the proxy too). */
    cfg.max_clients_per_ip = 0;
    /* A busy-polled ping-pong on loopback runs 60,000-140,000 messages a second each
     * way, far over the per-peer budget a game server grants by default (8192 a
     * second; this end paces itself at three quarters of it). ENet has no such budget:
     * give the benchmark's peers room, or the RTT rows would time the pace. */
    cfg.max_messages_per_sec = 1u << 20;
    cfg.max_bytes_per_sec = 1u << 28;
    CHECK(tw_host_create(&cfg, bind, out));
    return 0;
}

static int tw_create(const bt_lib *lib, uint16_t port, uint32_t max_peers, void **out) {
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)port);
    tw_host *h = NULL;
    if (bt_tw_host(lib->variant, addr, max_peers, &h) != 0) {
        return -1;
    }
    *out = h;
    return 0;
}

static int tw_local_port(void *host, uint16_t *out) {
    char addr[64];
    size_t len = 0;
    CHECK(tw_host_local_address(host, addr, sizeof addr, &len));
    const char *colon = strrchr(addr, ':');
    if (colon == NULL) {
        fprintf(stderr, "tickwire: local address without a port: %s\n", addr);
        return -1;
    }
    *out = (uint16_t)strtoul(colon + 1, NULL, 10);
    return 0;
}

static int tw_connect(void *host, uint16_t port, uint32_t *out_peer) {
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)port);
    CHECK(tw_host_connect(host, addr, out_peer));
    return 0;
}

static int tw_send(void *host, uint32_t peer, bt_delivery d, const uint8_t *data, size_t len) {
    tw_result r = tw_host_send(host, peer, d == BT_RELIABLE ? TW_CHANNEL_RELIABLE : TW_CHANNEL_UNRELIABLE, data, len);
    if (r == TW_RESULT_UNKNOWN_PEER) {
        return 1;
    }
    return TW_FAILED(r) ? bt_tw_fail("tw_host_send", r) : 0;
}

static int tw_flush(void *host) {
    CHECK(tw_host_flush(host));
    return 0;
}

static int tw_poll(void *host, bt_event *ev, uint8_t *buf, size_t cap) {
    tw_event e;
    tw_result r = tw_host_poll_event(host, &e);
    if (TW_FAILED(r)) {
        return bt_tw_fail("tw_host_poll_event", r);
    }
    if (r != TW_RESULT_OK) {
        return 0; /* TW_RESULT_EMPTY */
    }
    ev->peer = e.peer;
    switch (e.kind) {
    case TW_EVENT_KIND_CONNECTED:
        ev->kind = BT_EV_CONNECTED;
        return 1;
    case TW_EVENT_KIND_DISCONNECTED:
        ev->kind = BT_EV_DISCONNECTED;
        return 1;
    case TW_EVENT_KIND_MESSAGE:
        ev->kind = BT_EV_MESSAGE;
        ev->delivery = e.data.message.channel == TW_CHANNEL_RELIABLE ? BT_RELIABLE : BT_UNRELIABLE;
        CHECK(tw_host_read_message(host, buf, cap, &ev->len));
        return 1;
    case TW_EVENT_KIND_FATAL:
        fprintf(stderr, "tickwire: fatal event: %.120s\n", e.data.fatal.message);
        return -1;
    default:
        return 0; /* a kind newer than this harness: nothing it measures */
    }
}

static void tw_destroy(void *host) {
    tw_host_destroy(host);
}

const bt_lib bt_lib_tickwire_plain = {
    "tickwire plaintext", TW_SECURITY_MODE_INSECURE_PLAINTEXT, tw_init, tw_fini, tw_create, tw_local_port,
    tw_connect, tw_send, tw_flush, tw_poll, tw_destroy,
};

const bt_lib bt_lib_tickwire_encrypted = {
    "tickwire encrypted", TW_SECURITY_MODE_ENCRYPTED, tw_init, tw_fini, tw_create, tw_local_port,
    tw_connect, tw_send, tw_flush, tw_poll, tw_destroy,
};
