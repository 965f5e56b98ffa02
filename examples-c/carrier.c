/*
 * tickwire over the engine's own carrier: the datagrams travel through a network the
 * game provides (Steam's SteamNetworkingMessages, Epic's P2P interface, WebRTC data
 * channels, a console's sockets), not through a UDP socket of the library's.
 *
 * A session bound to "remote:<id>" has no socket. Each frame the engine pushes what
 * its carrier received (tw_session_push_datagrams: the sender's id, the bytes, how
 * long ago they arrived) and pulls what to send (tw_session_pull_datagrams: the
 * destination's id and the bytes). Everything else stays in the library: the
 * handshake, encryption, acks, resends, time sync, rollback.
 *
 * Here the carrier is in memory: a list of datagrams in flight, each delivered 20-40
 * ms after it was sent (so some overtake others) unless it is lost (3%). It carries
 * two matches, one after the other:
 *   1. P2P: two peers, remote:1 and remote:2, one player each; at the end their
 *      checksums must agree at every confirmed tick;
 *   2. relay: a server (remote:10) and two predicting clients (remote:11, remote:12),
 *      admitted by connect tokens that name the server as "remote:10"; at the end
 *      each client's authoritative checksums must equal the server's.
 * The carrier's largest datagram is EOS's, 1170 bytes; no datagram may be larger.
 *
 *   cc -std=c11 -Wall -Wextra -pedantic -Iinclude examples-c/carrier.c \
 *      -Ltarget/debug -ltickwire -o build/carrier
 *   LD_LIBRARY_PATH=target/debug build/carrier [seconds]
 *
 * Exit status 0 when both matches end in sync, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tickwire.h"

#define PLAYERS 2
#define MAX_DATAGRAM 1170 /* EOS P2P's EOS_P2P_MAX_PACKET_SIZE */
#define HISTORY 4096
#define IN_FLIGHT 4096
#define MAX_WALL_SECONDS 60.0

/* ---- the carrier ------------------------------------------------------------------ */

typedef struct flight {
    uint64_t from, to;
    double at_ms; /* when it arrives */
    uint32_t len;
    uint8_t data[TW_MAX_DATAGRAM_SIZE];
} flight;

static flight air[IN_FLIGHT];
static int air_count;
static uint64_t lcg = 12345, sent, lost, largest;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double uniform(void) { /* [0, 1) */
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) / 9007199254740992.0;
}

/* Takes everything session `s` (known as `from`) has to send into the air. */
static int carrier_pull(tw_session *s, uint64_t from) {
    tw_datagram items[16];
    static uint8_t buffer[16 * TW_MAX_DATAGRAM_SIZE];
    size_t n;
    do {
        tw_result r = tw_session_pull_datagrams(s, items, 16, buffer, sizeof buffer, &n);
        if (r != TW_RESULT_OK) return 0;
        for (size_t i = 0; i < n; i++) {
            sent++;
            if (items[i].len > largest) largest = items[i].len;
            if (uniform() < 0.03 || air_count == IN_FLIGHT) {
                lost++;
                continue;
            }
            flight *f = &air[air_count++];
            f->from = from;
            f->to = items[i].remote;
            f->at_ms = now_ms() + 20.0 + 20.0 * uniform();
            f->len = items[i].len;
            memcpy(f->data, items[i].data, items[i].len);
        }
    } while (n == 16);
    return 1;
}

/* Hands session `s` (known as `to`) what has arrived for it. */
static int carrier_push(tw_session *s, uint64_t to) {
    tw_datagram items[64];
    size_t n = 0;
    double now = now_ms();
    int kept = 0;
    for (int i = 0; i < air_count; i++) {
        if (air[i].to == to && air[i].at_ms <= now && n < 64) {
            items[n].remote = air[i].from;
            items[n].data = air[i].data;
            items[n].len = air[i].len;
            items[n].age_us = (uint32_t)((now - air[i].at_ms) * 1000.0);
            n++;
        }
    }
    tw_result r = tw_session_push_datagrams(s, items, n, NULL);
    /* Only now may the delivered datagrams' memory go: remove them from the air. */
    for (int i = 0; i < air_count; i++) {
        int delivered = 0;
        for (size_t k = 0; k < n; k++) delivered |= items[k].data == air[i].data;
        if (!delivered) {
            if (kept != i) air[kept] = air[i];
            kept++;
        }
    }
    air_count = kept;
    return r == TW_RESULT_OK;
}

/* ---- the game: boxes on a wrapping grid --------------------------------------------- */

