/*
 * tickwire P2P rollback example: two peers in one process, each with its own
 * tw_session, talking over 127.0.0.1 through the link simulator (latency, jitter,
 * loss). A tiny deterministic game runs for a few seconds; at the end both peers must
 * have the same checksum at every tick they have both confirmed. Once synchronized,
 * each peer greets the other over the session's reliable message side channel
 * (tw_session_send_message; MESSAGE events, tw_session_read_message).
 *
 * The connection is encrypted, and only a peer holding the match's secret can complete a
 * handshake: a matchmaker would generate the secret (tw_generate_key) and give it to
 * both players; here it is generated once and set on both peers.
 *
 *   cargo build
 *   ln -sf libtickwire.so target/debug/libtickwire.so.1   # its SONAME (the ABI version)
 *   cc -std=c11 -Wall -Wextra -pedantic -Iinclude examples-c/p2p.c \
 *      -Ltarget/debug -ltickwire -o build/p2p
 *   LD_LIBRARY_PATH=target/debug build/p2p [seconds]
 *
 * Exit status 0 when the peers agree and each heard the other's greeting, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tickwire.h"

#define PLAYERS 2
#define HISTORY 1024 /* ticks of checksums kept per peer, for the final comparison */

/* The whole game state: engines snapshot it into slots the session names. */
typedef struct game {
    int32_t x[PLAYERS], y[PLAYERS], score[PLAYERS];
} game;

typedef struct peer {
    const char *name;
    tw_session *s;
    uint32_t me;     /* the local player */
    game state;
    game *slots;     /* tw_session_state_slots() snapshots */
    uint32_t saved_tick[HISTORY];
    uint64_t saved_sum[HISTORY];
    /* The confirmed tick as of the last advance. Inputs that arrive later move
     * confirmed_tick at once, but the rollback onto them (and the SAVEs of the corrected
     * ticks) only comes with the next advance: until then only this much is settled. */
    uint32_t settled;
    int synchronized;
    /* Connection progress: SYNCHRONIZED_WITH_PEER events seen before SYNCHRONIZED. */
    int peers_synchronized;
    int chat_sent;    /* its greeting went out (the side channel refuses only for a while) */
    int chat_heard;   /* the other peer's greeting arrived, intact */
    int failed;
} peer;

static void fail(peer *p, const char *what, tw_result r) {
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    fprintf(stderr, "p2p: %s: %s failed: %s: %s\n", p->name, what, tw_result_str(r), msg);
    p->failed = 1;
}

/* A setup call: true when it returned OK, else reports it (with the library's message). */
static int ok_or_fail(peer *p, const char *what, tw_result r) {
    if (r != TW_RESULT_OK) fail(p, what, r);
    return r == TW_RESULT_OK;
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
            else step(&p->state, inputs); /* TW_REQUEST_FLAG_RESIMULATING: a game would mute effects */
            break;
        }
        case TW_REQUEST_KIND_DUMP_STATE: /* a desync dump or a spectator's snapshot */
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

