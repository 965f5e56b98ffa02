/*
 * tickwire relay example: a server and four clients in one process, each with its own
 * tw_session, over 127.0.0.1 through the link simulator (50 ms each way, jitter, a
 * little loss). The game is boxes on a wrapping grid, moved by 2-byte inputs; boxes
 * that meet score. The server runs the authoritative simulation; each client predicts
 * ahead of it and re-simulates when a prediction was wrong. Every second a net-graph
 * line per client is printed. At the end, every client's authoritative checksums must
 * equal the server's at every tick both still remember.
 *
 * Every connection is encrypted. The server admits only clients holding a connect token:
 * the example plays the game backend too, generating the backend's key
 * (tw_generate_key), giving it to the server with the address clients reach it at, and
 * minting one token per client for that address (tw_connect_token_generate); a real
 * backend hands tokens to clients over HTTPS.
 *
 *   cargo build
 *   ln -sf libtickwire.so target/debug/libtickwire.so.1   # its SONAME (the ABI version)
 *   cc -std=c11 -Wall -Wextra -pedantic -Iinclude examples-c/relay.c \
 *      -Ltarget/debug -ltickwire -o build/relay
 *   LD_LIBRARY_PATH=target/debug build/relay [seconds]
 *
 * Exit status 0 when every client agrees with the server, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tickwire.h"

#define PLAYERS 4    /* player slots; each client gets one from the server */
#define CLIENTS 4
#define GRID_W 32
#define GRID_H 24
#define HISTORY 4096 /* ticks of checksums kept per node, for the final comparison */
#define MAX_WALL_SECONDS 90.0

/* The whole game state: engines snapshot it into the slots the session names. */
typedef struct game {
    int32_t present[PLAYERS];
    int32_t x[PLAYERS], y[PLAYERS];
    int32_t score[PLAYERS];
} game;

/* One engine: the server or a client. */
typedef struct node {
    char name[16];
    tw_session *s;
    int is_server;
    game state;
    game *slots;              /* tw_session_state_slots() snapshots */
    uint32_t sum_tick[HISTORY]; /* checksum of the state at the start of a tick */
    uint64_t sum[HISTORY];
    uint32_t pushed;          /* inputs pushed so far (a client's input clock) */
    int joined, synchronized, desyncs, failed;
    uint32_t player, joined_tick;
} node;

static void fail(node *n, const char *what, tw_result r) {
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    fprintf(stderr, "relay: %s: %s failed: %s: %s\n", n->name, what, tw_result_str(r), msg);
    n->failed = 1;
}

/* A setup call: true when it returned OK, else reports it (with the library's message). */
static int ok_or_fail(node *n, const char *what, tw_result r) {
    if (r != TW_RESULT_OK) fail(n, what, r);
    return r == TW_RESULT_OK;
}

