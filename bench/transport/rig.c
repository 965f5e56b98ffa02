/*
 * The load rig (rig.h): a server process of one or more hosts and its clients.
 *
 * The server runs in its own process (fork), so that its CPU time is its own: its loop
 * is rig_server.c's. It sends its hosts' ports up a pipe, measures a window, sends its
 * report up the same pipe and keeps serving until this process writes a byte.
 *
 * The clients are one host each, in one 60 Hz game loop per process: each sends its
 * input and flushes, then every client is polled until empty. They count the messages
 * that arrive and those the server marked, so that a server which sent less, or whose
 * messages did not arrive, cannot pass for a cheap one.
 */
#define _POSIX_C_SOURCE 200809L

#include "rig.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Connecting: 30 s, and 10 ms more per client for the handshakes of thousands. */
#define SETUP_BASE_NS 30000000000ull
#define SETUP_PER_CLIENT_NS 10000000ull
/* Ticks the clients keep polling after the server's window, for its last messages. */
#define DRAIN_TICKS 4

uint64_t bt_rig_setup_ns(uint32_t clients) {
    return SETUP_BASE_NS + SETUP_PER_CLIENT_NS * clients;
}

/* The longest a run may take once connected: the server's ticks may stretch when it
 * falls behind, so four times their nominal length, and a minute more. */
static uint64_t run_ns(const bt_rig_config *cfg) {
    return bt_rig_setup_ns(cfg->clients) + 4 * (uint64_t)(cfg->warmup_ticks + cfg->ticks) * BT_TICK_NS + 60000000000ull;
}

uint32_t bt_rig_hosts(uint32_t clients) {
    return clients == 0 ? 1 : (clients + BT_RELAY_CLIENTS - 1) / BT_RELAY_CLIENTS;
}

/* --- pipes between the processes ---------------------------------------------------- */
int bt_fd_readable(int fd, int timeout_ms) {
    struct pollfd pfd = {fd, POLLIN, 0};
    return poll(&pfd, 1, timeout_ms) > 0;
}

