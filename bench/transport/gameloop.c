/*
 * Rows 3 and 4: a client and a server engine, each in a 60 Hz game loop, talking
 * through the harness's proxy (proxy.c).
 *   Row 3: reliable 32-byte messages, one per tick, through 5% loss and 20 ms one-way
 *          delay each direction; the server engine records each message's one-way
 *          latency (send call to the server's poll), so the figure includes the wait
 *          for the server's next tick, as a game would see it.
 *   Row 4: unreliable 32-byte inputs, one per tick, through a clean proxy that counts
 *          UDP payload bytes each way: up per input, and down per input (the server
 *          sends nothing itself: only acknowledgements and keepalives).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>

#include "bench.h"

#define DRAIN_DEADLINE_NS 5000000000ull
#define WIRE_WARMUP_TICKS 30

/* The client's game loop for `ticks` ticks; sends one message per tick from `*seq` on
 * while `send` is set, and stops early once `until_delivered` messages from the server's
 * record_from_seq on have arrived (0: never). */
static int client_ticks(bt_pair *p, bt_delivery d, int ticks, int send, uint32_t *seq, uint64_t until_delivered) {
    uint8_t msg[BT_MSG_SIZE], buf[BT_MAX_PAYLOAD];
    uint64_t next = bt_now_ns();
    for (int t = 0; t < ticks; t++) {
        if (send) {
            bt_msg_write(msg, (*seq)++, bt_now_ns());
            if (p->lib->send(p->client, p->to_server, d, msg, sizeof msg) != 0) {
                return -1;
            }
        }
        if (p->lib->flush(p->client) != 0) {
            return -1;
        }
        bt_event ev;
        int r;
        while ((r = p->lib->poll(p->client, &ev, buf, sizeof buf)) == 1) {
        }
        if (r < 0 || p->server_failed) {
            return -1;
        }
        if (until_delivered > 0 && bt_pair_delivered(p) >= until_delivered) {
            return 0;
        }
        next += BT_TICK_NS;
        bt_sleep_until_ns(next);
    }
    return 0;
}

static int impaired_reliable(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    bt_proxy_config impair = {0.05, 20000, plan->seed};
    bt_pair p;
    if (bt_pair_open(&p, lib, &impair) != 0) {
        return -1;
    }
    /* The first ticks let the libraries' round-trip estimates settle. */
    p.record_from_seq = (uint32_t)plan->impaired_warmup_ticks;
    uint32_t seq = 0;
    int rc = bt_pair_start_server(&p, BT_SERVER_TICK_60HZ);
    if (rc == 0) {
        rc = client_ticks(&p, BT_RELIABLE, plan->impaired_ticks, 1, &seq, 0);
    }
    uint64_t expected = (uint64_t)(plan->impaired_ticks - plan->impaired_warmup_ticks);
    /* Keep the loop running without new messages until every one has arrived. */
    if (rc == 0) {
        rc = client_ticks(&p, BT_RELIABLE, (int)(DRAIN_DEADLINE_NS / BT_TICK_NS), 0, &seq, expected);
    }
    bt_proxy_counters c;
    bt_proxy_counters_get(p.proxy, &c);
    if (bt_pair_stop_server(&p) != 0) {
        rc = -1;
    }
    res->impaired_sent += expected;
    res->impaired_delivered += p.delivered;
    res->impaired_dropped += c.dropped;
    for (size_t i = 0; i < p.latency_ms.n && rc == 0; i++) {
        rc = bt_samples_push(&res->impaired_ms, p.latency_ms.v[i]);
    }
    bt_pair_close(&p);
    return rc;
}

static int wire_bytes(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    bt_proxy_config clean = {0.0, 0, plan->seed};
    bt_pair p;
    if (bt_pair_open(&p, lib, &clean) != 0) {
        return -1;
    }
    uint32_t seq = 0;
    p.record_from_seq = WIRE_WARMUP_TICKS;
    int rc = bt_pair_start_server(&p, BT_SERVER_TICK_60HZ);
    /* Half a second of inputs first: the handshake's traffic is not counted. */
    if (rc == 0) {
        rc = client_ticks(&p, BT_UNRELIABLE, WIRE_WARMUP_TICKS, 1, &seq, 0);
    }
    bt_proxy_counters_reset(p.proxy);
    if (rc == 0) {
        rc = client_ticks(&p, BT_UNRELIABLE, plan->wire_ticks, 1, &seq, 0);
    }
    bt_proxy_counters c;
    bt_proxy_counters_get(p.proxy, &c);
    /* A tick more for the last input to reach the server's loop. */
    bt_sleep_ms(20);
    if (bt_pair_stop_server(&p) != 0) {
        rc = -1;
    }
    res->wire_delivered += p.delivered;
    res->wire_inputs += (uint64_t)plan->wire_ticks;
    res->wire_up_bytes += c.up_bytes;
    res->wire_down_bytes += c.down_bytes;
    bt_pair_close(&p);
    return rc;
}

int bt_measure_game_loop(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    if (impaired_reliable(lib, plan, res) != 0 || wire_bytes(lib, plan, res) != 0) {
        fprintf(stderr, "%s: game loop through the proxy failed\n", lib->name);
        return -1;
    }
    return 0;
}
