/*
 * tickwire P2P through a rendezvous: peers behind NATs meet without knowing each
 * other's address. Each peer registers with a rendezvous service using a ticket from
 * the game's backend; the rendezvous introduces the match's peers to each other,
 * relays their (sealed) packets at once, and the peers check the direct paths between
 * them and move there when one answers. The session reports every change of path
 * (TW_SESSION_EVENT_KIND_PATH_CHANGED) and tw_network_stats.path says the path now.
 *
 * Here everything runs in one process on 127.0.0.1: the rendezvous service
 * (tw_rendezvous, which a studio would run on a public address, or as the
 * `tickwire rendezvous` program), the backend minting the tickets, and two peers, each
 * with its own tw_session playing a tiny deterministic game (save, load, checksums).
 * Two matches, one after the other:
 *   1. an open match: the path starts RELAYED and goes DIRECT (loopback has no NAT);
 *   2. a private match: peer B sets TW_RENDEZVOUS_PRIVATE, so nobody learns its
 *      address: the pair stays RELAYED, and the rendezvous counts the datagrams it
 *      relayed.
 * In each, both peers must agree on the checksum of every tick both confirmed.
 *
 * A ticket is a connect token (tw_connect_token_generate) minted with the
 * rendezvous's key, naming the rendezvous's address, whose user data starts with the
 * match claim (tw_match_claim_write: the match, the player's slot, the number of
 * players). The players' secret (tw_security_config.match_secret) is the match's own:
 * the rendezvous never has it and cannot read what it relays.
 *
 *   cargo build
 *   ln -sf libtickwire.so target/debug/libtickwire.so.1   # its SONAME (the ABI version)
 *   cc -std=c11 -Wall -Wextra -pedantic -Iinclude examples-c/rendezvous.c \
 *      -Ltarget/debug -ltickwire -o build/rendezvous
 *   LD_LIBRARY_PATH=target/debug build/rendezvous [ticks]
 *
 * Exit status 0 when both matches took the expected path and their peers agree, 1
 * otherwise.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tickwire.h"

#define PLAYERS 2
#define HISTORY 1024            /* ticks of checksums kept per peer, for the final comparison */
#define PROTOCOL_ID 0x74770052u /* the game's: the sessions' hosts, the tickets and the rendezvous share it */
#define MAX_WALL_SECONDS 30.0   /* per match, whatever happens */

/* The whole game state: engines snapshot it into slots the session names. */
typedef struct game {
    int32_t x[PLAYERS], y[PLAYERS], score[PLAYERS];
} game;

typedef struct peer {
    const char *name;
    tw_session *s;
    uint32_t me; /* the local player */
    game state;
    game *slots; /* tw_session_state_slots() snapshots */
    uint32_t saved_tick[HISTORY];
    uint64_t saved_sum[HISTORY];
    uint32_t settled; /* the confirmed tick as of the last advance */
    int synchronized;
    uint32_t path;           /* the other player's path, from the latest PATH_CHANGED (a tw_path) */
    char path_address[64];   /* and where it goes */
    int path_changes;
    int failed;
} peer;

static void fail(peer *p, const char *what, tw_result r) {
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    fprintf(stderr, "rendezvous: %s: %s failed: %s: %s\n", p->name, what, tw_result_str(r), msg);
    p->failed = 1;
}

static int ok_or_fail(peer *p, const char *what, tw_result r) {
    if (r != TW_RESULT_OK) fail(p, what, r);
    return r == TW_RESULT_OK;
}

/* A call outside any peer (the rendezvous, the backend): reports and returns 0 on failure. */
static int ok_or_say(const char *what, tw_result r) {
    if (r == TW_RESULT_OK) return 1;
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    fprintf(stderr, "rendezvous: %s failed: %s: %s\n", what, tw_result_str(r), msg);
    return 0;
}

static const char *path_name(uint32_t path) {
    switch (path) {
    case TW_PATH_NONE: return "NONE";
    case TW_PATH_DIRECT: return "DIRECT";
    case TW_PATH_RELAYED: return "RELAYED";
    default: return "?";
    }
}

