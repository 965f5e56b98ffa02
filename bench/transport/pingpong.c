/*
 * Rows 1, 2 and 8: engine-to-engine round trips on loopback. The client engine (this
 * thread) sends a 32-byte message and flushes, then busy-polls until the server engine
 * (pair.c's echo thread) has sent it back. Both engines yield between empty polls.
 *
 * Row 1 also runs the unreliable ping-pong with one thread playing both engines: it
 * sends, polls the server until the message is there, echoes it, and polls the client
 * until the echo is there. No thread of the harness waits for another, so the figure
 * is the libraries' own work and the kernel's (plus whatever their own threads cost
 * the one that runs): on 2 cores the two-thread ping-pong also times the scheduler.
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

/* Polls `host` until a 32-byte message arrives: 1, its sender in *from; 0: none within
 * the timeout; -1: error. */
static int spin_for_message(bt_pair *p, void *host, uint64_t start, uint32_t *from) {
    uint8_t buf[BT_MAX_PAYLOAD];
    for (;;) {
        bt_event ev;
        int r = p->lib->poll(host, &ev, buf, sizeof buf);
        if (r < 0) {
            return -1;
        }
        if (r == 1 && ev.kind == BT_EV_MESSAGE && ev.len == BT_MSG_SIZE) {
            *from = ev.peer;
            return 1;
        }
        if (r == 0 && bt_now_ns() - start > PING_TIMEOUT_NS) {
            return 0;
        }
    }
}

static int measure_one_thread(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    bt_pair p;
    if (bt_pair_open(&p, lib, NULL) != 0) {
        return -1;
    }
    int rc = 0;
    uint8_t msg[BT_MSG_SIZE];
    for (int i = 0; i < plan->rtt_warmup + plan->rtt_samples && rc == 0; i++) {
        uint64_t start = bt_now_ns();
        bt_msg_write(msg, (uint32_t)i, start);
        uint32_t client_peer, ignored;
        int r = lib->send(p.client, p.to_server, BT_UNRELIABLE, msg, sizeof msg);
        r = r == 0 ? lib->flush(p.client) : r;
        r = r == 0 ? spin_for_message(&p, p.server, start, &client_peer) : -1;
        if (r == 1) {
            r = lib->send(p.server, client_peer, BT_UNRELIABLE, msg, sizeof msg);
            r = r == 0 ? lib->flush(p.server) : r;
            r = r == 0 ? spin_for_message(&p, p.client, start, &ignored) : -1;
        }
        uint64_t rtt = bt_now_ns() - start;
        if (r < 0) {
            rc = -1;
        } else if (i >= plan->rtt_warmup) {
            res->one_thread_sent++;
            if (r == 0) {
                res->one_thread_lost++;
            } else if (bt_samples_push(&res->rtt_one_thread_us, (double)rtt / 1e3) != 0) {
                rc = -1;
            }
        }
    }
    bt_pair_close(&p);
    return rc;
}

int bt_measure_pingpong(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    if (measure_delivery(lib, plan, BT_UNRELIABLE, res) != 0 || measure_delivery(lib, plan, BT_RELIABLE, res) != 0 ||
        measure_one_thread(lib, plan, res) != 0) {
        fprintf(stderr, "%s: ping-pong failed\n", lib->name);
        return -1;
    }
    return 0;
}
