/*
 * tickwire on an external carrier behind the harness's interface: hosts bound to
 * "remote:<id>" whose datagrams the harness itself carries, through an in-process
 * mailbox per host, as an engine carries them over Steam or EOS. Encrypted, as a
 * game would run it; compared with tickwire encrypted over UDP on loopback.
 *
 * flush = tw_host_flush, then every datagram pulled (tw_host_pull_datagrams) goes into
 * its destination's mailbox; poll = the mailbox's datagrams pushed
 * (tw_host_push_datagrams), what that made the host send pulled and delivered, then
 * tw_host_poll_event. The mailboxes are rings made when a host is created (a mutex
 * each: the two engines run on two threads), so the path allocates nothing of the
 * harness's; row 8 counts the library's allocations only. The ping-pong rows only
 * (the relay row forks its server into another process, which a mailbox in memory
 * does not reach).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tickwire.h"
#include "tw_adapter.h"

#define MAILBOX_SLOTS 1024
#define MAX_HOSTS 64
#define BATCH 32

typedef struct mailbox {
    pthread_mutex_t lock;
    uint64_t from[MAILBOX_SLOTS];
    uint32_t len[MAILBOX_SLOTS];
    uint8_t data[MAILBOX_SLOTS][TW_MAX_DATAGRAM_SIZE];
    size_t head, count;
    uint64_t dropped;
} mailbox;

typedef struct carried_host {
    tw_host *host;
    uint64_t id;
    mailbox *inbox;
    /* What a pull or push works in: made once. */
    tw_datagram items[BATCH];
    uint8_t buffer[BATCH * TW_MAX_DATAGRAM_SIZE];
} carried_host;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static carried_host *registry[MAX_HOSTS]; /* host with remote id i + 1 */

static int c_init(void) {
    return 0;
}

static void c_fini(void) {
}

static void deliver(uint64_t from, uint64_t to, const uint8_t *data, uint32_t len) {
    pthread_mutex_lock(&registry_lock);
    carried_host *dst = to >= 1 && to <= MAX_HOSTS ? registry[to - 1] : NULL;
    mailbox *m = dst != NULL ? dst->inbox : NULL;
    if (m != NULL) {
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    if (m == NULL) {
        return; /* gone: a datagram to nowhere, as on a network */
    }
    if (m->count == MAILBOX_SLOTS || len > TW_MAX_DATAGRAM_SIZE) {
        m->dropped++;
    } else {
        size_t i = (m->head + m->count) % MAILBOX_SLOTS;
        m->from[i] = from;
        m->len[i] = len;
        memcpy(m->data[i], data, len);
        m->count++;
    }
    pthread_mutex_unlock(&m->lock);
}

/* Moves everything the host has to send into its destinations' mailboxes. */
static int send_out(carried_host *c) {
    size_t n;
    do {
        CHECK(tw_host_pull_datagrams(c->host, c->items, BATCH, c->buffer, sizeof c->buffer, &n));
        for (size_t i = 0; i < n; i++) {
            deliver(c->id, c->items[i].remote, c->items[i].data, c->items[i].len);
        }
    } while (n == BATCH);
    return 0;
}

/* Pushes what the host's mailbox holds, a batch at a time. */
static int take_in(carried_host *c) {
    mailbox *m = c->inbox;
    for (;;) {
        pthread_mutex_lock(&m->lock);
        size_t n = 0;
        while (n < BATCH && m->count > 0) {
            size_t i = m->head;
            memcpy(c->buffer + n * TW_MAX_DATAGRAM_SIZE, m->data[i], m->len[i]);
            c->items[n] = (tw_datagram){m->from[i], c->buffer + n * TW_MAX_DATAGRAM_SIZE, m->len[i], 0};
            m->head = (m->head + 1) % MAILBOX_SLOTS;
            m->count--;
            n++;
        }
        pthread_mutex_unlock(&m->lock);
        if (n == 0) {
            return 0;
        }
        CHECK(tw_host_push_datagrams(c->host, c->items, n, NULL));
    }
}

static int c_create(const bt_lib *lib, uint16_t port, uint32_t max_peers, void **out) {
    (void)port;
    carried_host *c = calloc(1, sizeof *c);
    mailbox *m = calloc(1, sizeof *m);
    if (c == NULL || m == NULL || pthread_mutex_init(&m->lock, NULL) != 0) {
        free(c);
        free(m);
        fprintf(stderr, "tickwire carrier: out of memory\n");
        return -1;
    }
    c->inbox = m;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_HOSTS && c->id == 0; i++) {
        if (registry[i] == NULL) {
            registry[i] = c;
            c->id = (uint64_t)i + 1;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    char bind[32];
    snprintf(bind, sizeof bind, "remote:%llu", (unsigned long long)c->id);
    if (c->id == 0 || bt_tw_host(lib->variant, bind, max_peers, &c->host) != 0) {
        if (c->id == 0) {
            fprintf(stderr, "tickwire carrier: more than %d hosts\n", MAX_HOSTS);
        }
        lib->destroy(c);
        return -1;
    }
    *out = c;
    return 0;
}

static int c_local_port(void *host, uint16_t *out) {
    *out = (uint16_t)((carried_host *)host)->id;
    return 0;
}

static int c_connect(void *host, uint16_t port, uint32_t *out_peer) {
    char addr[32];
    snprintf(addr, sizeof addr, "remote:%u", (unsigned)port);
    CHECK(tw_host_connect(((carried_host *)host)->host, addr, out_peer));
    return 0;
}

/* Sending and reading events are as over UDP: lib_tickwire.c's, on the inner host. */
static int c_send(void *host, uint32_t peer, bt_delivery d, const uint8_t *data, size_t len) {
    return bt_lib_tickwire_encrypted.send(((carried_host *)host)->host, peer, d, data, len);
}

static int c_flush(void *host) {
    carried_host *c = host;
    CHECK(tw_host_flush(c->host));
    return send_out(c);
}

static int c_poll(void *host, bt_event *ev, uint8_t *buf, size_t cap) {
    carried_host *c = host;
    if (take_in(c) != 0 || send_out(c) != 0) {
        return -1;
    }
    return bt_lib_tickwire_encrypted.poll(c->host, ev, buf, cap);
}

static void c_destroy(void *host) {
    carried_host *c = host;
    if (c->id != 0) {
        pthread_mutex_lock(&registry_lock);
        registry[c->id - 1] = NULL;
        pthread_mutex_unlock(&registry_lock);
    }
    tw_host_destroy(c->host);
    pthread_mutex_destroy(&c->inbox->lock);
    free(c->inbox);
    free(c);
}

const bt_lib bt_lib_tickwire_carrier = {
    "tickwire carrier", TW_SECURITY_MODE_ENCRYPTED, c_init, c_fini, c_create, c_local_port,
    c_connect, c_send, c_flush, c_poll, c_destroy,
};
