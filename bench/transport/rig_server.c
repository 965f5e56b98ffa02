/*
 * The load rig's server process (rig.h, started by rig.c): one or more hosts in one
 * 60 Hz game loop. It sleeps to the tick, polls every host until it has nothing more,
 * sends down what the shape asks (bt_down) and flushes each host. Once every client is
 * connected and a warm-up has passed, it measures a window of ticks: the CPU time of
 * the whole process (CLOCK_PROCESS_CPUTIME_ID: every thread, the library's included)
 * and of its engine thread alone (CLOCK_THREAD_CPUTIME_ID), the wall time, and the
 * ticks whose work ran past the next tick's start. It marks what it sends in the window
 * (one byte of each message), sends the report up the pipe and keeps serving until the
 * parent writes a byte, so that the clients can read the window's last messages.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rig.h"

typedef struct server_host {
    void *h;
    uint32_t n; /* connected peers */
    uint32_t peers[BT_RELAY_CLIENTS];
} server_host;

static void forget_peer(server_host *s, uint32_t peer) {
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->peers[i] == peer) {
            s->peers[i] = s->peers[--s->n];
            return;
        }
    }
}

/* Polls one host until it has nothing more: connections come and go, inputs are read
 * (and echoed back in BT_DOWN_ECHO). */
static int server_poll(const bt_lib *lib, const bt_rig_config *cfg, server_host *s, int measuring, uint32_t *connected,
                       bt_rig_server *rep) {
    uint8_t buf[BT_MAX_PAYLOAD];
    bt_event ev;
    int r;
    while ((r = lib->poll(s->h, &ev, buf, sizeof buf)) == 1) {
        if (ev.kind == BT_EV_CONNECTED) {
            if (s->n < BT_RELAY_CLIENTS) {
                s->peers[s->n++] = ev.peer;
            }
            ++*connected;
        } else if (ev.kind == BT_EV_DISCONNECTED) {
            forget_peer(s, ev.peer);
            --*connected;
        } else {
            rep->inputs += (uint64_t)measuring;
            if (cfg->down != BT_DOWN_ECHO) {
                continue;
            }
            if (ev.len > BT_RIG_MARK_AT) {
                buf[BT_RIG_MARK_AT] = measuring ? BT_RIG_MARK_WINDOW : BT_RIG_MARK_OUTSIDE;
            }
            if ((r = lib->send(s->h, ev.peer, BT_UNRELIABLE, buf, ev.len)) < 0) {
                return -1;
            }
            /* r == 1: that client left after sending; its DISCONNECTED is queued. */
            rep->echoed += (uint64_t)(r == 0);
            rep->sent += (uint64_t)(r == 0 && measuring);
        }
    }
    return r < 0 ? -1 : 0;
}

/* BT_DOWN_STATE: the tick's message to every connected client of one host. */
static int server_send_state(const bt_lib *lib, const bt_rig_config *cfg, server_host *s, uint8_t *msg, int measuring,
                             bt_rig_server *rep) {
    msg[BT_RIG_MARK_AT] = measuring ? BT_RIG_MARK_WINDOW : BT_RIG_MARK_OUTSIDE;
    for (uint32_t i = 0; i < s->n; i++) {
        int r = lib->send(s->h, s->peers[i], BT_UNRELIABLE, msg, cfg->down_size);
        if (r < 0) {
            return -1;
        }
        rep->sent += (uint64_t)(r == 0 && measuring);
    }
    return 0;
}