/* Moves all `len` bytes through the pipe (write, or read with a timeout per chunk). */
static int pipe_all(int fd, void *buf, size_t len, int writing, int timeout_ms) {
    char *p = buf;
    while (len > 0) {
        if (!writing && !bt_fd_readable(fd, timeout_ms)) {
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

int bt_write_all(int fd, const void *buf, size_t len) {
    return pipe_all(fd, (void *)(uintptr_t)buf, len, 1, 0);
}

int bt_read_all(int fd, void *buf, size_t len, int timeout_ms) {
    return pipe_all(fd, buf, len, 0, timeout_ms);
}

static void close_fd(int *fd) {
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static int wait_child(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* --- the clients -------------------------------------------------------------------- */
typedef struct client_set {
    void **hosts;
    uint32_t *peers;
    uint8_t *up; /* connected */
    uint32_t n;
} client_set;

static void clients_destroy(const bt_lib *lib, client_set *set) {
    for (uint32_t i = 0; i < set->n; i++) {
        lib->destroy(set->hosts[i]);
    }
    free(set->hosts);
    free(set->peers);
    free(set->up);
    memset(set, 0, sizeof *set);
}

/* Clients lo..hi-1, client i connecting to the server's host i / BT_RELAY_CLIENTS. */
static int clients_create(const bt_lib *lib, const uint16_t *ports, uint32_t lo, uint32_t hi, client_set *set) {
    uint32_t n = hi - lo;
    memset(set, 0, sizeof *set);
    set->hosts = calloc(n ? n : 1, sizeof *set->hosts);
    set->peers = calloc(n ? n : 1, sizeof *set->peers);
    set->up = calloc(n ? n : 1, 1);
    if (set->hosts == NULL || set->peers == NULL || set->up == NULL) {
        fprintf(stderr, "rig: out of memory for %u clients\n", (unsigned)n);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (lib->create(lib, 0, 0, &set->hosts[i]) != 0) {
            return -1;
        }
        set->n++;
        if (lib->connect(set->hosts[i], ports[(lo + i) / BT_RELAY_CLIENTS], &set->peers[i]) != 0) {
            return -1;
        }
    }
    return 0;
}

/* The clients' game loop, until `stop_fd` is readable and DRAIN_TICKS more. */
static int clients_loop(const bt_lib *lib, const bt_rig_config *cfg, client_set *set, int stop_fd,
                        bt_rig_clients *rep) {
    uint8_t msg[BT_MSG_SIZE], buf[BT_MAX_PAYLOAD];
    uint32_t seq = 0, connected = 0;
    int drain = -1, rc = 0;
    uint64_t start = bt_now_ns(), next = start, t0 = 0, cpu0 = 0;
    while (rc == 0 && drain != 0) {
        for (uint32_t i = 0; i < set->n && rc == 0 && cfg->inputs; i++) {
            if (set->up[i]) {
                bt_msg_write(msg, seq++, bt_now_ns());
                /* 1: the server dropped this client; its DISCONNECTED is queued. */
                rc = lib->send(set->hosts[i], set->peers[i], BT_UNRELIABLE, msg, sizeof msg) < 0 ? -1 : 0;
            }
            rc = rc == 0 ? lib->flush(set->hosts[i]) : rc;
        }
        for (uint32_t i = 0; i < set->n && rc == 0; i++) {
            bt_event ev;
            int r;
            while ((r = lib->poll(set->hosts[i], &ev, buf, sizeof buf)) == 1) {
                if (ev.kind == BT_EV_CONNECTED) {
                    set->up[i] = 1;
                    if (++connected == set->n) {
                        t0 = bt_now_ns();
                        cpu0 = bt_cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
                    }
                } else if (ev.kind == BT_EV_DISCONNECTED) {
                    connected -= set->up[i];
                    set->up[i] = 0;
                    rep->disconnects++;
                } else {
                    rep->received++;
                    int marked = ev.len > BT_RIG_MARK_AT && buf[BT_RIG_MARK_AT] == BT_RIG_MARK_WINDOW;
                    rep->received_window += (uint64_t)marked;
                }
            }
            rc = r < 0 ? -1 : 0;
        }
        if (drain > 0) {
            drain--;
        } else if (drain < 0 && bt_fd_readable(stop_fd, 0)) {
            drain = DRAIN_TICKS;
        }
        next += BT_TICK_NS;
        uint64_t now = bt_now_ns();
        if (t0 != 0) {
            rep->ticks++;
            rep->overruns += (uint64_t)(now > next);
        }
        if (rc == 0 && now - start > run_ns(cfg)) {
            fprintf(stderr, "%s rig clients: no end of the server's window in time\n", lib->name);
            rc = -1;
        }
        bt_sleep_until_ns(next);
    }
    if (t0 != 0) {
        rep->wall_ns += bt_now_ns() - t0;
        rep->cpu_ns += bt_cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    }
    return rc;
}

/* A forked client process: clients lo..hi-1 until the parent's byte on `ctl`, then
 * their report up `rep_fd` once they are gone (their goodbyes sent). */
static int client_process(const bt_lib *lib, const bt_rig_config *cfg, const uint16_t *ports, uint32_t lo,
                          uint32_t hi, int ctl, int rep_fd) {
    bt_rig_clients rep;
    memset(&rep, 0, sizeof rep);
    client_set set;
    int rc = clients_create(lib, ports, lo, hi, &set);
    if (rc == 0) {
        rc = clients_loop(lib, cfg, &set, ctl, &rep);
    }
    clients_destroy(lib, &set);
    rep.ok = rc == 0;
    return bt_write_all(rep_fd, &rep, sizeof rep) == 0 ? rc : -1;
}

static void add_clients(bt_rig_clients *sum, const bt_rig_clients *c) {
    sum->received += c->received;
    sum->received_window += c->received_window;
    sum->disconnects += c->disconnects;
    sum->ticks += c->ticks;
    sum->overruns += c->overruns;
    sum->cpu_ns += c->cpu_ns;
    sum->wall_ns += c->wall_ns;
}

/* The clients in cfg->client_procs forked processes; returns when each has reported. */
static int run_client_processes(bt_rig *rig) {
    const bt_rig_config *cfg = &rig->cfg;
    int np = cfg->client_procs, rc = 0, started = 0;
    pid_t pids[8];
    int ctl[8], rep[8];
    if (np > 8) {
        fprintf(stderr, "rig: at most 8 client processes\n");
        return -1;
    }
    for (; started < np; started++) {
        int c[2], r[2];
        if (pipe(c) != 0) {
            perror("pipe");
            rc = -1;
            break;
        }
        if (pipe(r) != 0) {
            perror("pipe");
            close(c[0]);
            close(c[1]);
            rc = -1;
            break;
        }
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            close(c[0]);
            close(c[1]);
            close(r[0]);
            close(r[1]);
            rc = -1;
            break;
        }
        if (pid == 0) {
            /* Only its own ends: a pipe end held here would hide another's closing. */
            close(c[1]);
            close(r[0]);
            close(rig->server_up);
            close(rig->server_down);
            for (int k = 0; k < started; k++) {
                close(ctl[k]);
                close(rep[k]);
            }
            uint32_t lo = (uint32_t)((uint64_t)cfg->clients * (uint64_t)started / (uint64_t)np);
            uint32_t hi = (uint32_t)((uint64_t)cfg->clients * (uint64_t)(started + 1) / (uint64_t)np);
            _exit(client_process(rig->lib, cfg, rig->ports, lo, hi, c[0], r[1]) == 0 ? 0 : 1);
        }
        close(c[0]);
        close(r[1]);
        pids[started] = pid;
        ctl[started] = c[1];
        rep[started] = r[0];
    }
    /* The server's report ends the window; a client process that reports first failed. */
    struct pollfd pfd[9];
    pfd[0] = (struct pollfd){rig->server_up, POLLIN, 0};
    for (int k = 0; k < started; k++) {
        pfd[k + 1] = (struct pollfd){rep[k], POLLIN, 0};
    }
    uint64_t deadline = bt_now_ns() + run_ns(cfg);
    while (rc == 0) {
        int n = poll(pfd, (nfds_t)started + 1, 1000);
        if (n < 0 && errno != EINTR) {
            rc = -1;
        } else if (n > 0 && (pfd[0].revents & (POLLIN | POLLHUP))) {
            rc = bt_read_all(rig->server_up, &rig->server, sizeof rig->server, 1000) == 0 && rig->server.ok ? 0 : -1;
            break;
        } else if (n > 0) {
            fprintf(stderr, "%s rig: a client process ended before the server's window did\n", rig->lib->name);
            rc = -1;
        } else if (bt_now_ns() > deadline) {
            fprintf(stderr, "%s rig: no server report in time\n", rig->lib->name);
            rc = -1;
        }
    }
    char stop = 1;
    rig->clients.ok = 1;
    for (int k = 0; k < started; k++) {
        (void)bt_write_all(ctl[k], &stop, 1);
    }
    for (int k = 0; k < started; k++) {
        bt_rig_clients c;
        /* Generous: a process of a thousand hosts takes its time saying goodbye. */
        if (bt_read_all(rep[k], &c, sizeof c, 60000) != 0 || !c.ok) {
            rig->clients.ok = 0;
        } else {
            add_clients(&rig->clients, &c);
        }
        close(ctl[k]);
        close(rep[k]);
        if (wait_child(pids[k]) != 0) {
            rig->clients.ok = 0;
        }
    }
    return rc == 0 && rig->clients.ok ? 0 : -1;
}

/* Thousands of client hosts hold a socket each (tickwire: and a handle of it for the
 * network thread's wait): raise the soft limit of open files to the hard one. */
static void room_for_sockets(uint32_t clients) {
    struct rlimit rl;
    rlim_t need = (rlim_t)clients * 3 + 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need) {
        return;
    }
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need) {
        fprintf(stderr, "rig: %u clients may need %lu open files; the limit is %lu\n", (unsigned)clients,
                (unsigned long)need, (unsigned long)rl.rlim_cur);
    }
}

int bt_rig_run(const bt_lib *lib, const bt_rig_config *cfg, bt_rig *rig) {
    memset(rig, 0, sizeof *rig);
    rig->lib = lib;
    rig->cfg = *cfg;
    rig->server_pid = -1;
    rig->server_up = rig->server_down = -1;
    rig->hosts = bt_rig_hosts(cfg->clients);
    rig->ports = calloc(rig->hosts, sizeof *rig->ports);
    int up[2], down[2];
    if (rig->ports == NULL || pipe(up) != 0) {
        perror("rig");
        return -1;
    }
    if (pipe(down) != 0) {
        perror("pipe");
        close(up[0]);
        close(up[1]);
        return -1;
    }
    room_for_sockets(cfg->clients);
    /* A child that died leaves its pipe without a reader: the write to it should fail
     * and be reported, not kill the harness. */
    signal(SIGPIPE, SIG_IGN);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        close(up[0]);
        close(up[1]);
        close(down[0]);
        close(down[1]);
        return -1;
    }
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        bt_pin_to(0);
        _exit(bt_rig_serve(lib, cfg, up[1], down[0]) == 0 ? 0 : 1);
    }
    close(up[1]);
    close(down[0]);
    rig->server_pid = pid;
    rig->server_up = up[0];
    rig->server_down = down[1];
    if (bt_read_all(rig->server_up, rig->ports, rig->hosts * sizeof *rig->ports, 10000) != 0) {
        fprintf(stderr, "%s rig: the server process did not start\n", lib->name);
        return -1;
    }
    if (cfg->client_procs > 0) {
        return run_client_processes(rig);
    }
    client_set set;
    int rc = clients_create(lib, rig->ports, 0, cfg->clients, &set);
    rig->client_hosts = set.hosts; /* bt_rig_stop destroys them, as far as they were made */
    rig->n_client_hosts = set.n;
    if (rc == 0) {
        rc = clients_loop(lib, cfg, &set, rig->server_up, &rig->clients);
    }
    if (rc == 0 && (bt_read_all(rig->server_up, &rig->server, sizeof rig->server, 1000) != 0 || !rig->server.ok)) {
        fprintf(stderr, "%s rig: the server process failed\n", lib->name);
        rc = -1;
    }
    free(set.peers);
    free(set.up);
    rig->clients.ok = rc == 0;
    return rc;
}