static uint64_t checksum(const game *g) { /* FNV-1a over the state's bytes */
    const unsigned char *b = (const unsigned char *)g;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < sizeof *g; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void remember(node *n, uint32_t tick, uint64_t sum) { /* the last one of a tick wins */
    n->sum_tick[tick % HISTORY] = tick;
    n->sum[tick % HISTORY] = sum;
}

static int32_t wrap(int32_t v, int32_t m) { return ((v % m) + m) % m; }

/* One tick. Inputs: 2 bytes per player, dx + 1 and dy + 1 (each 0..2). A player whose
 * status is DISCONNECTED has no box; one that appears gets a box at its spawn cell. */
static void step(game *g, const uint8_t *inputs, const uint8_t *status) {
    for (int p = 0; p < PLAYERS; p++) {
        if (status[p] == TW_INPUT_STATUS_DISCONNECTED) {
            g->present[p] = 0;
            continue;
        }
        if (!g->present[p]) {
            g->present[p] = 1;
            g->x[p] = (p * 7) % GRID_W;
            g->y[p] = (p * 5) % GRID_H;
        }
        g->x[p] = wrap(g->x[p] + inputs[2 * p] % 3 - 1, GRID_W);
        g->y[p] = wrap(g->y[p] + inputs[2 * p + 1] % 3 - 1, GRID_H);
    }
    for (int a = 0; a < PLAYERS; a++)
        for (int b = a + 1; b < PLAYERS; b++)
            if (g->present[a] && g->present[b] && g->x[a] == g->x[b] && g->y[a] == g->y[b]) {
                g->score[a]++;
                g->score[b]++;
            }
}

/* What client `c` "presses" for its k-th tick: a new direction every 8 ticks. */
static void input_at(uint32_t c, uint32_t k, uint8_t out[2]) {
    uint32_t x = (k / 8 + 1) * 2654435761u ^ (c + 1) * 40503u;
    x ^= x >> 15;
    out[0] = (uint8_t)(x % 3);
    out[1] = (uint8_t)((x >> 8) % 3);
}

static void run_requests(node *n) {
    tw_request r;
    tw_result res;
    while ((res = tw_session_poll_request(n->s, &r)) == TW_RESULT_OK) {
        size_t len = 0;
        switch (r.kind) {
        case TW_REQUEST_KIND_SAVE: {
            uint64_t sum = checksum(&n->state);
            n->slots[r.slot] = n->state;
            if (!n->is_server) remember(n, r.tick, sum); /* the start of r.tick */
            if (TW_FAILED(res = tw_session_confirm_save(n->s, r.tick, sum))) fail(n, "confirm_save", res);
            break;
        }
        case TW_REQUEST_KIND_LOAD:
            n->state = n->slots[r.slot];
            break;
        case TW_REQUEST_KIND_ADVANCE: {
            /* TW_REQUEST_FLAG_RESIMULATING: a game would mute sounds and effects here;
             * TW_REQUEST_FLAG_AUTHORITATIVE: this tick is final (the server's, or a
             * client's canonical step). */
            uint8_t inputs[2 * PLAYERS], status[PLAYERS];
            if (TW_FAILED(res = tw_session_request_inputs(n->s, inputs, sizeof inputs, &len))) {
                fail(n, "request_inputs", res);
                break;
            }
            if (TW_FAILED(res = tw_session_request_input_status(n->s, status, sizeof status, &len))) {
                fail(n, "request_input_status", res);
                break;
            }
            step(&n->state, inputs, status);
            if (n->is_server) remember(n, r.tick + 1, checksum(&n->state));
            break;
        }
        case TW_REQUEST_KIND_DUMP_STATE: /* server: a snapshot for joining clients */
            res = tw_session_provide_state(n->s, r.tick, &n->slots[r.slot], sizeof(game));
            if (TW_FAILED(res)) fail(n, "provide_state", res);
            break;
        case TW_REQUEST_KIND_RESTORE: /* client: the server's snapshot */
            if (TW_FAILED(res = tw_session_request_state(n->s, &n->state, sizeof(game), &len))) fail(n, "request_state", res);
            break;
        }
    }
    if (TW_FAILED(res)) fail(n, "poll_request", res);
}

/* One engine frame: the loop of the header's SESSIONS section. */
static void frame(node *n, uint32_t index) {
    uint32_t due = 0;
    tw_result r = tw_session_ticks_due(n->s, &due);
    if (TW_FAILED(r)) {
        fail(n, "ticks_due", r);
        return;
    }
    while (due--) {
        if (!n->is_server) { /* the server has no player of its own */
            uint8_t in[2];
            input_at(index, n->pushed++, in);
            if (TW_FAILED(r = tw_session_push_input(n->s, TW_LOCAL_PLAYER, in, sizeof in))) fail(n, "push_input", r);
        }
        r = tw_session_advance(n->s); /* OK; NOT_SYNCHRONIZED before a client has joined; WINDOW_FULL at its prediction cap */
        if (TW_FAILED(r)) fail(n, "advance", r);
        run_requests(n);
    }
    tw_session_event e;
    while (tw_session_poll_event(n->s, &e) == TW_RESULT_OK) {
        switch (e.kind) {
        case TW_SESSION_EVENT_KIND_PLAYER_JOINED:
            if (n->is_server) printf("server: player %u joined at tick %u\n", (unsigned)e.data.relay.player, (unsigned)e.data.relay.tick);
            break;
        case TW_SESSION_EVENT_KIND_JOINED:
            n->joined = 1;
            n->player = e.data.relay.player;
            n->joined_tick = e.data.relay.tick;
            break;
        case TW_SESSION_EVENT_KIND_SYNCHRONIZED:
            n->synchronized = 1;
            printf("%s: player %u, caught up at tick %u\n", n->name, (unsigned)n->player, (unsigned)e.data.tick.tick);
            break;
        case TW_SESSION_EVENT_KIND_INPUT_DELAY_CHANGED:
            /* The round trip outgrew max_prediction: the rest shows as input delay. */
            printf("%s: input delay now %u ticks (%u beyond max_prediction)\n", n->name,
                   (unsigned)e.data.input_delay.ticks, (unsigned)e.data.input_delay.spill);
            break;
        case TW_SESSION_EVENT_KIND_DESYNC:
            printf("%s: DESYNC at tick %u\n", n->name, (unsigned)e.data.desync.tick);
            n->desyncs++;
            break;
        case TW_SESSION_EVENT_KIND_CONNECTION_REJECTED:
            printf("%s: refused a connection (reason %u)\n", n->name, (unsigned)e.data.rejected.reason);
            break;
        /* The reason is in the event, not in the last error. */
        case TW_SESSION_EVENT_KIND_SERVER_LOST:
            fprintf(stderr, "relay: %s: lost the server (tw_disconnect_reason %u)\n", n->name, (unsigned)e.data.relay.reason);
            n->failed = 1;
            break;
        case TW_SESSION_EVENT_KIND_FATAL:
            fprintf(stderr, "relay: %s: the network thread stopped: %s\n", n->name, e.data.fatal.message);
            n->failed = 1;
            break;
        }
    }
}

/* Creates a node's session bound to `bind`, with its security settings (read only
 * during tw_session_create: the caller may wipe them afterwards). */
static int create(node *n, const char *name, uint32_t mode, uint64_t seed, const char *bind,
                  const tw_security_config *security) {
    tw_session_config cfg;
    tw_session_config_init_default(&cfg);
    cfg.mode = mode;
    cfg.num_players = PLAYERS;
    cfg.input_size = 2;
    cfg.max_prediction = 16; /* covers the 100 ms round trip at 60 Hz */
    cfg.host.sim_seed = seed; /* reproducible simulated loss and jitter */
    cfg.host.security = security;
    snprintf(cfg.bind_address, sizeof cfg.bind_address, "%s", bind);
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->is_server = mode == TW_SESSION_MODE_RELAY_SERVER;
    tw_result r = tw_session_create(&cfg, &n->s);
    if (TW_FAILED(r)) {
        fail(n, "create", r);
        return 0;
    }
    uint32_t slots = 0;
    if (!ok_or_fail(n, "state_slots", tw_session_state_slots(n->s, &slots))) return 0;
    n->slots = (game *)calloc(slots, sizeof(game));
    tw_link_sim_config sim; /* on what this node sends: both directions of each link */
    tw_link_sim_config_init_default(&sim);
    sim.latency_us = 50000;
    sim.jitter_kind = TW_JITTER_KIND_UNIFORM;
    sim.jitter_us = 5000.0;
    sim.loss_kind = TW_LOSS_KIND_BERNOULLI;
    sim.loss_probability = 0.01;
    if (TW_FAILED(r = tw_session_set_link_sim(n->s, TW_DIRECTION_OUTBOUND, &sim))) fail(n, "set_link_sim", r);
    return n->slots != NULL && !n->failed;
}

static void print_net_graph(node *clients, double second) {
    for (int i = 0; i < CLIENTS; i++) {
        tw_session_stats st;
        if (TW_FAILED(tw_session_get_stats(clients[i].s, &st))) continue;
        printf("[%4.1f s] %s  rtt %5.1f ms  lead %5.2f  server buffer %2u  prediction %2u  "
               "resimulated %5llu  late %3llu\n",
               second, clients[i].name, st.rtt_us / 1000.0, st.lead_ticks, (unsigned)st.server_buffer_depth,
               (unsigned)st.prediction_distance, (unsigned long long)st.resimulated_ticks,
               (unsigned long long)st.late_inputs);
    }
}

static double seconds_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Compares client `c`'s checksums with the server's over every tick from its join to
 * its authoritative tick that both still remember; counts the ticks and differences. */
static void compare(const node *server, const node *c, uint32_t *compared, uint32_t *differ) {
    tw_session_stats st;
    *compared = *differ = 0;
    if (TW_FAILED(tw_session_get_stats(c->s, &st)) || !c->joined) return;
    uint32_t authoritative = st.confirmed_tick; /* the state at its start is the server's */
    uint32_t from = authoritative > HISTORY ? authoritative - HISTORY : 0;
    if (from < c->joined_tick) from = c->joined_tick;
    for (uint32_t t = from; t < authoritative; t++) {
        uint32_t i = t % HISTORY;
        if (c->sum_tick[i] != t || server->sum_tick[i] != t) continue;
        (*compared)++;
        if (c->sum[i] != server->sum[i]) (*differ)++;
    }
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 4.0;
    static node server, clients[CLIENTS]; /* static: the checksum histories are large */
    char addr[64] = "", name[16];
    tw_session_config defaults;
    tw_security_config security; /* 1.2 KB: the keys, the address and a token */
    uint8_t backend_key[TW_KEY_SIZE];
    tw_session_config_init_default(&defaults);

    /* The backend: one key, shared with the servers (and nobody else). */
    tw_result r = tw_generate_key(backend_key, sizeof backend_key);
    int ok = r == TW_RESULT_OK;
    if (!ok) fprintf(stderr, "relay: no key (%s)\n", tw_result_str(r));
    /* The server: the key, and the address its clients use, which their tokens name. A
     * real server sets public_address (what the internet sees, "203.0.113.7:7000");
     * left empty it is the address the server is bound to, here 127.0.0.1 and a free
     * port, read back once the server exists. */
    tw_security_config_init_default(&security);
    security.has_connect_key = 1;
    memcpy(security.connect_key, backend_key, TW_KEY_SIZE);
    size_t addr_len = 0;
    ok = ok && create(&server, "server", TW_SESSION_MODE_RELAY_SERVER, 100, "127.0.0.1:0", &security) &&
         ok_or_fail(&server, "local_address", tw_session_local_address(server.s, addr, sizeof addr, &addr_len)) &&
         ok_or_fail(&server, "start", tw_session_start(server.s));
    for (int i = 0; ok && i < CLIENTS; i++) {
        snprintf(name, sizeof name, "client %d", i + 1);
        /* The backend mints a token for this player and this server, good for the whole
         * match (reconnects need a valid one too); the client shows it when it connects. */
        tw_security_config_init_default(&security);
        security.connect_token_size = TW_CONNECT_TOKEN_SIZE;
        r = tw_connect_token_generate(backend_key, sizeof backend_key, defaults.host.protocol_id, 1000 + (uint64_t)i,
                                      addr, 300, 0, NULL, 0, security.connect_token, sizeof security.connect_token);
        ok = ok_or_fail(&server, "tw_connect_token_generate", r) &&
             create(&clients[i], name, TW_SESSION_MODE_RELAY_CLIENT, 101 + (uint64_t)i, "127.0.0.1:0", &security) &&
             ok_or_fail(&clients[i], "set_server", tw_session_set_server(clients[i].s, addr)) &&
             ok_or_fail(&clients[i], "start", tw_session_start(clients[i].s));
    }
    /* The sessions keep what they need: wipe our copies of the secrets. */
    memset(&security, 0, sizeof security);
    memset(backend_key, 0, sizeof backend_key);
    if (!ok) fprintf(stderr, "relay: setup failed\n");
    printf("relay: a server on %s and %d clients, 50 ms each way, 0-5 ms jitter, 1%% loss\n", addr, CLIENTS);
    printf("relay: encrypted; clients admitted by connect tokens minted with the backend's key\n");

    /* Play until every client has been caught up for `seconds` (under valgrind joining
     * takes longer; the wall-clock cap ends a run that never gets there). */
    struct timespec t0, synced_at;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int all_synced = 0;
    double next_graph = 1.0;
    while (ok && !server.failed && seconds_since(&t0) < MAX_WALL_SECONDS) {
        frame(&server, 0);
        int synced = 1;
        for (int i = 0; i < CLIENTS; i++) {
            frame(&clients[i], (uint32_t)i);
            ok = ok && !clients[i].failed;
            synced = synced && clients[i].synchronized;
        }
        if (synced && !all_synced) {
            all_synced = 1;
            clock_gettime(CLOCK_MONOTONIC, &synced_at);
        }
        if (all_synced && seconds_since(&synced_at) >= seconds) break;
        if (seconds_since(&t0) >= next_graph) {
            print_net_graph(clients, next_graph);
            next_graph += 1.0;
        }
        sleep_ms(2);
    }

    int success = ok && all_synced && !server.failed;
    printf("\n%-9s %6s %6s %13s %9s %6s %11s %11s %7s\n", "", "player", "joined", "authoritative", "compared",
           "differ", "re-predict", "resimulated", "desyncs");
    for (int i = 0; i < CLIENTS; i++) {
        tw_session_stats st;
        memset(&st, 0, sizeof st);
        if (clients[i].s) tw_session_get_stats(clients[i].s, &st);
        uint32_t compared, differ;
        compare(&server, &clients[i], &compared, &differ);
        printf("%-9s %6u %6u %13u %9u %6u %11llu %11llu %7d\n", clients[i].name, (unsigned)clients[i].player,
               (unsigned)clients[i].joined_tick, (unsigned)st.confirmed_tick, (unsigned)compared, (unsigned)differ,
               (unsigned long long)st.rollbacks, (unsigned long long)st.resimulated_ticks, clients[i].desyncs);
        success = success && compared >= 60 && differ == 0 && clients[i].desyncs == 0 && !clients[i].failed;
    }
    tw_session_stats ss;
    memset(&ss, 0, sizeof ss);
    if (server.s) tw_session_get_stats(server.s, &ss);
    printf("server: tick %u, %u players, checksums sent %llu, empty steps %llu\n", (unsigned)ss.current_tick,
           (unsigned)ss.players, (unsigned long long)ss.checks_compared, (unsigned long long)ss.empty_steps);

    for (int i = 0; i < CLIENTS; i++) {
        tw_session_destroy(clients[i].s);
        free(clients[i].slots);
    }
    tw_session_destroy(server.s);
    free(server.slots);
    printf("%s\n", success ? "relay: every client agrees with the server" : "relay: FAILED");
    return success ? 0 : 1;
}
