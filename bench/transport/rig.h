/*
 * The load rig behind rows 5-7, 5b, 9 and 10 (rig.c): a server process (fork) of one or
 * more hosts in one 60 Hz game loop, and its clients, one host each, run by the calling
 * process or by forked client processes. One server loop and one client loop serve
 * every shape those rows ask for; a row only says how many clients, what they send up
 * each tick and what the server sends down.
 */
#ifndef BT_RIG_H
#define BT_RIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench.h"

/* What the server sends down each tick. */
typedef enum bt_down {
    BT_DOWN_ECHO,  /* each input back to its sender as it is polled (row 5's relay) */
    BT_DOWN_STATE, /* inputs read and dropped; one down_size message to every connected client (5b, 10) */
    BT_DOWN_NONE,  /* nothing, and no flush (row 9's idle loop) */
} bt_down;

typedef struct bt_rig_config {
    uint32_t clients; /* the server runs ceil(clients / BT_RELAY_CLIENTS) hosts, at least one */
    /* 0: the calling process runs the clients, and bt_rig_run returns with them still
     * connected (rows 6 and 7 look at that process); n > 0: n forked client processes. */
    int client_procs;
    int inputs; /* every client sends a BT_MSG_SIZE unreliable input each tick, then flushes */
    bt_down down;
    size_t down_size; /* BT_DOWN_STATE: BT_MSG_SIZE..BT_MAX_PAYLOAD */
    /* Once every client is connected the server warms up, then measures a window. */
    int warmup_ticks, ticks;
} bt_rig_config;

/* What the server process measured over its window. */
typedef struct bt_rig_server {
    int ok;
    uint32_t connected; /* clients connected when the window ended */
    uint64_t ticks, wall_ns, all_ns, engine_ns;
    uint64_t overruns; /* ticks of the window whose work ended past the next tick's start */
    uint64_t inputs;   /* inputs polled in the window */
    uint64_t sent;     /* messages sent down in the window (the server marks them) */
    uint64_t echoed;   /* BT_DOWN_ECHO: inputs echoed in any phase */
    uint64_t machine_busy, machine_total; /* bt_machine_cpu over the window */
} bt_rig_server;

/* What the clients counted, every client process's together. */
typedef struct bt_rig_clients {
    int ok;
    uint64_t received;        /* messages, any phase */
    uint64_t received_window; /* of which the server marked as sent in its window */
    uint64_t disconnects;     /* connections that ended before the rig stopped them */
    /* The client loops' own keeping of their tick, from the last connection to the end:
     * a client process that falls behind sends fewer inputs, and the server looks cheap. */
    uint64_t ticks, overruns, cpu_ns, wall_ns;
} bt_rig_clients;

typedef struct bt_rig {
    const bt_lib *lib;
    bt_rig_config cfg;
    pid_t server_pid;
    int server_up, server_down; /* the parent's ends of the server's pipes */
    uint32_t hosts;
    uint16_t *ports; /* each server host's port */
    /* client_procs == 0: the calling process's clients */
    void **client_hosts;
    uint32_t n_client_hosts;
    bt_rig_server server;
    bt_rig_clients clients;
} bt_rig;

/* Starts the server process and the clients, runs until the server has measured its
 * window and the clients have read what it sent in it. Returns 0 when every part
 * reported ok. Call bt_rig_stop afterwards in every case. */
int bt_rig_run(const bt_lib *lib, const bt_rig_config *cfg, bt_rig *rig);
/* Destroys the calling process's clients (if any), then stops the server process and
 * waits for it. Returns 0 when the server process exited cleanly. */
int bt_rig_stop(bt_rig *rig);
/* Adds what a run measured to a row's figures. */
void bt_load_add(bt_load *l, const bt_rig *rig);

/* --- between rig.c and rig_server.c ------------------------------------------------- */
/* The byte of a message down that says whether the server sent it in its window. The
 * harness's inputs carry 0xA5 ^ 12 there (bt_msg_write), never a mark. */
#define BT_RIG_MARK_AT 12
enum { BT_RIG_MARK_OUTSIDE = 0, BT_RIG_MARK_WINDOW = 1 };

/* How long the clients may take to connect. */
uint64_t bt_rig_setup_ns(uint32_t clients);
/* The server's hosts for that many clients. */
uint32_t bt_rig_hosts(uint32_t clients);
/* The server process's loop; returns 0 when it ran to the parent's stop. */
int bt_rig_serve(const bt_lib *lib, const bt_rig_config *cfg, int up, int down);

/* Pipes between the processes: all of `len` bytes, a read waiting at most timeout_ms
 * for each chunk. */
int bt_fd_readable(int fd, int timeout_ms);
int bt_write_all(int fd, const void *buf, size_t len);
int bt_read_all(int fd, void *buf, size_t len, int timeout_ms);

#endif