int bt_rig_stop(bt_rig *rig) {
    /* The clients first: their goodbyes reach the server before it stops. */
    for (uint32_t i = 0; i < rig->n_client_hosts; i++) {
        rig->lib->destroy(rig->client_hosts[i]);
    }
    free(rig->client_hosts);
    rig->client_hosts = NULL;
    rig->n_client_hosts = 0;
    char stop = 1;
    int rc = 0;
    if (rig->server_down >= 0) {
        (void)bt_write_all(rig->server_down, &stop, 1);
    }
    close_fd(&rig->server_down);
    close_fd(&rig->server_up);
    if (rig->server_pid > 0 && wait_child(rig->server_pid) != 0) {
        fprintf(stderr, "%s rig: the server process failed\n", rig->lib->name);
        rc = -1;
    }
    rig->server_pid = -1;
    free(rig->ports);
    rig->ports = NULL;
    return rc;
}

void bt_load_add(bt_load *l, const bt_rig *rig) {
    const bt_rig_server *s = &rig->server;
    const bt_rig_clients *c = &rig->clients;
    uint64_t client_ticks = s->ticks * rig->cfg.clients;
    l->runs++;
    l->ticks += s->ticks;
    l->client_ticks += client_ticks;
    l->wall_ns += s->wall_ns;
    l->all_ns += s->all_ns;
    l->engine_ns += s->engine_ns;
    l->overruns += s->overruns;
    l->inputs += s->inputs;
    l->inputs_expected += rig->cfg.inputs ? client_ticks : 0;
    l->sent += s->sent;
    l->sent_expected += rig->cfg.down == BT_DOWN_STATE ? client_ticks : 0;
    l->received += c->received_window;
    l->short_connected += rig->cfg.clients - s->connected;
    l->disconnects += c->disconnects;
    l->client_loop_ticks += c->ticks;
    l->client_overruns += c->overruns;
    l->client_cpu_ns += c->cpu_ns;
    l->client_wall_ns += c->wall_ns;
    l->machine_busy += s->machine_busy;
    l->machine_total += s->machine_total;
}
