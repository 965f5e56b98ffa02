/*
 * A seeded UDP proxy on its own thread, in front of the server: the same impairment
 * (loss and one-way delay, each direction) for every library, since ENet has no link
 * simulator and tickwire's must not be used for a comparison. It also counts the UDP
 * payload bytes each way (IP and UDP headers not included).
 *
 * Each client address gets its own upstream socket, so the server sees one address
 * per client as it would without the proxy. The delay is the same for every datagram,
 * so a FIFO in arrival order is also in release order.
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define PX_CLIENTS 64
#define PX_QUEUE 4096
#define PX_MTU 1500

typedef struct px_datagram {
    uint64_t due_ns;
    int client;
    int up; /* client -> server */
    size_t len;
    uint8_t data[PX_MTU];
} px_datagram;

struct bt_proxy {
    bt_proxy_config cfg;
    int front;                 /* clients talk to this socket */
    struct sockaddr_in server; /* where upstream sockets are connected */
    struct {
        struct sockaddr_in addr;
        int fd;
    } clients[PX_CLIENTS];
    int nclients;
    px_datagram *queue;
    size_t head, count;
    uint64_t rng;
    atomic_ullong up_bytes, up_datagrams, down_bytes, down_datagrams, dropped;
    atomic_int stop;
    pthread_t thread;
};

/* splitmix64: small, seedable, and good enough for a coin per datagram. */
static double next_unit(bt_proxy *p) {
    uint64_t z = (p->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

static int udp_socket(void) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        perror("proxy: socket");
        return -1;
    }
    if (fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
        perror("proxy: fcntl");
        close(fd);
        return -1;
    }
    return fd;
}

/* The client slot of a source address, made on first sight. -1: no room. */
static int client_slot(bt_proxy *p, const struct sockaddr_in *from) {
    for (int i = 0; i < p->nclients; i++) {
        if (p->clients[i].addr.sin_port == from->sin_port && p->clients[i].addr.sin_addr.s_addr == from->sin_addr.s_addr) {
            return i;
        }
    }
    if (p->nclients == PX_CLIENTS) {
        return -1;
    }
    int fd = udp_socket();
    if (fd < 0) {
        return -1;
    }
    if (connect(fd, (const struct sockaddr *)&p->server, sizeof p->server) != 0) {
        perror("proxy: connect");
        close(fd);
        return -1;
    }
    p->clients[p->nclients].addr = *from;
    p->clients[p->nclients].fd = fd;
    return p->nclients++;
}

/* Counts a datagram, then drops it or queues it for its release time. */
static void admit(bt_proxy *p, int client, int up, const uint8_t *data, size_t len) {
    if (up) {
        atomic_fetch_add(&p->up_bytes, len);
        atomic_fetch_add(&p->up_datagrams, 1);
    } else {
        atomic_fetch_add(&p->down_bytes, len);
        atomic_fetch_add(&p->down_datagrams, 1);
    }
    if ((p->cfg.loss > 0.0 && next_unit(p) < p->cfg.loss) || p->count == PX_QUEUE) {
        atomic_fetch_add(&p->dropped, 1);
        return;
    }
    px_datagram *d = &p->queue[(p->head + p->count) % PX_QUEUE];
    d->due_ns = bt_now_ns() + (uint64_t)p->cfg.delay_us * 1000u;
    d->client = client;
    d->up = up;
    d->len = len;
    memcpy(d->data, data, len);
    p->count++;
}

static void release_due(bt_proxy *p, uint64_t now) {
    while (p->count > 0 && p->queue[p->head].due_ns <= now) {
        px_datagram *d = &p->queue[p->head];
        /* Loopback send failures (a full buffer) count as loss, as on a real path. */
        if (d->up) {
            (void)send(p->clients[d->client].fd, d->data, d->len, 0);
        } else {
            (void)sendto(p->front, d->data, d->len, 0, (const struct sockaddr *)&p->clients[d->client].addr,
                         sizeof p->clients[d->client].addr);
        }
        p->head = (p->head + 1) % PX_QUEUE;
        p->count--;
    }
}

