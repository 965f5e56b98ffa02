/*
 * Who is who (issue 30) through the C ABI:
 *
 * - secrets an engine forgot to fill in are refused at create: has_match_secret = 1 with
 *   32 zero bytes, an all-zero spectator secret, a spectator secret equal to the match
 *   secret, an all-zero connect key. Each create fails with TW_RESULT_INVALID_ARGUMENT, no
 *   handle, and a last-error message naming the function and the field.
 * - a relay server with a connect key and two clients whose tokens (tw_connect_token_generate)
 *   carry distinct client ids and user data, over real UDP on 127.0.0.1: the server's engine
 *   sees PLAYER_JOINED with TW_CREDENTIAL_CONNECT_TOKEN and each token's client id, and
 *   tw_session_player_identity gives each slot's client id and zero-padded user data; a free
 *   slot gives TW_RESULT_EMPTY and leaves the output untouched.
 *
 * Prints "N passed, N failed" as its last line; exits non-zero if anything failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tickwire.h"

#define PLAYERS 4
#define CLIENTS 2
/* Generous: under valgrind every call is tens of times slower. */
#define DEADLINE_MS 60000

static int passed;
static int failed;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (cond) {                                                                        \
            passed++;                                                                      \
        } else {                                                                           \
            failed++;                                                                      \
            fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #cond);                        \
        }                                                                                  \
    } while (0)

/* POSIX clocks: mingw-w64's winpthread has them too (scripts/windows.sh links it). */
static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)(ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static int all_bytes(const uint8_t *p, size_t n, uint8_t byte) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != byte) return 0;
    return 1;
}

/* The create failed as it must: INVALID_ARGUMENT, no handle, and a message that names
 * the function and contains `field` (so that the engine's log says what to fix). */
static void expect_refused(int line, tw_result r, const tw_session *s, const char *field) {
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    int ok = r == TW_RESULT_INVALID_ARGUMENT && s == NULL && strstr(msg, "tw_session_create") != NULL &&
             strstr(msg, field) != NULL;
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL line %d: expected INVALID_ARGUMENT naming \"%s\", got %s: \"%s\"\n", line, field,
                tw_result_str(r), msg);
    }
}

static void session_config(tw_session_config *cfg, uint32_t mode, const tw_security_config *sec) {
    tw_session_config_init_default(cfg);
    cfg->mode = mode;
    cfg->num_players = PLAYERS;
    cfg->input_size = 1;
    cfg->host.security = sec;
    snprintf(cfg->bind_address, sizeof cfg->bind_address, "127.0.0.1:0");
}

static void zero_secrets_refused(void) {
    uint8_t key[TW_KEY_SIZE];
    CHECK(tw_generate_key(key, sizeof key) == TW_RESULT_OK);
    tw_security_config sec;
    tw_session_config cfg;
    tw_session *s;

    /* has_match_secret = 1 and the 32 bytes left as init_default made them. */
    tw_security_config_init_default(&sec);
    sec.has_match_secret = 1;
    session_config(&cfg, TW_SESSION_MODE_P2P, &sec);
    s = NULL;
    expect_refused(__LINE__, tw_session_create(&cfg, &s), s, "match_secret is all zero bytes");
    tw_host_config hcfg;
    tw_host_config_init_default(&hcfg);
    hcfg.security = &sec;
    tw_host *h = NULL;
    tw_result r = tw_host_create(&hcfg, "127.0.0.1:0", &h);
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    CHECK(r == TW_RESULT_INVALID_ARGUMENT && h == NULL && strstr(msg, "tw_host_create") && strstr(msg, "match_secret"));

    /* A real match secret, an all-zero spectator secret. */
    memcpy(sec.match_secret, key, sizeof key);
    sec.has_spectator_secret = 1;
    s = NULL;
    expect_refused(__LINE__, tw_session_create(&cfg, &s), s, "spectator_secret is all zero bytes");

    /* The spectators' secret equal to the players': a spectator would play. */
    memcpy(sec.spectator_secret, key, sizeof key);
    s = NULL;
    expect_refused(__LINE__, tw_session_create(&cfg, &s), s, "spectator_secret equals match_secret");

    /* The same settings with a spectator secret of its own are taken: the refusals are
     * about the bytes, not about having the secrets. */
    CHECK(tw_generate_key(sec.spectator_secret, sizeof sec.spectator_secret) == TW_RESULT_OK);
    s = NULL;
    r = tw_session_create(&cfg, &s);
    CHECK(r == TW_RESULT_OK && s != NULL);
    tw_session_destroy(s);

    /* A relay server whose connect key is all zero: anyone could mint tokens. */
    tw_security_config_init_default(&sec);
    sec.has_connect_key = 1;
    session_config(&cfg, TW_SESSION_MODE_RELAY_SERVER, &sec);
    s = NULL;
    expect_refused(__LINE__, tw_session_create(&cfg, &s), s, "connect_key is all zero bytes");
    memset(key, 0, sizeof key);
}

