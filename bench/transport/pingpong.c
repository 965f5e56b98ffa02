/*
 * Rows 1, 2 and 8: engine-to-engine round trips on loopback. The client engine (this
 * thread) sends a 32-byte message and flushes, then busy-polls until the server engine
 * (pair.c's echo thread) has sent it back. Both engines yield between empty polls.
 *
 * Row 8 reuses the same ping-pong after the timed samples: heap allocations of the
 * whole process are counted over a window of round trips, charged to the engine's send
 * and flush calls, its poll and read calls, or the library's own threads.
 */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>
#include <stdio.h>

#include "bench.h"

#define PING_TIMEOUT_NS 1000000000ull

/* One round trip of message `seq`. 1: echoed, 0: lost (timed out), -1: error. */
static int round_trip(bt_pair *p, bt_delivery d, uint32_t seq, uint64_t *rtt_ns) {
    uint8_t msg[BT_MSG_SIZE], buf[BT_MAX_PAYLOAD];
    uint64_t start = bt_now_ns();
    bt_msg_write(msg, seq, start);
    bt_alloc_set_bucket(BT_BUCKET_SEND);
    int r = p->lib->send(p->client, p->to_server, d, msg, sizeof msg);
    r = r == 0 ? p->lib->flush(p->client) : r;
    bt_alloc_set_bucket(BT_BUCKET_OTHER);
    if (r != 0) {
        return -1;
    }
    for (;;) {
        bt_event ev;
        bt_alloc_set_bucket(BT_BUCKET_RECV);
        r = p->lib->poll(p->client, &ev, buf, sizeof buf);
        bt_alloc_set_bucket(BT_BUCKET_OTHER);
        uint64_t now = bt_now_ns();
        if (r < 0 || p->server_failed) {
            return -1;
        }
        if (r == 1 && ev.kind == BT_EV_MESSAGE && ev.len == BT_MSG_SIZE) {
            uint32_t got;
            uint64_t sent;
            bt_msg_read(buf, &got, &sent);
            if (got == seq) { /* an older, late echo is skipped */
                *rtt_ns = now - start;
                return 1;
            }
        }
        if (r == 0) {
            if (now - start > PING_TIMEOUT_NS) {
                return 0;
            }
            sched_yield();
        }
    }
}

static int measure_delivery(const bt_lib *lib, const bt_plan *plan, bt_delivery d, bt_result *res) {
    bt_pair p;
    if (bt_pair_open(&p, lib, NULL) != 0) {
        return -1;
    }
    if (bt_pair_start_server(&p, BT_SERVER_ECHO_BUSY) != 0) {
        bt_pair_close(&p);
        return -1;
    }
    int rc = 0;
    uint32_t seq = 0;
    for (int i = 0; i < plan->rtt_warmup + plan->rtt_samples && rc == 0; i++) {
        uint64_t rtt;
        int r = round_trip(&p, d, seq++, &rtt);
        if (r < 0) {
            rc = -1;
        } else if (i >= plan->rtt_warmup) {
            res->rtt_sent[d]++;
            if (r == 0) {
                res->rtt_lost[d]++;
            } else if (bt_samples_push(&res->rtt_us[d], (double)rtt / 1e3) != 0) {
                rc = -1;
            }
        }
    }
    /* Row 8 on the unreliable ping-pong: the steady state of a game's inputs. */
    if (rc == 0 && d == BT_UNRELIABLE && plan->alloc_round_trips > 0) {
        uint64_t counts[BT_BUCKETS], echoed = 0;
        bt_alloc_start();
        for (int i = 0; i < plan->alloc_round_trips && rc == 0; i++) {
            uint64_t rtt;
            int r = round_trip(&p, d, seq++, &rtt);
            rc = r < 0 ? -1 : 0;
            echoed += r == 1;
        }
        bt_alloc_stop(counts);
        /* Each echoed round trip is two messages sent and two received. */
        res->alloc_messages += 2 * echoed;
        for (int b = 0; b < BT_BUCKETS; b++) {
            res->alloc[b] += counts[b];
        }
    }
    if (bt_pair_stop_server(&p) != 0) {
        rc = -1;
    }
    bt_pair_close(&p);
    return rc;
}

int bt_measure_pingpong(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    if (measure_delivery(lib, plan, BT_UNRELIABLE, res) != 0 || measure_delivery(lib, plan, BT_RELIABLE, res) != 0) {
        fprintf(stderr, "%s: ping-pong failed\n", lib->name);
        return -1;
    }
    return 0;
}