static const char *refusal_name(uint32_t reason) {
    switch (reason) {
    case TW_RENDEZVOUS_REFUSAL_BAD_TICKET: return "bad ticket";
    case TW_RENDEZVOUS_REFUSAL_EXPIRED: return "expired";
    case TW_RENDEZVOUS_REFUSAL_NO_MATCH: return "no match claim";
    case TW_RENDEZVOUS_REFUSAL_SLOT_TAKEN: return "slot taken";
    case TW_RENDEZVOUS_REFUSAL_CLOSED: return "closed";
    case TW_RENDEZVOUS_REFUSAL_MISMATCH: return "player count mismatch";
    default: return "?";
    }
}

static uint64_t checksum(const game *g) { /* FNV-1a over the state's bytes */
    const unsigned char *b = (const unsigned char *)g;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < sizeof *g; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* One tick: inputs are 1 byte per player, bits 0-3 = left, right, up, down. */
static void step(game *g, const uint8_t *inputs) {
    for (int p = 0; p < PLAYERS; p++) {
        uint8_t in = inputs[p];
        g->x[p] += ((in >> 1) & 1) - (in & 1);
        g->y[p] += ((in >> 3) & 1) - ((in >> 2) & 1);
        if (g->x[p] == g->x[1 - p] && g->y[p] == g->y[1 - p]) g->score[p] += 1;
    }
}

/* What the local player "presses" at a tick: changes every 8 ticks. */
static uint8_t input_at(uint32_t player, uint32_t tick) {
    uint32_t x = (tick / 8) * 2654435761u ^ (player + 1) * 40503u;
    return (uint8_t)((x >> 13) & 0x0f);
}

static void run_requests(peer *p) {
    tw_request r;
    tw_result res;
    while ((res = tw_session_poll_request(p->s, &r)) == TW_RESULT_OK) {
        size_t n = 0;
        switch (r.kind) {
        case TW_REQUEST_KIND_SAVE: {
            uint64_t sum = checksum(&p->state);
            p->slots[r.slot] = p->state;
            p->saved_tick[r.tick % HISTORY] = r.tick; /* the last save of a tick wins */
            p->saved_sum[r.tick % HISTORY] = sum;
            if (TW_FAILED(res = tw_session_confirm_save(p->s, r.tick, sum))) fail(p, "confirm_save", res);
            break;
        }
        case TW_REQUEST_KIND_LOAD:
            p->state = p->slots[r.slot];
            break;
        case TW_REQUEST_KIND_ADVANCE: {
            uint8_t inputs[PLAYERS];
            if (TW_FAILED(res = tw_session_request_inputs(p->s, inputs, sizeof inputs, &n))) fail(p, "request_inputs", res);
            else step(&p->state, inputs);
            break;
        }
        case TW_REQUEST_KIND_DUMP_STATE:
            res = tw_session_provide_state(p->s, r.tick, &p->slots[r.slot], sizeof(game));
            if (TW_FAILED(res)) fail(p, "provide_state", res);
            break;
        case TW_REQUEST_KIND_RESTORE:
            if (TW_FAILED(res = tw_session_request_state(p->s, &p->state, sizeof(game), &n))) fail(p, "request_state", res);
            break;
        }
    }
    if (TW_FAILED(res)) fail(p, "poll_request", res);
}

/* One engine frame: the loop of the header's SESSIONS section, plus the path events. */
static void frame(peer *p, const char *match) {
    uint32_t due = 0;
    tw_result r = tw_session_ticks_due(p->s, &due);
    if (TW_FAILED(r)) {
        fail(p, "ticks_due", r);
        return;
    }
    while (due--) {
        tw_session_stats st;
        if (TW_FAILED(r = tw_session_get_stats(p->s, &st))) {
            fail(p, "get_stats", r);
            return;
        }
        uint8_t in = input_at(p->me, st.current_tick + st.input_delay);
        if (TW_FAILED(r = tw_session_push_input(p->s, p->me, &in, 1))) fail(p, "push_input", r);
        r = tw_session_advance(p->s); /* OK, or a status such as TW_RESULT_NOT_SYNCHRONIZED */
        if (TW_FAILED(r)) fail(p, "advance", r);
        run_requests(p);
        if (TW_FAILED(r = tw_session_get_stats(p->s, &st))) {
            fail(p, "get_stats", r);
            return;
        }
        p->settled = st.confirmed_tick;
    }
    tw_session_event e;
    while (tw_session_poll_event(p->s, &e) == TW_RESULT_OK) {
        switch (e.kind) {
        case TW_SESSION_EVENT_KIND_PATH_CHANGED:
            /* RELAYED as soon as the rendezvous introduces the peer; DIRECT once a check
             * of a direct path answers; back to RELAYED if that path stops answering. */
            printf("%s: %s: player %u's path: %s via %s\n", match, p->name, (unsigned)e.data.path.player,
                   path_name(e.data.path.path), e.data.path.address);
            if (e.data.path.player != 1 - p->me) p->failed = 1;
            p->path = e.data.path.path;
            memcpy(p->path_address, e.data.path.address, sizeof p->path_address);
            p->path_changes++;
            break;
        case TW_SESSION_EVENT_KIND_RENDEZVOUS_REFUSED:
            /* Advisory (not authenticated): the session keeps trying. Here no ticket is bad. */
            printf("%s: %s: the rendezvous refused the ticket: %s\n", match, p->name, refusal_name(e.data.refusal.reason));
            p->failed = 1;
            break;
        case TW_SESSION_EVENT_KIND_SYNCHRONIZED:
            printf("%s: %s: synchronized\n", match, p->name);
            p->synchronized = 1;
            break;
        case TW_SESSION_EVENT_KIND_DESYNC:
            printf("%s: %s: DESYNC at tick %u\n", match, p->name, (unsigned)e.data.desync.tick);
            p->failed = 1;
            break;
        case TW_SESSION_EVENT_KIND_PEER_DISCONNECTED:
            printf("%s: %s: peer disconnected\n", match, p->name);
            p->failed = 1;
            break;
        case TW_SESSION_EVENT_KIND_FATAL:
            fprintf(stderr, "rendezvous: %s: %s: the network thread stopped: %s\n", match, p->name, e.data.fatal.message);
            p->failed = 1;
            break;
        default:
            break;
        }
    }
}

/* The backend's part: a ticket for player `slot` of match `match_id`, minted with the
 * rendezvous's key and naming its address. The user data is the match claim, then the
 * game's own bytes (a loadout id here), up to TW_CONNECT_TOKEN_USER_DATA_SIZE in all. */
static int mint_ticket(const uint8_t key[TW_KEY_SIZE], const char *rendezvous_address, uint64_t match_id,
                       uint32_t slot, uint8_t ticket[TW_CONNECT_TOKEN_SIZE]) {
    uint8_t user_data[TW_MATCH_CLAIM_SIZE + 4];
    if (!ok_or_say("tw_match_claim_write", tw_match_claim_write(match_id, slot, PLAYERS, user_data, sizeof user_data))) {
        return 0;
    }
    memcpy(user_data + TW_MATCH_CLAIM_SIZE, "LD01", 4);
    uint64_t client_id = 5000 + slot; /* the player's id in the backend */
    return ok_or_say("tw_connect_token_generate",
                     tw_connect_token_generate(key, TW_KEY_SIZE, PROTOCOL_ID, client_id, rendezvous_address, 600, 0,
                                               user_data, sizeof user_data, ticket, TW_CONNECT_TOKEN_SIZE));
}

/* A peer of a match met through the rendezvous: the players' secret, the ticket, and
 * the remote player added with no address. */
static int setup(peer *p, const char *name, uint32_t me, const uint8_t match_secret[TW_KEY_SIZE],
                 const char *rendezvous_address, const uint8_t ticket[TW_CONNECT_TOKEN_SIZE], uint32_t flags) {
    tw_session_config cfg;
    tw_security_config security; /* read only while the session is created */
    tw_session_config_init_default(&cfg);
    cfg.num_players = PLAYERS;
    cfg.input_size = 1;
    cfg.host.protocol_id = PROTOCOL_ID;
    cfg.host.sim_seed = 42 + me;
    tw_security_config_init_default(&security);
    security.has_match_secret = 1; /* a rendezvous needs the players' secret */
    memcpy(security.match_secret, match_secret, TW_KEY_SIZE);
    cfg.host.security = &security;
    strcpy(cfg.bind_address, "127.0.0.1:0");
    memset(p, 0, sizeof *p);
    p->name = name;
    p->me = me;
    tw_result r = tw_session_create(&cfg, &p->s);
    memset(&security, 0, sizeof security);
    if (TW_FAILED(r)) {
        fail(p, "create", r);
        return 0;
    }
    uint32_t slots = 0;
    if (!ok_or_fail(p, "state_slots", tw_session_state_slots(p->s, &slots))) return 0;
    p->slots = (game *)calloc(slots, sizeof(game));
    if (p->slots == NULL) return 0;
    /* 10 ms each way, so that inputs arrive late and rollbacks happen. The link
     * simulator delays every datagram of the session, the rendezvous's too. */
    tw_link_sim_config sim;
    tw_link_sim_config_init_default(&sim);
    sim.latency_us = 10000;
    sim.jitter_kind = TW_JITTER_KIND_UNIFORM;
    sim.jitter_us = 3000.0;
    /* Before start: the rendezvous, then the players, the same order on every peer; the
     * remote player has no address (NULL): its peer is met through the rendezvous. */
    return ok_or_fail(p, "set_link_sim", tw_session_set_link_sim(p->s, TW_DIRECTION_OUTBOUND, &sim)) &&
           ok_or_fail(p, "set_rendezvous",
                      tw_session_set_rendezvous(p->s, rendezvous_address, ticket, TW_CONNECT_TOKEN_SIZE, flags)) &&
           (me == 0 ? ok_or_fail(p, "add_local_player", tw_session_add_local_player(p->s, 0)) &&
                          ok_or_fail(p, "add_remote_player", tw_session_add_remote_player(p->s, 1, NULL))
                    : ok_or_fail(p, "add_remote_player", tw_session_add_remote_player(p->s, 0, NULL)) &&
                          ok_or_fail(p, "add_local_player", tw_session_add_local_player(p->s, 1)));
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Plays one match of two peers met through the rendezvous at rendezvous_address until
 * both confirmed `ticks` ticks and both see the other on path `want`; peer B sets
 * b_flags. Returns 1 when it got there in sync, with tw_network_stats saying `want`. */
static int play_match(const char *match, const uint8_t key[TW_KEY_SIZE], const char *rendezvous_address,
                      uint64_t match_id, uint32_t b_flags, uint32_t want, uint32_t ticks) {
    peer a, b;
    uint8_t match_secret[TW_KEY_SIZE]; /* from the matchmaker, in a real game */
    uint8_t ticket_a[TW_CONNECT_TOKEN_SIZE], ticket_b[TW_CONNECT_TOKEN_SIZE];
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    int ok = ok_or_say("tw_generate_key", tw_generate_key(match_secret, sizeof match_secret)) &&
             mint_ticket(key, rendezvous_address, match_id, 0, ticket_a) &&
             mint_ticket(key, rendezvous_address, match_id, 1, ticket_b);
    ok = ok && setup(&a, "peer A", 0, match_secret, rendezvous_address, ticket_a, 0);
    ok = ok && setup(&b, "peer B", 1, match_secret, rendezvous_address, ticket_b, b_flags);
    memset(match_secret, 0, sizeof match_secret);
    printf("%s: match %llu, peer B %s\n", match, (unsigned long long)match_id,
           b_flags & TW_RENDEZVOUS_PRIVATE ? "private (TW_RENDEZVOUS_PRIVATE)" : "open");
    ok = ok && ok_or_fail(&a, "start", tw_session_start(a.s)) && ok_or_fail(&b, "start", tw_session_start(b.s));
    double start = now_s();
    int there = 0;
    while (ok && !a.failed && !b.failed && now_s() - start < MAX_WALL_SECONDS) {
        frame(&a, match); /* two engines, one thread: each frame runs both */
        frame(&b, match);
        there = a.settled >= ticks && b.settled >= ticks && a.path == want && b.path == want;
        if (there) break;
        sleep_ms(2);
    }
    double took = now_s() - start;

    /* Every tick confirmed on both peers, and saved since, that both still remember. */
    uint32_t confirmed = a.settled < b.settled ? a.settled : b.settled;
    uint32_t compared = 0, differ = 0;
    for (uint32_t k = confirmed > HISTORY ? confirmed - HISTORY : 0; k < confirmed; k++) {
        uint32_t i = k % HISTORY;
        if (a.saved_tick[i] != k || b.saved_tick[i] != k) continue;
        compared++;
        if (a.saved_sum[i] != b.saved_sum[i]) differ++;
    }
    /* The net overlay says the path now, as the last event did. */
    int stats_ok = ok;
    peer *both[2] = {&a, &b};
    for (int i = 0; i < 2 && ok; i++) {
        peer *p = both[i];
        tw_network_stats ns;
        memset(&ns, 0, sizeof ns);
        tw_result r = tw_session_network_stats(p->s, 1 - p->me, &ns);
        if (r != TW_RESULT_OK) {
            fail(p, "network_stats", r);
            stats_ok = 0;
            continue;
        }
        printf("%s: %s's overlay of player %u: path %s via %s, rtt %.1f ms\n", match, p->name, (unsigned)(1 - p->me),
               path_name(ns.path), ns.path_address, ns.rtt_us / 1000.0);
        stats_ok = stats_ok && ns.path == want && ns.path_address[0] != '\0' &&
                   strncmp(ns.path_address, p->path_address, sizeof ns.path_address) == 0;
    }
    printf("%s: %.1f s; confirmed by both: %u ticks; checksums compared: %u, different: %u; path changes A %d, B %d\n",
           match, took, (unsigned)confirmed, (unsigned)compared, (unsigned)differ, a.path_changes, b.path_changes);
    int success = ok && there && stats_ok && !a.failed && !b.failed && compared > 10 && differ == 0;
    tw_session_destroy(a.s);
    tw_session_destroy(b.s);
    free(a.slots);
    free(b.slots);
    printf("%s: %s\n", match, success ? "in sync on the expected path" : "FAILED");
    return success;
}

int main(int argc, char **argv) {
    uint32_t ticks = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 180;
    if (tw_rendezvous_stats_size() != sizeof(tw_rendezvous_stats)) {
        fprintf(stderr, "rendezvous: the library's tw_rendezvous_stats is not this header's\n");
        return 1;
    }
    /* The rendezvous's key: the backend mints tickets with it, the service checks them. */
    uint8_t key[TW_KEY_SIZE];
    tw_rendezvous *rdv = NULL;
    char address[64];
    size_t n = 0;
    if (!ok_or_say("tw_generate_key", tw_generate_key(key, sizeof key)) ||
        !ok_or_say("tw_rendezvous_create", tw_rendezvous_create("127.0.0.1:0", key, sizeof key, PROTOCOL_ID, 0, 0, &rdv)) ||
        !ok_or_say("tw_rendezvous_local_address", tw_rendezvous_local_address(rdv, address, sizeof address, &n))) {
        tw_rendezvous_destroy(rdv);
        return 1;
    }
    printf("rendezvous: the service is on %s\n", address);

    int open = play_match("open match", key, address, 1, 0, TW_PATH_DIRECT, ticks);
    int private_ = play_match("private match", key, address, 2, TW_RENDEZVOUS_PRIVATE, TW_PATH_RELAYED, ticks);
    memset(key, 0, sizeof key);

    /* The service's figures (at most 100 ms old): the private match's datagrams went
     * through its relay. */
    tw_rendezvous_stats st;
    memset(&st, 0, sizeof st);
    int stats_ok = 0;
    double start = now_s();
    while (now_s() - start < 5.0) {
        if (!ok_or_say("tw_rendezvous_get_stats", tw_rendezvous_get_stats(rdv, &st))) break;
        stats_ok = st.matches_made == 2 && st.relayed_datagrams > 0;
        if (stats_ok) break;
        sleep_ms(20);
    }
    printf("rendezvous: %llu matches made, %llu held, %llu members, %llu tickets taken, %llu refused; relayed %llu "
           "datagrams (%llu bytes), %llu over budget, %llu from strangers, %llu dropped\n",
           (unsigned long long)st.matches_made, (unsigned long long)st.matches, (unsigned long long)st.members,
           (unsigned long long)st.hellos, (unsigned long long)st.refused, (unsigned long long)st.relayed_datagrams,
           (unsigned long long)st.relayed_bytes, (unsigned long long)st.over_budget, (unsigned long long)st.strangers,
           (unsigned long long)st.dropped);
    stats_ok = stats_ok && st.refused == 0 && st.over_budget == 0;
    tw_rendezvous_destroy(rdv);
    int success = open && private_ && stats_ok;
    printf("%s\n", success ? "rendezvous: both matches ended in sync on the expected paths" : "rendezvous: FAILED");
    return success ? 0 : 1;
}
