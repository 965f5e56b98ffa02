/*
 * Rows 5, 6 and 7: a relay-shaped server with 64 clients.
 *
 * The server runs in its own process (fork), so that its CPU time is its own: it sends
 * its port up a pipe, runs a 60 Hz game loop that echoes every client's input back to
 * that client (the relay's per-tick broadcast, one message per client per tick), and
 * once all 64 are connected and a warm-up has passed it measures CPU over a number of
 * ticks: the whole process (CLOCK_PROCESS_CPUTIME_ID: every thread, the library's
 * included) and its engine thread alone (CLOCK_THREAD_CPUTIME_ID). It sends those up
 * the pipe and keeps serving until the parent writes a byte.
 *
 * This process runs the 64 client hosts in one game loop: each sends a 32-byte
 * unreliable input per tick and flushes, then polls. Row 6 counts this process's
 * threads; row 7 then stops calling either library for plan->idle_ms and sums the
 * context switches of every thread but the sleeping harness thread.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define SETUP_DEADLINE_NS 30000000000ull

typedef struct server_report {
    int ok;
    uint64_t ticks, all_ns, engine_ns, inputs;
} server_report;

static int fd_readable(int fd, int timeout_ms) {
    struct pollfd pfd = {fd, POLLIN, 0};
    return poll(&pfd, 1, timeout_ms) > 0;
}

/* Moves all `len` bytes through the pipe (write, or read with a timeout per chunk). */
static int pipe_all(int fd, void *buf, size_t len, int writing, int timeout_ms) {
    char *p = buf;
    while (len > 0) {
        if (!writing && !fd_readable(fd, timeout_ms)) {
            return -1;
        }
        ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t len) {
    return pipe_all(fd, (void *)(uintptr_t)buf, len, 1, 0);
}

static int read_all(int fd, void *buf, size_t len, int timeout_ms) {
    return pipe_all(fd, buf, len, 0, timeout_ms);
}

/* The server process's game loop. Returns 0 when it ran to the parent's stop. */
static int relay_server(const bt_lib *lib, const bt_plan *plan, int up, int down) {
    void *h;
    uint16_t port;
    if (lib->create(lib, 0, BT_RELAY_CLIENTS, &h) != 0) {
        return -1;
    }
    if (lib->local_port(h, &port) != 0 || write_all(up, &port, sizeof port) != 0) {
        lib->destroy(h);
        return -1;
    }
    enum { WAITING, WARMING, MEASURING, SERVING } phase = WAITING;
    server_report rep;
    memset(&rep, 0, sizeof rep); /* its padding goes down the pipe too */
    int connected = 0, ticks = 0, rc = 0;
    uint64_t all0 = 0, engine0 = 0, start = bt_now_ns(), next = start;
    uint8_t buf[BT_MAX_PAYLOAD];
    for (;;) {
        bt_event ev;
        int r;
        while ((r = lib->poll(h, &ev, buf, sizeof buf)) == 1) {
            if (ev.kind == BT_EV_CONNECTED) {
                connected++;
            } else if (ev.kind == BT_EV_DISCONNECTED) {
                connected--;
            } else if ((r = lib->send(h, ev.peer, BT_UNRELIABLE, buf, ev.len)) < 0) {
                break;
            } else if (r == 0) {
                rep.inputs++; /* echoed, in any phase: the smoke's proof of a working relay */
            }
            /* r == 1: that client left after sending; its DISCONNECTED is queued. */
        }
        if (r < 0 || lib->flush(h) != 0) {
            rc = -1;
            break;
        }
        ticks++;
        if (phase == WAITING && connected == BT_RELAY_CLIENTS) {
            phase = WARMING;
            ticks = 0;
        } else if (phase == WAITING && bt_now_ns() - start > SETUP_DEADLINE_NS) {
            fprintf(stderr, "%s relay server: %d of %d clients connected\n", lib->name, connected, BT_RELAY_CLIENTS);
            rc = -1;
            break;
        } else if (phase == WARMING && ticks >= plan->relay_warmup_ticks) {
            phase = MEASURING;
            ticks = 0;
            all0 = bt_cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
            engine0 = bt_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
        } else if (phase == MEASURING && ticks >= plan->relay_ticks) {
            rep.all_ns = bt_cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - all0;
            rep.engine_ns = bt_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - engine0;
            rep.ticks = (uint64_t)ticks;
            rep.ok = 1;
            if (write_all(up, &rep, sizeof rep) != 0) {
                rc = -1;
                break;
            }
            phase = SERVING;
        } else if (phase == SERVING && fd_readable(down, 0)) {
            break; /* the parent's stop (a byte, or its end of the pipe closing) */
        }
        next += BT_TICK_NS;
        bt_sleep_until_ns(next);
    }
    if (rc != 0 && phase < SERVING) {
        rep.ok = 0;
        (void)write_all(up, &rep, sizeof rep);
    }
    lib->destroy(h);
    return rc;
}

/* The parent's 64 clients, their game loop, then the idle window. */
static int relay_clients(const bt_lib *lib, const bt_plan *plan, int up, bt_result *res) {
    uint16_t port;
    if (read_all(up, &port, sizeof port, 5000) != 0) {
        fprintf(stderr, "%s relay: the server process did not start\n", lib->name);
        return -1;
    }
    void *clients[BT_RELAY_CLIENTS] = {0};
    uint32_t peers[BT_RELAY_CLIENTS];
    int up_count[BT_RELAY_CLIENTS] = {0};
    int rc = 0, n = 0;
    for (; n < BT_RELAY_CLIENTS && rc == 0; n++) {
        if (lib->create(lib, 0, 0, &clients[n]) != 0) {
            rc = -1;
            break;
        }
        rc = lib->connect(clients[n], port, &peers[n]);
    }
    server_report rep = {0, 0, 0, 0, 0};
    uint64_t deadline = bt_now_ns() + SETUP_DEADLINE_NS, next = bt_now_ns();
    uint32_t seq = 0;
    uint8_t msg[BT_MSG_SIZE], buf[BT_MAX_PAYLOAD];
    while (rc == 0 && !rep.ok) {
        for (int i = 0; i < n && rc == 0; i++) {
            if (up_count[i]) {
                bt_msg_write(msg, seq++, bt_now_ns());
                rc = lib->send(clients[i], peers[i], BT_UNRELIABLE, msg, sizeof msg);
            }
            rc = rc == 0 ? lib->flush(clients[i]) : rc;
        }
        for (int i = 0; i < n && rc == 0; i++) {
            bt_event ev;
            int r;
            while ((r = lib->poll(clients[i], &ev, buf, sizeof buf)) == 1) {
                up_count[i] |= ev.kind == BT_EV_CONNECTED;
                res->relay_echoes += ev.kind == BT_EV_MESSAGE;
            }
            rc = r < 0 ? -1 : 0;
        }
        if (rc == 0 && fd_readable(up, 0)) {
            if (read_all(up, &rep, sizeof rep, 1000) != 0 || !rep.ok) {
                fprintf(stderr, "%s relay: the server process failed\n", lib->name);
                rc = -1;
            }
        }
        if (rc == 0 && bt_now_ns() > deadline) {
            fprintf(stderr, "%s relay: no server report in time\n", lib->name);
            rc = -1;
        }
        next += BT_TICK_NS;
        bt_sleep_until_ns(next);
    }
    if (rc == 0) {
        res->threads = bt_thread_count();
        res->cpu_ticks += rep.ticks;
        res->cpu_all_ns += rep.all_ns;
        res->cpu_engine_ns += rep.engine_ns;
        res->relay_inputs += rep.inputs;
        /* Connected, and no library call until the window ends. */
        uint64_t before, after, t0 = bt_now_ns();
        rc = bt_context_switches(&before);
        bt_sleep_ms(plan->idle_ms);
        rc = rc == 0 ? bt_context_switches(&after) : rc;
        res->idle_seconds += (double)(bt_now_ns() - t0) / 1e9;
        res->idle_switches += after - before;
    }
    for (int i = 0; i < n; i++) {
        if (clients[i] != NULL) {
            lib->destroy(clients[i]);
        }
    }
    return rc;
}

int bt_measure_relay(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) {
        perror("pipe");
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        _exit(relay_server(lib, plan, up[1], down[0]) == 0 ? 0 : 1);
    }
    close(up[1]);
    close(down[0]);
    int rc = relay_clients(lib, plan, up[0], res);
    /* Stop the server only after the clients are gone: their goodbyes reach it. */
    char stop = 1;
    (void)write_all(down[1], &stop, 1);
    close(down[1]);
    close(up[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s relay: the server process failed (status %d)\n", lib->name, status);
        rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "%s: relay with %d clients failed\n", lib->name, BT_RELAY_CLIENTS);
    }
    return rc;
}