/* One engine: its whole game state is a running sum of every input. */
typedef struct node {
    tw_session *s;
    int is_server;
    uint64_t state;
    uint64_t *slots;
    int joined, failed;
    uint32_t player;              /* a client's slot, from JOINED */
    int server_joins;             /* PLAYER_JOINED seen by the server */
    uint32_t join_credential[PLAYERS + 1];
    uint64_t join_client_id[PLAYERS + 1];
    uint32_t join_player[PLAYERS + 1];
} node;

static void note(node *n, const char *what, tw_result r) {
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    fprintf(stderr, "relay_identity: %s: %s: %s\n", what, tw_result_str(r), msg);
    n->failed = 1;
}

static void run_requests(node *n) {
    tw_request q;
    tw_result r;
    while ((r = tw_session_poll_request(n->s, &q)) == TW_RESULT_OK) {
        size_t len = 0;
        switch (q.kind) {
        case TW_REQUEST_KIND_SAVE:
            n->slots[q.slot] = n->state;
            if (TW_FAILED(r = tw_session_confirm_save(n->s, q.tick, n->state))) note(n, "confirm_save", r);
            break;
        case TW_REQUEST_KIND_LOAD:
            n->state = n->slots[q.slot];
            break;
        case TW_REQUEST_KIND_ADVANCE: {
            uint8_t inputs[PLAYERS];
            if (TW_FAILED(r = tw_session_request_inputs(n->s, inputs, sizeof inputs, &len))) {
                note(n, "request_inputs", r);
                break;
            }
            for (size_t i = 0; i < len; i++) n->state = n->state * 31 + inputs[i];
            break;
        }
        case TW_REQUEST_KIND_DUMP_STATE:
            if (TW_FAILED(r = tw_session_provide_state(n->s, q.tick, &n->slots[q.slot], sizeof n->slots[q.slot])))
                note(n, "provide_state", r);
            break;
        case TW_REQUEST_KIND_RESTORE:
            if (TW_FAILED(r = tw_session_request_state(n->s, &n->state, sizeof n->state, &len))) note(n, "request_state", r);
            break;
        }
    }
    if (TW_FAILED(r)) note(n, "poll_request", r);
}

static void frame(node *n, uint8_t input) {
    uint32_t due = 0;
    tw_result r = tw_session_ticks_due(n->s, &due);
    if (TW_FAILED(r)) {
        note(n, "ticks_due", r);
        return;
    }
    while (due--) {
        if (!n->is_server && TW_FAILED(r = tw_session_push_input(n->s, TW_LOCAL_PLAYER, &input, 1))) note(n, "push_input", r);
        r = tw_session_advance(n->s);
        if (TW_FAILED(r)) note(n, "advance", r);
        run_requests(n);
    }
    tw_session_event e;
    while (tw_session_poll_event(n->s, &e) == TW_RESULT_OK) {
        switch (e.kind) {
        case TW_SESSION_EVENT_KIND_PLAYER_JOINED:
            if (n->server_joins <= PLAYERS) {
                n->join_credential[n->server_joins] = e.data.relay.credential;
                n->join_client_id[n->server_joins] = e.data.relay.client_id;
                n->join_player[n->server_joins] = e.data.relay.player;
            }
            n->server_joins++;
            break;
        case TW_SESSION_EVENT_KIND_JOINED:
            n->joined = 1;
            n->player = e.data.relay.player;
            break;
        case TW_SESSION_EVENT_KIND_SERVER_LOST:
            fprintf(stderr, "relay_identity: a client lost the server (reason %u)\n", (unsigned)e.data.relay.reason);
            n->failed = 1;
            break;
        case TW_SESSION_EVENT_KIND_FATAL:
            fprintf(stderr, "relay_identity: fatal: %s\n", e.data.fatal.message);
            n->failed = 1;
            break;
        }
    }
}

static int create(node *n, uint32_t mode, const tw_security_config *sec) {
    tw_session_config cfg;
    session_config(&cfg, mode, sec);
    cfg.max_prediction = 16;
    memset(n, 0, sizeof *n);
    n->is_server = mode == TW_SESSION_MODE_RELAY_SERVER;
    tw_result r = tw_session_create(&cfg, &n->s);
    if (TW_FAILED(r)) {
        note(n, "create", r);
        return 0;
    }
    uint32_t slots = 0;
    if (TW_FAILED(r = tw_session_state_slots(n->s, &slots))) {
        note(n, "state_slots", r);
        return 0;
    }
    n->slots = (uint64_t *)calloc(slots, sizeof *n->slots);
    return n->slots != NULL;
}

