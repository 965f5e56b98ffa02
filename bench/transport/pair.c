/*
 * A connected client/server pair of one library (directly, or through the proxy), and
 * the server's engine thread. The server thread plays one of two games:
 *   ECHO_BUSY    busy-polls (yielding between empty polls: on 2 cores the libraries'
 *                own threads need a turn) and echoes each message at once on the
 *                delivery it came with: the far end of the RTT rows.
 *   TICK_60HZ    a game loop at 60 Hz: poll everything, flush, sleep to the next tick;
 *                it records each message's one-way latency (same clock: one process).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define CONNECT_DEADLINE_NS 5000000000ull

typedef struct server_thread {
    bt_pair *pair;
    pthread_t thread;
    atomic_int stop;
    atomic_ullong delivered;
} server_thread;

int bt_pair_open(bt_pair *p, const bt_lib *lib, const bt_proxy_config *impair) {
    memset(p, 0, sizeof *p);
    p->lib = lib;
    uint16_t port;
    if (lib->create(lib, 0, 8, &p->server) != 0 || lib->local_port(p->server, &port) != 0) {
        bt_pair_close(p);
        return -1;
    }
    if (impair != NULL && bt_proxy_start(impair, port, &p->proxy, &port) != 0) {
        bt_pair_close(p);
        return -1;
    }
    if (lib->create(lib, 0, 0, &p->client) != 0 || lib->connect(p->client, port, &p->to_server) != 0) {
        bt_pair_close(p);
        return -1;
    }
    /* Both ends must see CONNECTED before anything is measured. */
    int client_up = 0, server_up = 0;
    uint64_t deadline = bt_now_ns() + CONNECT_DEADLINE_NS;
    uint8_t buf[BT_MAX_PAYLOAD];
    while (!(client_up && server_up)) {
        bt_event ev;
        int r;
        while ((r = lib->poll(p->client, &ev, buf, sizeof buf)) == 1) {
            client_up |= ev.kind == BT_EV_CONNECTED;
        }
        if (r < 0) {
            break;
        }
        while ((r = lib->poll(p->server, &ev, buf, sizeof buf)) == 1) {
            server_up |= ev.kind == BT_EV_CONNECTED;
        }
        if (r < 0 || bt_now_ns() > deadline) {
            break;
        }
        bt_sleep_ms(1);
    }
    if (!(client_up && server_up)) {
        fprintf(stderr, "%s: the pair did not connect\n", lib->name);
        bt_pair_close(p);
        return -1;
    }
    return 0;
}

/* One server poll; the allocations inside are charged to receiving. */
static int server_poll(bt_pair *p, bt_event *ev, uint8_t *buf) {
    bt_alloc_set_bucket(BT_BUCKET_RECV);
    int r = p->lib->poll(p->server, ev, buf, BT_MAX_PAYLOAD);
    bt_alloc_set_bucket(BT_BUCKET_OTHER);
    return r;
}

static void echo_loop(server_thread *t) {
    bt_pair *p = t->pair;
    uint8_t buf[BT_MAX_PAYLOAD];
    while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
        bt_event ev;
        int r = server_poll(p, &ev, buf);
        if (r < 0) {
            p->server_failed = 1;
            return;
        }
        if (r == 0) {
            sched_yield();
            continue;
        }
        if (ev.kind == BT_EV_MESSAGE) {
            bt_alloc_set_bucket(BT_BUCKET_SEND);
            r = p->lib->send(p->server, ev.peer, ev.delivery, buf, ev.len);
            r = r == 0 ? p->lib->flush(p->server) : r;
            bt_alloc_set_bucket(BT_BUCKET_OTHER);
            if (r != 0) {
                p->server_failed = 1;
                return;
            }
        }
    }
}

static void tick_loop(server_thread *t) {
    bt_pair *p = t->pair;
    uint8_t buf[BT_MAX_PAYLOAD];
    uint64_t next = bt_now_ns();
    while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
        bt_event ev;
        int r;
        while ((r = server_poll(p, &ev, buf)) == 1) {
            if (ev.kind != BT_EV_MESSAGE || ev.len < BT_MSG_SIZE) {
                continue;
            }
            uint32_t seq;
            uint64_t sent;
            bt_msg_read(buf, &seq, &sent);
            if (seq >= p->record_from_seq) {
                if (bt_samples_push(&p->latency_ms, (double)(bt_now_ns() - sent) / 1e6) != 0) {
                    r = -1;
                    break;
                }
                atomic_fetch_add(&t->delivered, 1);
            }
        }
        if (r < 0 || p->lib->flush(p->server) != 0) {
            p->server_failed = 1;
            return;
        }
        next += BT_TICK_NS;
        bt_sleep_until_ns(next);
    }
}

static void *server_main(void *arg) {
    server_thread *t = arg;
    if (t->pair->mode == BT_SERVER_ECHO_BUSY) {
        echo_loop(t);
    } else {
        tick_loop(t);
    }
    return NULL;
}

int bt_pair_start_server(bt_pair *p, bt_server_mode mode) {
    server_thread *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return -1;
    }
    t->pair = p;
    p->mode = mode;
    if (pthread_create(&t->thread, NULL, server_main, t) != 0) {
        free(t);
        fprintf(stderr, "pthread_create failed\n");
        return -1;
    }
    p->thread_state = t;
    return 0;
}

uint64_t bt_pair_delivered(bt_pair *p) {
    server_thread *t = p->thread_state;
    return t != NULL ? atomic_load(&t->delivered) : 0;
}

int bt_pair_stop_server(bt_pair *p) {
    server_thread *t = p->thread_state;
    if (t == NULL) {
        return 0;
    }
    atomic_store(&t->stop, 1);
    pthread_join(t->thread, NULL);
    p->delivered = atomic_load(&t->delivered);
    free(t);
    p->thread_state = NULL;
    return p->server_failed ? -1 : 0;
}

void bt_pair_close(bt_pair *p) {
    bt_pair_stop_server(p);
    if (p->client != NULL) {
        p->lib->destroy(p->client);
    }
    if (p->server != NULL) {
        p->lib->destroy(p->server);
    }
    bt_proxy_stop(p->proxy);
    bt_samples_free(&p->latency_ms);
    memset(p, 0, sizeof *p);
}