/* One engine frame: the loop of the header's SESSIONS section. */
static void frame(peer *p) {
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
        r = tw_session_advance(p->s); /* OK, or a status such as TW_RESULT_WINDOW_FULL */
        if (TW_FAILED(r)) fail(p, "advance", r);
        run_requests(p);
        if (TW_FAILED(r = tw_session_get_stats(p->s, &st))) {
            fail(p, "get_stats", r);
            return;
        }
        p->settled = st.confirmed_tick;
    }
    /* Chat rides the session's own connection on a reliable channel of its own; it
     * never delays inputs. QUEUE_FULL would only mean "try again next frame". */
    if (p->synchronized && !p->chat_sent) {
        char line[64];
        int len = snprintf(line, sizeof line, "gl hf from player %u", (unsigned)p->me);
        r = tw_session_send_message(p->s, TW_SESSION_MESSAGE_TARGET_ALL, line, (size_t)len);
        if (r == TW_RESULT_OK) p->chat_sent = 1;
        else if (r != TW_RESULT_QUEUE_FULL) fail(p, "send_message", r);
    }
    tw_session_event e;
    while (tw_session_poll_event(p->s, &e) == TW_RESULT_OK) {
        if (e.kind == TW_SESSION_EVENT_KIND_SYNCHRONIZING_WITH_PEER) {
            printf("%s: synchronizing with player %u (%s)\n", p->name, (unsigned)e.data.progress.player,
                   e.data.progress.step == 0 ? "connecting" : "connected");
        }
        if (e.kind == TW_SESSION_EVENT_KIND_SYNCHRONIZED_WITH_PEER) {
            printf("%s: synchronized with player %u (%u of %u peers)\n", p->name, (unsigned)e.data.progress.player,
                   (unsigned)e.data.progress.synchronized, (unsigned)e.data.progress.total);
            if (!p->synchronized && e.data.progress.player == 1 - p->me && e.data.progress.total == 1) {
                p->peers_synchronized++;
            }
        }
        if (e.kind == TW_SESSION_EVENT_KIND_SYNCHRONIZED) {
            printf("%s: synchronized\n", p->name);
            p->synchronized = 1;
        }
        if (e.kind == TW_SESSION_EVENT_KIND_MESSAGE) {
            /* Read it now: the next poll releases it. TW_SESSION_MESSAGE_MAX_SIZE bytes
             * always fit; this game's lines are short, and a longer one would say
             * TW_RESULT_BUFFER_TOO_SMALL with the size it needs. */
            char text[128];
            size_t n = 0;
            r = tw_session_read_message(p->s, (uint8_t *)text, sizeof text - 1, &n);
            if (TW_FAILED(r)) {
                fail(p, "read_message", r);
                continue;
            }
            text[n] = '\0';
            printf("%s: chat from player %u: %s\n", p->name, (unsigned)e.data.message.player, text);
            char expected[64];
            snprintf(expected, sizeof expected, "gl hf from player %u", (unsigned)(1 - p->me));
            p->chat_heard = strcmp(text, expected) == 0 && e.data.message.player == 1 - p->me;
        }
        if (e.kind == TW_SESSION_EVENT_KIND_DESYNC) {
            printf("%s: DESYNC at tick %u\n", p->name, (unsigned)e.data.desync.tick);
            p->failed = 1;
        }
        if (e.kind == TW_SESSION_EVENT_KIND_FATAL) {
            /* The reason is in the event, not in the last error. */
            fprintf(stderr, "p2p: %s: the network thread stopped: %s\n", p->name, e.data.fatal.message);
            p->failed = 1;
        }
    }
}