static void *proxy_main(void *arg) {
    bt_proxy *p = arg;
    uint8_t buf[PX_MTU];
    struct pollfd fds[PX_CLIENTS + 1];
    while (!atomic_load(&p->stop)) {
        uint64_t now = bt_now_ns();
        release_due(p, now);
        /* Sleep until the next release, or briefly to notice a stop. */
        uint64_t wait = 50000000u;
        if (p->count > 0 && p->queue[p->head].due_ns > now && p->queue[p->head].due_ns - now < wait) {
            wait = p->queue[p->head].due_ns - now;
        } else if (p->count > 0) {
            wait = 0;
        }
        struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
        int n = p->nclients;
        fds[0].fd = p->front;
        fds[0].events = POLLIN;
        for (int i = 0; i < n; i++) {
            fds[i + 1].fd = p->clients[i].fd;
            fds[i + 1].events = POLLIN;
        }
        if (ppoll(fds, (nfds_t)n + 1, &ts, NULL) <= 0) {
            continue;
        }
        if (fds[0].revents & POLLIN) {
            for (;;) {
                struct sockaddr_in from;
                socklen_t fl = sizeof from;
                ssize_t len = recvfrom(p->front, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
                if (len < 0) {
                    break;
                }
                int c = client_slot(p, &from);
                if (c >= 0) {
                    admit(p, c, 1, buf, (size_t)len);
                }
            }
        }
        for (int i = 0; i < n; i++) {
            if (fds[i + 1].revents & POLLIN) {
                ssize_t len;
                while ((len = recv(p->clients[i].fd, buf, sizeof buf, 0)) >= 0) {
                    admit(p, i, 0, buf, (size_t)len);
                }
            }
        }
    }
    return NULL;
}

int bt_proxy_start(const bt_proxy_config *cfg, uint16_t server_port, bt_proxy **out, uint16_t *out_port) {
    bt_proxy *p = calloc(1, sizeof *p);
    if (p == NULL || (p->queue = malloc(PX_QUEUE * sizeof *p->queue)) == NULL) {
        free(p);
        fprintf(stderr, "proxy: out of memory\n");
        return -1;
    }
    p->cfg = *cfg;
    p->rng = cfg->seed;
    p->server.sin_family = AF_INET;
    p->server.sin_port = htons(server_port);
    p->server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct sockaddr_in a = p->server;
    a.sin_port = 0;
    socklen_t al = sizeof a;
    if ((p->front = udp_socket()) < 0 || bind(p->front, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(p->front, (struct sockaddr *)&a, &al) != 0) {
        perror("proxy: bind");
        if (p->front >= 0) {
            close(p->front);
        }
        free(p->queue);
        free(p);
        return -1;
    }
    int rc = pthread_create(&p->thread, NULL, proxy_main, p);
    if (rc != 0) {
        fprintf(stderr, "proxy: pthread_create: %s\n", strerror(rc));
        close(p->front);
        free(p->queue);
        free(p);
        return -1;
    }
    *out_port = ntohs(a.sin_port);
    *out = p;
    return 0;
}

void bt_proxy_counters_get(bt_proxy *p, bt_proxy_counters *out) {
    out->up_bytes = atomic_load(&p->up_bytes);
    out->up_datagrams = atomic_load(&p->up_datagrams);
    out->down_bytes = atomic_load(&p->down_bytes);
    out->down_datagrams = atomic_load(&p->down_datagrams);
    out->dropped = atomic_load(&p->dropped);
}

void bt_proxy_counters_reset(bt_proxy *p) {
    atomic_store(&p->up_bytes, 0);
    atomic_store(&p->up_datagrams, 0);
    atomic_store(&p->down_bytes, 0);
    atomic_store(&p->down_datagrams, 0);
    atomic_store(&p->dropped, 0);
}

void bt_proxy_stop(bt_proxy *p) {
    if (p == NULL) {
        return;
    }
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
    for (int i = 0; i < p->nclients; i++) {
        close(p->clients[i].fd);
    }
    close(p->front);
    free(p->queue);
    free(p);
}