static void identities(void) {
    /* Two backend accounts: ids that need all 64 bits, user data of 5 bytes (with a zero
     * inside: the data is bytes, not a string) and of the whole 256 bytes. */
    static const uint64_t ids[CLIENTS] = {0x1122334455667788ull, 0x8000000000000042ull};
    static uint8_t data[CLIENTS][TW_CONNECT_TOKEN_USER_DATA_SIZE];
    static const size_t data_len[CLIENTS] = {5, TW_CONNECT_TOKEN_USER_DATA_SIZE};
    memcpy(data[0], "red\0\7", 5);
    for (size_t i = 0; i < TW_CONNECT_TOKEN_USER_DATA_SIZE; i++) data[1][i] = (uint8_t)(255 - i);

    uint8_t key[TW_KEY_SIZE];
    CHECK(tw_generate_key(key, sizeof key) == TW_RESULT_OK);
    tw_security_config sec;
    tw_security_config_init_default(&sec);
    sec.has_connect_key = 1;
    memcpy(sec.connect_key, key, sizeof key);
    node server, clients[CLIENTS];
    memset(clients, 0, sizeof clients);
    char addr[64];
    size_t addr_len = 0;
    int ok = create(&server, TW_SESSION_MODE_RELAY_SERVER, &sec) &&
             tw_session_local_address(server.s, addr, sizeof addr, &addr_len) == TW_RESULT_OK &&
             tw_session_start(server.s) == TW_RESULT_OK;
    CHECK(ok);
    tw_session_config defaults;
    tw_session_config_init_default(&defaults);
    for (int i = 0; ok && i < CLIENTS; i++) {
        tw_security_config_init_default(&sec);
        sec.connect_token_size = TW_CONNECT_TOKEN_SIZE;
        tw_result r = tw_connect_token_generate(key, sizeof key, defaults.host.protocol_id, ids[i], addr, 60, 0, data[i],
                                                data_len[i], sec.connect_token, sizeof sec.connect_token);
        CHECK(r == TW_RESULT_OK);
        ok = r == TW_RESULT_OK && create(&clients[i], TW_SESSION_MODE_RELAY_CLIENT, &sec) &&
             tw_session_set_server(clients[i].s, addr) == TW_RESULT_OK && tw_session_start(clients[i].s) == TW_RESULT_OK;
        CHECK(ok);
    }
    memset(&sec, 0, sizeof sec);
    memset(key, 0, sizeof key);

    long start = now_ms();
    while (ok && now_ms() - start < DEADLINE_MS &&
           !(clients[0].joined && clients[1].joined && server.server_joins >= CLIENTS) && !server.failed &&
           !clients[0].failed && !clients[1].failed) {
        frame(&server, 0);
        for (int i = 0; i < CLIENTS; i++) frame(&clients[i], (uint8_t)(i + 1));
        sleep_ms(2);
    }
    CHECK(!server.failed && !clients[0].failed && !clients[1].failed);
    CHECK(clients[0].joined && clients[1].joined);
    CHECK(server.server_joins == CLIENTS);

    if (ok && server.server_joins == CLIENTS && clients[0].joined && clients[1].joined) {
        for (int i = 0; i < CLIENTS; i++) {
            /* The PLAYER_JOINED of client i: the one with its id, in the slot it was told. */
            int found = -1;
            for (int j = 0; j < CLIENTS; j++)
                if (server.join_client_id[j] == ids[i]) found = j;
            CHECK(found >= 0);
            if (found < 0) continue;
            CHECK(server.join_credential[found] == TW_CREDENTIAL_CONNECT_TOKEN);
            CHECK(server.join_player[found] == clients[i].player);

            tw_player_identity id;
            memset(&id, 0xAB, sizeof id);
            CHECK(tw_session_player_identity(server.s, clients[i].player, &id) == TW_RESULT_OK);
            CHECK(id.credential == TW_CREDENTIAL_CONNECT_TOKEN);
            CHECK(id.client_id == ids[i]);
            CHECK(memcmp(id.user_data, data[i], data_len[i]) == 0);
            CHECK(all_bytes(id.user_data + data_len[i], sizeof id.user_data - data_len[i], 0)); /* zero-padded */
        }
        CHECK(clients[0].player != clients[1].player);
        int free_slots = 0;
        for (uint32_t p = 0; p < PLAYERS; p++) {
            if (p == clients[0].player || p == clients[1].player) continue;
            tw_player_identity id;
            memset(&id, 0xAB, sizeof id);
            CHECK(tw_session_player_identity(server.s, p, &id) == TW_RESULT_EMPTY);
            CHECK(all_bytes((const uint8_t *)&id, sizeof id, 0xAB)); /* untouched */
            free_slots++;
        }
        CHECK(free_slots == PLAYERS - CLIENTS);
    }
    /* The errors the header lists. */
    tw_player_identity id;
    CHECK(tw_session_player_identity(server.s, PLAYERS, &id) == TW_RESULT_INVALID_ARGUMENT);
    CHECK(tw_session_player_identity(server.s, 0, NULL) == TW_RESULT_NULL_ARGUMENT);
    if (clients[0].s) CHECK(tw_session_player_identity(clients[0].s, 0, &id) == TW_RESULT_INVALID_STATE);
    CHECK(tw_session_player_identity(NULL, 0, &id) == TW_RESULT_NULL_ARGUMENT);

    for (int i = 0; i < CLIENTS; i++) {
        tw_session_destroy(clients[i].s);
        free(clients[i].slots);
    }
    tw_session_destroy(server.s);
    free(server.slots);
}

int main(void) {
    CHECK(tw_player_identity_size() == sizeof(tw_player_identity));
    CHECK(sizeof(tw_player_identity) == 304);
    zero_secrets_refused();
    identities();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