static int setup(peer *p, const char *name, uint32_t me, const uint8_t match_secret[TW_KEY_SIZE]) {
    tw_session_config cfg;
    tw_security_config security; /* read only while the session is created */
    tw_session_config_init_default(&cfg); /* mode P2P, 60 Hz, 8 ticks of prediction */
    cfg.num_players = PLAYERS;
    cfg.input_size = 1;
    cfg.host.sim_seed = 42 + me; /* reproducible simulated loss and jitter */
    tw_security_config_init_default(&security); /* encrypted */
    security.has_match_secret = 1;
    memcpy(security.match_secret, match_secret, TW_KEY_SIZE);
    cfg.host.security = &security;
    strcpy(cfg.bind_address, "127.0.0.1:0");
    memset(p, 0, sizeof *p);
    p->name = name;
    p->me = me;
    tw_result r = tw_session_create(&cfg, &p->s);
    memset(&security, 0, sizeof security); /* the session has its own copy */
    if (TW_FAILED(r)) {
        fail(p, "create", r);
        return 0;
    }
    uint32_t slots = 0;
    if (!ok_or_fail(p, "state_slots", tw_session_state_slots(p->s, &slots))) return 0;
    p->slots = (game *)calloc(slots, sizeof(game));
    tw_link_sim_config sim;
    tw_link_sim_config_init_default(&sim);
    sim.latency_us = 25000;
    sim.jitter_kind = TW_JITTER_KIND_UNIFORM;
    sim.jitter_us = 8000.0;
    sim.loss_kind = TW_LOSS_KIND_BERNOULLI;
    sim.loss_probability = 0.02;
    if (TW_FAILED(r = tw_session_set_link_sim(p->s, TW_DIRECTION_OUTBOUND, &sim))) fail(p, "set_link_sim", r);
    return p->slots != NULL && !p->failed;
}

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    peer a, b;
    uint8_t match_secret[TW_KEY_SIZE]; /* from the matchmaker, in a real game */
    tw_result r = tw_generate_key(match_secret, sizeof match_secret);
    if (r != TW_RESULT_OK) {
        fprintf(stderr, "p2p: tw_generate_key: %s\n", tw_result_str(r));
        return 1;
    }
    int ok = setup(&a, "peer A", 0, match_secret) & setup(&b, "peer B", 1, match_secret);
    memset(match_secret, 0, sizeof match_secret);
    printf("p2p: encrypted; both peers share a match secret\n");
    char addr_a[64], addr_b[64];
    size_t n;
    ok = ok && ok_or_fail(&a, "local_address", tw_session_local_address(a.s, addr_a, sizeof addr_a, &n)) &&
         ok_or_fail(&b, "local_address", tw_session_local_address(b.s, addr_b, sizeof addr_b, &n)) &&
         /* Every peer lists the same players in the same order. */
         ok_or_fail(&a, "add_local_player", tw_session_add_local_player(a.s, 0)) &&
         ok_or_fail(&a, "add_remote_player", tw_session_add_remote_player(a.s, 1, addr_b)) &&
         ok_or_fail(&b, "add_remote_player", tw_session_add_remote_player(b.s, 0, addr_a)) &&
         ok_or_fail(&b, "add_local_player", tw_session_add_local_player(b.s, 1)) &&
         ok_or_fail(&a, "start", tw_session_start(a.s)) && ok_or_fail(&b, "start", tw_session_start(b.s));
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    t = t0;
    while (ok && !a.failed && !b.failed && (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds) {
        frame(&a); /* two engines, one thread: each frame runs both */
        frame(&b);
        sleep_ms(2);
        clock_gettime(CLOCK_MONOTONIC, &t);
    }

    tw_session_stats sa, sb;
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    if (a.s) tw_session_get_stats(a.s, &sa);
    if (b.s) tw_session_get_stats(b.s, &sb);
    /* Compare every tick confirmed on both peers, and saved since, that both still
     * remember. */
    uint32_t confirmed = a.settled < b.settled ? a.settled : b.settled;
    uint32_t compared = 0, differ = 0;
    for (uint32_t k = confirmed > HISTORY ? confirmed - HISTORY : 0; k < confirmed; k++) {
        uint32_t i = k % HISTORY;
        if (a.saved_tick[i] != k || b.saved_tick[i] != k) continue;
        compared++;
        if (a.saved_sum[i] != b.saved_sum[i]) differ++;
    }
    printf("ticks: A %u, B %u; confirmed by both: %u; rollbacks: A %llu, B %llu (longest %u)\n",
           (unsigned)sa.current_tick, (unsigned)sb.current_tick, (unsigned)confirmed,
           (unsigned long long)sa.rollbacks, (unsigned long long)sb.rollbacks, (unsigned)sa.max_rollback);
    printf("checksums compared: %u, different: %u; bytes sent A %llu, B %llu\n", (unsigned)compared,
           (unsigned)differ, (unsigned long long)sa.bytes_sent, (unsigned long long)sb.bytes_sent);
    /* What a net overlay shows of the other player (GGPO's ggpo_get_network_stats). */
    tw_network_stats ns;
    memset(&ns, 0, sizeof ns);
    tw_result nr = a.s ? tw_session_network_stats(a.s, 1, &ns) : TW_RESULT_NULL_ARGUMENT;
    if (nr == TW_RESULT_OK) {
        printf("A's overlay of player 1: rtt %.1f ms, %.1f kbps out, %.1f kbps in, frame advantage %.2f here, "
               "%.2f there, send queue %u, recv queue %u, predicted %u ticks\n",
               ns.rtt_us / 1000.0, ns.kbps_sent, ns.kbps_received, (double)ns.local_frame_advantage,
               (double)ns.remote_frame_advantage, (unsigned)ns.send_queue, (unsigned)ns.recv_queue,
               (unsigned)ns.predicted_ticks);
    } else {
        fail(&a, "tw_session_network_stats", nr);
    }
    printf("chat: A heard B: %s, B heard A: %s\n", a.chat_heard ? "yes" : "no", b.chat_heard ? "yes" : "no");
    int success = ok && !a.failed && !b.failed && compared > 10 && differ == 0 && nr == TW_RESULT_OK && ns.rtt_us > 0 &&
                  a.chat_heard && b.chat_heard && a.peers_synchronized == 1 && b.peers_synchronized == 1;
    tw_session_destroy(a.s);
    tw_session_destroy(b.s);
    free(a.slots);
    free(b.slots);
    printf("%s\n", success ? "p2p: the peers agree" : "p2p: FAILED");
    return success ? 0 : 1;
}