/* The server process's game loop. Returns 0 when it ran to the parent's stop. */
int bt_rig_serve(const bt_lib *lib, const bt_rig_config *cfg, int up, int down) {
    uint32_t nh = bt_rig_hosts(cfg->clients);
    server_host *hosts = calloc(nh, sizeof *hosts);
    uint16_t *ports = calloc(nh, sizeof *ports);
    int rc = hosts == NULL || ports == NULL ? -1 : 0;
    uint32_t made = 0;
    for (; made < nh && rc == 0; made++) {
        rc = lib->create(lib, 0, BT_RELAY_CLIENTS, &hosts[made].h);
        if (rc == 0) {
            rc = lib->local_port(hosts[made].h, &ports[made]);
        } else {
            break;
        }
    }
    if (rc == 0) {
        rc = bt_write_all(up, ports, nh * sizeof *ports);
    }
    enum { WAITING, WARMING, MEASURING, SERVING } phase = WAITING;
    bt_rig_server rep;
    memset(&rep, 0, sizeof rep); /* its padding goes down the pipe too */
    uint8_t state[BT_MAX_PAYLOAD];
    bt_msg_write(state, 0, 0); /* a pattern, not zeros; the tick goes in front */
    for (size_t i = BT_MSG_SIZE; i < sizeof state; i++) {
        state[i] = (uint8_t)(0x5A ^ i);
    }
    uint32_t connected = 0, tick = 0;
    int ticks = 0;
    uint64_t all0 = 0, engine0 = 0, wall0 = 0, busy0 = 0, total0 = 0, start = bt_now_ns(), next = start;
    while (rc == 0) {
        int measuring = phase == MEASURING;
        for (uint32_t h = 0; h < nh && rc == 0; h++) {
            rc = server_poll(lib, cfg, &hosts[h], measuring, &connected, &rep);
        }
        memcpy(state, &tick, sizeof tick);
        tick++;
        for (uint32_t h = 0; h < nh && rc == 0 && cfg->down == BT_DOWN_STATE; h++) {
            rc = server_send_state(lib, cfg, &hosts[h], state, measuring, &rep);
        }
        for (uint32_t h = 0; h < nh && rc == 0 && cfg->down != BT_DOWN_NONE; h++) {
            rc = lib->flush(hosts[h].h);
        }
        if (rc != 0) {
            break;
        }
        ticks++;
        next += BT_TICK_NS;
        uint64_t now = bt_now_ns();
        rep.overruns += (uint64_t)(measuring && now > next);
        if (phase == WAITING && connected == cfg->clients) {
            phase = WARMING;
            ticks = 0;
        } else if (phase == WAITING && now - start > bt_rig_setup_ns(cfg->clients)) {
            fprintf(stderr, "%s rig server: %u of %u clients connected\n", lib->name, (unsigned)connected,
                    (unsigned)cfg->clients);
            rc = -1;
        } else if (phase == WARMING && ticks >= cfg->warmup_ticks) {
            phase = MEASURING;
            ticks = 0;
            /* The machine's figures first and last: outside the window's CPU time. */
            (void)bt_machine_cpu(&busy0, &total0);
            all0 = bt_cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
            engine0 = bt_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
            wall0 = bt_now_ns();
        } else if (phase == MEASURING && ticks >= cfg->ticks) {
            rep.all_ns = bt_cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - all0;
            rep.engine_ns = bt_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - engine0;
            rep.wall_ns = bt_now_ns() - wall0;
            rep.ticks = (uint64_t)ticks;
            rep.connected = connected;
            if (bt_machine_cpu(&rep.machine_busy, &rep.machine_total) == 0) {
                rep.machine_busy -= busy0;
                rep.machine_total -= total0;
            }
            rep.ok = 1;
            rc = bt_write_all(up, &rep, sizeof rep);
            phase = SERVING;
        }
        /* The parent's stop (a byte, or its end of the pipe closing); not looked for in
         * the window, whose CPU time is the loop's alone. Before the report it means
         * the parent gave up. */
        if (rc == 0 && phase != MEASURING && bt_fd_readable(down, 0)) {
            rc = phase == SERVING ? 0 : -1;
            break;
        }
        bt_sleep_until_ns(next);
    }
    if (rc != 0 && !rep.ok) {
        (void)bt_write_all(up, &rep, sizeof rep);
    }
    for (uint32_t h = 0; h < made; h++) {
        lib->destroy(hosts[h].h);
    }
    free(hosts);
    free(ports);
    return rc;
}