typedef struct game {
    int32_t x[PLAYERS], y[PLAYERS], score[PLAYERS], present[PLAYERS];
} game;

typedef struct node {
    const char *name;
    uint64_t id; /* its remote id on the carrier */
    tw_session *s;
    int is_server, failed, joined, synchronized, desyncs;
    uint32_t pushed, joined_tick;
    game state, *slots;
    uint32_t sum_tick[HISTORY];
    uint64_t sum[HISTORY];
} node;

static void fail(node *n, const char *what, tw_result r) {
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    fprintf(stderr, "carrier: %s: %s failed: %s: %s\n", n->name, what, tw_result_str(r), msg);
    n->failed = 1;
}

static uint64_t checksum(const game *g) { /* FNV-1a */
    const unsigned char *b = (const unsigned char *)g;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < sizeof *g; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void remember(node *n, uint32_t tick, uint64_t sum) {
    n->sum_tick[tick % HISTORY] = tick;
    n->sum[tick % HISTORY] = sum;
}

static int32_t wrap(int32_t v, int32_t m) { return ((v % m) + m) % m; }

static void step(game *g, const uint8_t *inputs, const uint8_t *status) {
    for (int p = 0; p < PLAYERS; p++) {
        if (status[p] == TW_INPUT_STATUS_DISCONNECTED) {
            g->present[p] = 0;
            continue;
        }
        g->present[p] = 1;
        g->x[p] = wrap(g->x[p] + inputs[2 * p] % 3 - 1, 32);
        g->y[p] = wrap(g->y[p] + inputs[2 * p + 1] % 3 - 1, 24);
    }
    if (g->present[0] && g->present[1] && g->x[0] == g->x[1] && g->y[0] == g->y[1]) {
        g->score[0]++;
        g->score[1]++;
    }
}

static void input_at(uint64_t who, uint32_t k, uint8_t out[2]) { /* a new direction every 8 ticks */
    uint32_t x = (k / 8 + 1) * 2654435761u ^ (uint32_t)(who + 1) * 40503u;
    x ^= x >> 15;
    out[0] = (uint8_t)(x % 3);
    out[1] = (uint8_t)((x >> 8) % 3);
}

static void run_requests(node *n) {
    tw_request r;
    tw_result res;
    size_t len;
    while ((res = tw_session_poll_request(n->s, &r)) == TW_RESULT_OK) {
        switch (r.kind) {
        case TW_REQUEST_KIND_SAVE: {
            uint64_t sum = checksum(&n->state);
            n->slots[r.slot] = n->state;
            if (!n->is_server) remember(n, r.tick, sum);
            if (TW_FAILED(res = tw_session_confirm_save(n->s, r.tick, sum))) fail(n, "confirm_save", res);
            break;
        }
        case TW_REQUEST_KIND_LOAD:
            n->state = n->slots[r.slot];
            break;
        case TW_REQUEST_KIND_ADVANCE: {
            uint8_t inputs[2 * PLAYERS], status[PLAYERS];
            if (TW_FAILED(res = tw_session_request_inputs(n->s, inputs, sizeof inputs, &len)) ||
                TW_FAILED(res = tw_session_request_input_status(n->s, status, sizeof status, &len))) {
                fail(n, "request inputs", res);
                break;
            }
            step(&n->state, inputs, status);
            if (n->is_server) remember(n, r.tick + 1, checksum(&n->state));
            break;
        }
        case TW_REQUEST_KIND_DUMP_STATE:
            if (TW_FAILED(res = tw_session_provide_state(n->s, r.tick, &n->slots[r.slot], sizeof(game))))
                fail(n, "provide_state", res);
            break;
        case TW_REQUEST_KIND_RESTORE:
            if (TW_FAILED(res = tw_session_request_state(n->s, &n->state, sizeof(game), &len)))
                fail(n, "request_state", res);
            break;
        }
    }
    if (TW_FAILED(res)) fail(n, "poll_request", res);
}

/* One engine frame: push what arrived, run the ticks due, poll events, pull what leaves. */
static void frame(node *n, uint32_t player) {
    uint32_t due = 0;
    tw_result r;
    if (!carrier_push(n->s, n->id)) fail(n, "push_datagrams", TW_RESULT_INVALID_STATE);
    if (TW_FAILED(r = tw_session_ticks_due(n->s, &due))) fail(n, "ticks_due", r);
    while (due-- && !n->failed) {
        if (!n->is_server) {
            uint8_t in[2];
            input_at(n->id, n->pushed++, in);
            if (TW_FAILED(r = tw_session_push_input(n->s, player, in, sizeof in))) fail(n, "push_input", r);
        }
        if (TW_FAILED(r = tw_session_advance(n->s))) fail(n, "advance", r);
        run_requests(n);
    }
    tw_session_event e;
    while (tw_session_poll_event(n->s, &e) == TW_RESULT_OK) {
        if (e.kind == TW_SESSION_EVENT_KIND_JOINED) {
            n->joined = 1;
            n->joined_tick = e.data.relay.tick;
        }
        if (e.kind == TW_SESSION_EVENT_KIND_SYNCHRONIZED) n->synchronized = 1;
        if (e.kind == TW_SESSION_EVENT_KIND_DESYNC) n->desyncs++;
        if (e.kind == TW_SESSION_EVENT_KIND_FATAL || e.kind == TW_SESSION_EVENT_KIND_SERVER_LOST) n->failed = 1;
    }
    if (!carrier_pull(n->s, n->id)) fail(n, "pull_datagrams", TW_RESULT_INVALID_STATE);
}

static int create(node *n, const char *name, uint32_t mode, uint64_t id, const tw_security_config *security) {
    tw_session_config cfg;
    tw_session_config_init_default(&cfg);
    cfg.mode = mode;
    cfg.num_players = PLAYERS;
    cfg.input_size = 2;
    cfg.host.security = security;
    cfg.host.max_datagram_size = MAX_DATAGRAM;
    snprintf(cfg.bind_address, sizeof cfg.bind_address, "remote:%llu", (unsigned long long)id);
    memset(n, 0, sizeof *n);
    n->name = name;
    n->id = id;
    n->is_server = mode == TW_SESSION_MODE_RELAY_SERVER;
    tw_result r = tw_session_create(&cfg, &n->s);
    uint32_t slots = 0;
    if (TW_FAILED(r) || TW_FAILED(r = tw_session_state_slots(n->s, &slots))) {
        fail(n, "create", r);
        return 0;
    }
    n->slots = (game *)calloc(slots, sizeof(game));
    return n->slots != NULL;
}

static void destroy(node *n) {
    tw_session_destroy(n->s);
    free(n->slots);
}

static int ticks_compared(const node *a, const node *b, uint32_t from, uint32_t to, uint32_t *differ) {
    int compared = 0;
    if (to > HISTORY && from < to - HISTORY) from = to - HISTORY;
    for (uint32_t t = from; t < to; t++) {
        uint32_t i = t % HISTORY;
        if (a->sum_tick[i] != t || b->sum_tick[i] != t) continue;
        compared++;
        if (a->sum[i] != b->sum[i]) (*differ)++;
    }
    return compared;
}

static uint32_t confirmed(const node *n) {
    tw_session_stats st;
    memset(&st, 0, sizeof st);
    tw_session_get_stats(n->s, &st);
    return st.confirmed_tick;
}

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static int p2p_match(double seconds) {
    static node peer[2];
    char addr[32];
    int ok = create(&peer[0], "peer 1", TW_SESSION_MODE_P2P, 1, NULL) &&
             create(&peer[1], "peer 2", TW_SESSION_MODE_P2P, 2, NULL);
    for (int i = 0; ok && i < 2; i++) { /* player i plays on peer i; the other is remote:<its id> */
        snprintf(addr, sizeof addr, "remote:%llu", (unsigned long long)peer[1 - i].id);
        ok = tw_session_add_local_player(peer[i].s, (uint32_t)i) == TW_RESULT_OK &&
             tw_session_add_remote_player(peer[i].s, (uint32_t)(1 - i), addr) == TW_RESULT_OK &&
             tw_session_start(peer[i].s) == TW_RESULT_OK;
    }
    double start = now_ms();
    while (ok && now_ms() - start < seconds * 1e3) {
        for (int i = 0; i < 2; i++) frame(&peer[i], (uint32_t)i);
        ok = !peer[0].failed && !peer[1].failed;
        sleep_ms(2);
    }
    uint32_t c = confirmed(&peer[0]) < confirmed(&peer[1]) ? confirmed(&peer[0]) : confirmed(&peer[1]);
    /* A tick counts as confirmed once its inputs are, which can happen in a frame that
     * advances nothing (ticks_due takes in what arrived); a tick simulated with a wrong
     * prediction is simulated again at the next advance. So each peer advances once
     * more before the checksums below c are compared. */
    uint32_t pushed[2] = {peer[0].pushed, peer[1].pushed};
    for (int f = 0; ok && f < 500 && (peer[0].pushed == pushed[0] || peer[1].pushed == pushed[1]); f++) {
        for (int i = 0; i < 2; i++) frame(&peer[i], (uint32_t)i);
        ok = !peer[0].failed && !peer[1].failed;
        sleep_ms(2);
    }
    uint32_t differ = 0;
    int compared = ticks_compared(&peer[0], &peer[1], 0, c, &differ);
    printf("p2p: confirmed tick %u, %d ticks compared, %u differ, desyncs %d/%d\n", (unsigned)c, compared,
           (unsigned)differ, peer[0].desyncs, peer[1].desyncs);
    ok = ok && compared >= 120 && differ == 0 && peer[0].desyncs == 0 && peer[1].desyncs == 0;
    destroy(&peer[0]);
    destroy(&peer[1]);
    return ok;
}

static int relay_match(double seconds) {
    static node server, client[2];
    tw_security_config security;
    uint8_t key[TW_KEY_SIZE];
    tw_session_config defaults;
    tw_session_config_init_default(&defaults);
    int ok = tw_generate_key(key, sizeof key) == TW_RESULT_OK;
    /* The server admits holders of tokens that name it as remote:10. */
    tw_security_config_init_default(&security);
    security.has_connect_key = 1;
    memcpy(security.connect_key, key, TW_KEY_SIZE);
    snprintf(security.public_address, sizeof security.public_address, "remote:10");
    ok = ok && create(&server, "server", TW_SESSION_MODE_RELAY_SERVER, 10, &security) &&
         tw_session_start(server.s) == TW_RESULT_OK;
    for (int i = 0; ok && i < 2; i++) {
        tw_security_config_init_default(&security);
        security.connect_token_size = TW_CONNECT_TOKEN_SIZE;
        ok = tw_connect_token_generate(key, sizeof key, defaults.host.protocol_id, 500 + (uint64_t)i, "remote:10",
                                       300, 0, NULL, 0, security.connect_token,
                                       sizeof security.connect_token) == TW_RESULT_OK &&
             create(&client[i], i ? "client 2" : "client 1", TW_SESSION_MODE_RELAY_CLIENT, 11 + (uint64_t)i,
                    &security) &&
             tw_session_set_server(client[i].s, "remote:10") == TW_RESULT_OK &&
             tw_session_start(client[i].s) == TW_RESULT_OK;
    }
    memset(&security, 0, sizeof security);
    memset(key, 0, sizeof key);
    double start = now_ms(), synced_at = 0;
    while (ok && now_ms() - start < MAX_WALL_SECONDS * 1e3) {
        frame(&server, 0);
        for (int i = 0; i < 2; i++) frame(&client[i], TW_LOCAL_PLAYER);
        ok = !server.failed && !client[0].failed && !client[1].failed;
        if (synced_at == 0 && client[0].synchronized && client[1].synchronized) synced_at = now_ms();
        if (synced_at > 0 && now_ms() - synced_at >= seconds * 1e3) break;
        sleep_ms(2);
    }
    ok = ok && synced_at > 0;
    for (int i = 0; i < 2; i++) {
        tw_session_stats st;
        memset(&st, 0, sizeof st);
        tw_session_get_stats(client[i].s, &st);
        uint32_t differ = 0;
        int compared = ticks_compared(&client[i], &server, client[i].joined_tick, st.confirmed_tick, &differ);
        printf("relay: %s joined at tick %u, authoritative %u, %d ticks compared, %u differ, predicted ahead "
               "%u, resimulated %llu, desyncs %d\n",
               client[i].name, (unsigned)client[i].joined_tick, (unsigned)st.confirmed_tick, compared,
               (unsigned)differ, (unsigned)st.prediction_distance, (unsigned long long)st.resimulated_ticks,
               client[i].desyncs);
        ok = ok && client[i].joined && compared >= 60 && differ == 0 && client[i].desyncs == 0 &&
             st.resimulated_ticks > 0; /* it predicted, and corrected what it got wrong */
    }
    destroy(&client[0]);
    destroy(&client[1]);
    destroy(&server);
    return ok;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    int p2p = p2p_match(seconds);
    air_count = 0;
    int relay = relay_match(seconds);
    printf("carrier: %llu datagrams, %llu lost, largest %llu bytes (limit %d)\n", (unsigned long long)sent,
           (unsigned long long)lost, (unsigned long long)largest, MAX_DATAGRAM);
    int ok = p2p && relay && largest <= MAX_DATAGRAM;
    printf("%s\n", ok ? "carrier: both matches in sync over the engine's carrier" : "carrier: FAILED");
    return ok ? 0 : 1;
}
