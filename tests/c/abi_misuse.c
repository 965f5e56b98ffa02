/*
 * Misuse of the tickwire C ABI from C: NULL pointers, too-small buffers, bad address
 * strings, unknown struct sizes and enum values, bad security settings, keys and connect
 * tokens, a panic, two threads on one host and a destroy during a call on another thread. Every call must return the
 * documented code, set a last-error message that names the function, write no output
 * on failure, and never crash.
 *
 * Prints "N passed, N failed" as its last line; exits non-zero if anything failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>

#ifdef _WIN32
#include <process.h>
#else
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#endif

#include "tickwire.h"

/* The test hooks of a library built with the cargo feature "test-hooks" (tests/run.sh
 * builds it so). They are not in the header: a shipped library does not have them. */
#ifdef __cplusplus
extern "C" {
#endif
tw_result tw_debug_panic(tw_host *host);
tw_result tw_debug_kill_network_thread(tw_host *host);
tw_result tw_debug_hold_host(tw_host *host, uint32_t ms);
#ifdef __cplusplus
}
#endif

static int passed;
static int failed;

static void fail(int line, const char *what, const char *why) {
    failed++;
    fprintf(stderr, "FAIL line %d: %s: %s\n", line, what, why);
}

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (cond) {                                                                        \
            passed++;                                                                      \
        } else {                                                                           \
            fail(__LINE__, #cond, "false");                                                \
        }                                                                                  \
    } while (0)

/* Sets the last error to a known message from another function, so that a check can
 * tell a fresh message from a stale one. */
static void prime_last_error(const char *fn) {
    if (strcmp(fn, "tw_host_flush") != 0) {
        tw_host_flush(NULL);
    } else {
        tw_host_disconnect(NULL, 1);
    }
}

/* The result must be `want`, and the last error must be new, start with "<fn>: " (or
 * be a panic message naming fn) and contain `needle`. */
static void check_err(int line, const char *what, tw_result got, tw_result want, const char *fn,
                      const char *needle) {
    char msg[512];
    char prefix[96];
    char why[768];
    size_t n = tw_last_error_message(msg, sizeof msg);
    snprintf(prefix, sizeof prefix, "%s: ", fn);
    if (got != want) {
        snprintf(why, sizeof why, "returned %s (%d), expected %s; last error: %s", tw_result_str(got), (int)got,
                 tw_result_str(want), msg);
        fail(line, what, why);
    } else if (n < 2 || msg[0] == '\0') {
        fail(line, what, "empty last-error message");
    } else if (strncmp(msg, prefix, strlen(prefix)) != 0 &&
               !(want == TW_RESULT_PANIC && strncmp(msg, "panic: ", 7) == 0 && strstr(msg, fn) != NULL)) {
        snprintf(why, sizeof why, "last error does not name %s: %s", fn, msg);
        fail(line, what, why);
    } else if (needle != NULL && strstr(msg, needle) == NULL) {
        snprintf(why, sizeof why, "last error lacks \"%s\": %s", needle, msg);
        fail(line, what, why);
    } else {
        passed++;
    }
}

#define EXPECT_ERR(call, want, fn, needle)                                                 \
    do {                                                                                   \
        tw_result r_;                                                                      \
        prime_last_error(fn);                                                              \
        r_ = (call);                                                                       \
        check_err(__LINE__, #call, r_, want, fn, needle);                                  \
    } while (0)

#define EXPECT_OK(call)                                                                    \
    do {                                                                                   \
        tw_result r_ = (call);                                                             \
        if (r_ == TW_RESULT_OK) {                                                          \
            passed++;                                                                      \
        } else {                                                                           \
            char m_[512];                                                                  \
            tw_last_error_message(m_, sizeof m_);                                          \
            fail(__LINE__, #call, m_);                                                     \
        }                                                                                  \
    } while (0)

static int sentinel_storage;
#define SENTINEL_HOST ((tw_host *)(void *)&sentinel_storage)

static void versions_and_sizes(void) {
    CHECK(tw_abi_version() == TW_ABI_VERSION);
    CHECK(tw_version() == TW_VERSION);
    CHECK(tw_version_string() != NULL && tw_version_string()[0] != '\0');
    CHECK(tw_host_config_size() == sizeof(tw_host_config));
    CHECK(tw_link_sim_config_size() == sizeof(tw_link_sim_config));
    CHECK(tw_event_size() == sizeof(tw_event));
    CHECK(tw_peer_stats_size() == sizeof(tw_peer_stats));
    CHECK(tw_host_stats_size() == sizeof(tw_host_stats));
    CHECK(tw_security_config_size() == sizeof(tw_security_config));
    CHECK(sizeof(tw_security_config) == 1240 && sizeof(tw_host_config) == 96);
    CHECK(sizeof(tw_event) == 128);
    CHECK(strcmp(tw_result_str(TW_RESULT_OK), "TW_RESULT_OK") == 0);
    CHECK(strcmp(tw_result_str(TW_RESULT_MESSAGE_TOO_LARGE), "TW_RESULT_MESSAGE_TOO_LARGE") == 0);
    CHECK(TW_RESULT_BUSY == -13 && strcmp(tw_result_str(TW_RESULT_BUSY), "TW_RESULT_BUSY") == 0);
    CHECK(strcmp(tw_result_str(-999), "TW_RESULT_UNKNOWN") == 0);
    CHECK(TW_SUCCEEDED(TW_RESULT_EMPTY) && TW_FAILED(TW_RESULT_NULL_ARGUMENT) && !TW_FAILED(TW_RESULT_OK));
}

static void configs(void) {
    static const char *bad_addresses[] = {"localhost:7777", "127.0.0.1", "127.0.0.1:99999",
                                          "1.2.3.4.5:80", "[::1]", "::1:80", "127.0.0.1:80x"};
    tw_host_config cfg;
    tw_host *h = SENTINEL_HOST;
    size_t i;

    EXPECT_ERR(tw_host_config_init_default(NULL), TW_RESULT_NULL_ARGUMENT, "tw_host_config_init_default", "config");
    EXPECT_ERR(tw_link_sim_config_init_default(NULL), TW_RESULT_NULL_ARGUMENT, "tw_link_sim_config_init_default",
               "config");
    EXPECT_OK(tw_host_config_init_default(&cfg));
    CHECK(cfg.struct_size == sizeof cfg);

    EXPECT_ERR(tw_host_create(NULL, "127.0.0.1:0", &h), TW_RESULT_NULL_ARGUMENT, "tw_host_create", "config");
    /* A NULL or empty bind_address is the automatic (dual-stack) bind: tests/c_abi/ffi_addresses.rs. */
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", NULL), TW_RESULT_NULL_ARGUMENT, "tw_host_create", "out_host");

    cfg.struct_size = 0;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_VERSION_MISMATCH, "tw_host_create", "struct_size");
    cfg.struct_size = (uint32_t)sizeof cfg - 8;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_VERSION_MISMATCH, "tw_host_create", "struct_size");
    cfg.struct_size = (uint32_t)sizeof cfg + 8;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_VERSION_MISMATCH, "tw_host_create", "struct_size");

    tw_host_config_init_default(&cfg);
    for (i = 0; i < sizeof bad_addresses / sizeof bad_addresses[0]; i++) {
        EXPECT_ERR(tw_host_create(&cfg, bad_addresses[i], &h), TW_RESULT_INVALID_ARGUMENT, "tw_host_create",
                   "bind_address");
    }
    cfg.reserved[0] = 1;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, "tw_host_create", "reserved");
    tw_host_config_init_default(&cfg);
    cfg.keepalive_interval_ms = 0;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, "tw_host_create", "keepalive");
    tw_host_config_init_default(&cfg);
    cfg.max_message_size = 0;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, "tw_host_create",
               "max_message_size");
    CHECK(h == SENTINEL_HOST); /* never written on failure */
}

/* True when all n bytes at p are `byte` (an output left untouched by a failed call). */
static int all_bytes(const void *p, size_t n, unsigned char byte) {
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) {
        if (b[i] != byte) {
            return 0;
        }
    }
    return 1;
}

/* tw_generate_key and tw_connect_token_generate: NULL arguments, wrong sizes, bad address
 * lists, no lifetime; a failed call writes nothing. */
static void keys_and_tokens(void) {
    static const char *bad_lists[] = {"",
                                      ",",
                                      "localhost:7000",
                                      "127.0.0.1",
                                      "127.0.0.1:7000;127.0.0.1:7001",
                                      "127.0.0.1:99999",
                                      "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5,127.0.0.1:6,"
                                      "127.0.0.1:7,127.0.0.1:8,127.0.0.1:9"};
    const char *fn = "tw_connect_token_generate";
    const char *addr = "127.0.0.1:7000";
    uint8_t key[TW_KEY_SIZE];
    uint8_t user[TW_CONNECT_TOKEN_USER_DATA_SIZE + 1];
    static uint8_t token[TW_CONNECT_TOKEN_SIZE];
    size_t i;

    memset(key, 0xAA, sizeof key);
    EXPECT_ERR(tw_generate_key(NULL, TW_KEY_SIZE), TW_RESULT_NULL_ARGUMENT, "tw_generate_key", "out");
    EXPECT_ERR(tw_generate_key(key, TW_KEY_SIZE - 1), TW_RESULT_INVALID_ARGUMENT, "tw_generate_key", "out_size");
    EXPECT_ERR(tw_generate_key(key, 0), TW_RESULT_INVALID_ARGUMENT, "tw_generate_key", "out_size");
    EXPECT_ERR(tw_generate_key(key, TW_KEY_SIZE + 1), TW_RESULT_INVALID_ARGUMENT, "tw_generate_key", "out_size");
    CHECK(all_bytes(key, sizeof key, 0xAA));
    EXPECT_OK(tw_generate_key(key, sizeof key));
    CHECK(!all_bytes(key, sizeof key, 0xAA) && !all_bytes(key, sizeof key, 0));

    memset(user, 7, sizeof user);
    memset(token, 0xAA, sizeof token);
    EXPECT_ERR(tw_connect_token_generate(NULL, TW_KEY_SIZE, 1, 1, addr, 60, 0, NULL, 0, token, sizeof token),
               TW_RESULT_NULL_ARGUMENT, fn, "key");
    EXPECT_ERR(tw_connect_token_generate(key, TW_KEY_SIZE - 1, 1, 1, addr, 60, 0, NULL, 0, token, sizeof token),
               TW_RESULT_INVALID_ARGUMENT, fn, "key_size");
    EXPECT_ERR(tw_connect_token_generate(key, 0, 1, 1, addr, 60, 0, NULL, 0, token, sizeof token),
               TW_RESULT_INVALID_ARGUMENT, fn, "key_size");
    EXPECT_ERR(tw_connect_token_generate(key, sizeof key, 1, 1, NULL, 60, 0, NULL, 0, token, sizeof token),
               TW_RESULT_NULL_ARGUMENT, fn, "server_addresses");
    for (i = 0; i < sizeof bad_lists / sizeof bad_lists[0]; i++) {
        EXPECT_ERR(tw_connect_token_generate(key, sizeof key, 1, 1, bad_lists[i], 60, 0, NULL, 0, token, sizeof token),
                   TW_RESULT_INVALID_ARGUMENT, fn, "server_addresses");
    }
    EXPECT_ERR(tw_connect_token_generate(key, sizeof key, 1, 1, addr, 0, 0, NULL, 0, token, sizeof token),
               TW_RESULT_INVALID_ARGUMENT, fn, "expire_seconds");
    EXPECT_ERR(tw_connect_token_generate(key, sizeof key, 1, 1, addr, 60, 0, NULL, 4, token, sizeof token),
               TW_RESULT_NULL_ARGUMENT, fn, "user_data");
    EXPECT_ERR(tw_connect_token_generate(key, sizeof key, 1, 1, addr, 60, 0, user, sizeof user, token, sizeof token),
               TW_RESULT_INVALID_ARGUMENT, fn, "user_data");
    EXPECT_ERR(tw_connect_token_generate(key, sizeof key, 1, 1, addr, 60, 0, NULL, 0, NULL, TW_CONNECT_TOKEN_SIZE),
               TW_RESULT_NULL_ARGUMENT, fn, "out_token");
    EXPECT_ERR(tw_connect_token_generate(key, sizeof key, 1, 1, addr, 60, 0, NULL, 0, token, sizeof token - 1),
               TW_RESULT_INVALID_ARGUMENT, fn, "out_size");
    EXPECT_ERR(tw_connect_token_generate(key, sizeof key, 1, 1, addr, 60, 0, NULL, 0, token, 0),
               TW_RESULT_INVALID_ARGUMENT, fn, "out_size");
    CHECK(all_bytes(token, sizeof token, 0xAA)); /* never written on failure */
    EXPECT_OK(tw_connect_token_generate(key, sizeof key, 1, 1, "127.0.0.1:7000, [::1]:7000", 60, 5, user,
                                        TW_CONNECT_TOKEN_USER_DATA_SIZE, token, sizeof token));
    CHECK(token[0] == 1); /* the token format's version */
    EXPECT_OK(tw_connect_token_generate(key, sizeof key, 1, 1, addr, 1, 0, NULL, 0, token, sizeof token));
    memset(key, 0, sizeof key);
}

/* tw_security_config through tw_host_create (and tw_session_create): every field checked,
 * the code documented, the message naming the field; nothing written on failure. */
static void security_configs(void) {
    const char *fn = "tw_host_create";
    tw_host_config cfg;
    tw_security_config *sec = (tw_security_config *)malloc(sizeof *sec); /* freed while the host lives */
    tw_session_config scfg;
    tw_session *session = NULL;
    tw_host *h = SENTINEL_HOST;
    tw_host *live = NULL;
    uint8_t key[TW_KEY_SIZE];
    uint32_t peer = 0;

    if (sec == NULL) {
        fail(__LINE__, "malloc", "no memory");
        return;
    }
    EXPECT_ERR(tw_security_config_init_default(NULL), TW_RESULT_NULL_ARGUMENT, "tw_security_config_init_default",
               "config");
    memset(sec, 0xAA, sizeof *sec);
    EXPECT_OK(tw_security_config_init_default(sec));
    CHECK(sec->struct_size == sizeof *sec && sec->mode == TW_SECURITY_MODE_ENCRYPTED && sec->has_match_secret == 0 &&
          sec->has_spectator_secret == 0 && sec->has_connect_key == 0 && sec->connect_token_size == 0 &&
          all_bytes(sec->match_secret, sizeof sec->match_secret, 0) && sec->public_address[0] == '\0' &&
          all_bytes(sec->connect_token, sizeof sec->connect_token, 0) && all_bytes(sec->reserved, sizeof sec->reserved, 0));
    tw_host_config_init_default(&cfg);
    CHECK(cfg.security == NULL);
    cfg.security = sec;
    tw_generate_key(key, sizeof key);

    /* struct_size */
    sec->struct_size = 0;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_VERSION_MISMATCH, fn, "tw_security_config.struct_size");
    sec->struct_size = (uint32_t)sizeof *sec - 8;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_VERSION_MISMATCH, fn, "tw_security_config.struct_size");
    sec->struct_size = (uint32_t)sizeof *sec + 8;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_VERSION_MISMATCH, fn, "tw_security_config.struct_size");

    /* mode */
    tw_security_config_init_default(sec);
    sec->mode = 7;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "tw_security_config.mode 7");
    tw_security_config_init_default(sec);
    sec->mode = TW_SECURITY_MODE_INSECURE_PLAINTEXT;
    sec->has_match_secret = 1;
    memcpy(sec->match_secret, key, sizeof key);
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "tw_security_config.mode");
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "has_match_secret");
    sec->has_match_secret = 0;
    sec->has_spectator_secret = 1;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "tw_security_config.mode");
    sec->has_spectator_secret = 0;
    sec->has_connect_key = 1;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "tw_security_config.mode");
    sec->has_connect_key = 0;
    sec->connect_token_size = TW_CONNECT_TOKEN_SIZE;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "tw_security_config.mode");

    /* reserved */
    tw_security_config_init_default(sec);
    sec->reserved[31] = 1;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "tw_security_config.reserved");

    /* connect tokens: the size, the bytes, the game */
    tw_security_config_init_default(sec);
    sec->connect_token_size = 5;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn,
               "tw_security_config.connect_token_size is 5");
    sec->connect_token_size = TW_CONNECT_TOKEN_SIZE; /* all zeros: version 0 */
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "tw_security_config.connect_token");
    EXPECT_OK(tw_connect_token_generate(key, sizeof key, cfg.protocol_id, 9, "127.0.0.1:7000", 60, 0, NULL, 0,
                                        sec->connect_token, sizeof sec->connect_token));
    sec->connect_token[0] ^= 0xFF; /* the version byte */
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "tw_security_config.connect_token");
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "version");
    sec->connect_token[0] ^= 0xFF;
    sec->connect_token[TW_CONNECT_TOKEN_SIZE - 1] = 1; /* the zero padding at the end */
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "tw_security_config.connect_token");
    sec->connect_token[TW_CONNECT_TOKEN_SIZE - 1] = 0;
    cfg.protocol_id ^= 1; /* a token for another game */
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "protocol");
    cfg.protocol_id ^= 1;

    /* a connect key: with secrets, and the public address */
    tw_security_config_init_default(sec);
    sec->has_connect_key = 1;
    memcpy(sec->connect_key, key, sizeof key);
    strcpy(sec->public_address, "127.0.0.1:7000");
    sec->has_match_secret = 1;
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "has_connect_key");
    sec->has_match_secret = 0;
    strcpy(sec->public_address, "localhost:7000");
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn,
               "tw_security_config.public_address");
    memset(sec->public_address, 'x', sizeof sec->public_address); /* no NUL */
    EXPECT_ERR(tw_host_create(&cfg, "127.0.0.1:0", &h), TW_RESULT_INVALID_ARGUMENT, fn, "NUL-terminated");
    memset(sec->public_address, 0, sizeof sec->public_address); /* empty: the bound address, whose IP... */
    EXPECT_ERR(tw_host_create(&cfg, "0.0.0.0:7000", &h), TW_RESULT_INVALID_ARGUMENT, fn, /* ...is no address */
               "tw_security_config.public_address");
    CHECK(h == SENTINEL_HOST); /* never written on failure */

    /* tw_session_create reads host.security the same way. */
    tw_session_config_init_default(&scfg);
    strcpy(scfg.bind_address, "127.0.0.1:0");
    tw_security_config_init_default(sec);
    sec->mode = TW_SECURITY_MODE_INSECURE_PLAINTEXT;
    sec->has_match_secret = 1;
    scfg.host.security = sec;
    EXPECT_ERR(tw_session_create(&scfg, &session), TW_RESULT_INVALID_ARGUMENT, "tw_session_create",
               "tw_security_config.mode");
    /* Carrier protection leaves packets unprotected by tickwire: never on a UDP socket. */
    sec->mode = TW_SECURITY_MODE_CARRIER;
    EXPECT_ERR(tw_session_create(&scfg, &session), TW_RESULT_INVALID_ARGUMENT, "tw_session_create",
               "TW_SECURITY_MODE_CARRIER");
    sec->mode = 3;
    EXPECT_ERR(tw_session_create(&scfg, &session), TW_RESULT_INVALID_ARGUMENT, "tw_session_create",
               "tw_security_config.mode 3");
    sec->struct_size = 4;
    EXPECT_ERR(tw_session_create(&scfg, &session), TW_RESULT_VERSION_MISMATCH, "tw_session_create",
               "tw_security_config.struct_size");
    CHECK(session == NULL);

    /* A valid config is only read during the call: free it, then use the host (valgrind
     * would see a later read). */
    tw_security_config_init_default(sec);
    sec->has_match_secret = 1;
    memcpy(sec->match_secret, key, sizeof key);
    EXPECT_OK(tw_host_create(&cfg, "127.0.0.1:0", &live));
    memset(sec, 0, sizeof *sec);
    free(sec);
    memset(key, 0, sizeof key);
    if (live != NULL) {
        EXPECT_OK(tw_host_connect(live, "127.0.0.1:9", &peer));
        EXPECT_OK(tw_host_flush(live));
        tw_host_destroy(live);
    }
}

static void null_host(void) {
    uint32_t peer = 77;
    tw_event ev;
    uint8_t buf[8];
    char cbuf[8];
    size_t n = 99;
    tw_peer_stats ps;
    tw_host_stats hs;
    tw_link_sim_config link;

    memset(&ev, 0, sizeof ev);
    tw_link_sim_config_init_default(&link);
    EXPECT_ERR(tw_host_connect(NULL, "127.0.0.1:1", &peer), TW_RESULT_NULL_ARGUMENT, "tw_host_connect", "host");
    EXPECT_ERR(tw_host_send(NULL, 1, TW_CHANNEL_RELIABLE, buf, 1), TW_RESULT_NULL_ARGUMENT, "tw_host_send", "host");
    EXPECT_ERR(tw_host_flush(NULL), TW_RESULT_NULL_ARGUMENT, "tw_host_flush", "host");
    EXPECT_ERR(tw_host_disconnect(NULL, 1), TW_RESULT_NULL_ARGUMENT, "tw_host_disconnect", "host");
    EXPECT_ERR(tw_host_poll_event(NULL, &ev), TW_RESULT_NULL_ARGUMENT, "tw_host_poll_event", "host");
    EXPECT_ERR(tw_host_read_message(NULL, buf, sizeof buf, &n), TW_RESULT_NULL_ARGUMENT, "tw_host_read_message",
               "host");
    EXPECT_ERR(tw_host_peer_stats(NULL, 1, &ps), TW_RESULT_NULL_ARGUMENT, "tw_host_peer_stats", "host");
    EXPECT_ERR(tw_host_get_stats(NULL, &hs), TW_RESULT_NULL_ARGUMENT, "tw_host_get_stats", "host");
    EXPECT_ERR(tw_host_set_link_sim(NULL, TW_DIRECTION_OUTBOUND, &link), TW_RESULT_NULL_ARGUMENT,
               "tw_host_set_link_sim", "host");
    EXPECT_ERR(tw_host_local_address(NULL, cbuf, sizeof cbuf, &n), TW_RESULT_NULL_ARGUMENT, "tw_host_local_address",
               "host");
    tw_host_destroy(NULL); /* a no-op */
    CHECK(peer == 77 && ev.kind == 0 && n == 99);
}

/* The two states of a synctest mismatch (tw_session_take_synctest_state): a NULL
 * handle or length, an unknown state, the wrong mode, and nothing ready yet. */
static void synctest_states(void) {
    tw_session_config cfg;
    tw_session *s = NULL;
    unsigned char buf[16];
    size_t n = 99;

    EXPECT_ERR(tw_session_take_synctest_state(NULL, TW_SYNCTEST_STATE_SAVED, buf, sizeof buf, &n),
               TW_RESULT_NULL_ARGUMENT, "tw_session_take_synctest_state", "session");
    tw_session_config_init_default(&cfg);
    cfg.mode = TW_SESSION_MODE_SYNCTEST;
    cfg.num_players = 2;
    cfg.input_size = 2;
    EXPECT_OK(tw_session_create(&cfg, &s));
    if (s != NULL) {
        EXPECT_ERR(tw_session_take_synctest_state(s, TW_SYNCTEST_STATE_SAVED, buf, sizeof buf, NULL),
                   TW_RESULT_NULL_ARGUMENT, "tw_session_take_synctest_state", "out_len");
        EXPECT_ERR(tw_session_take_synctest_state(s, 2, buf, sizeof buf, &n), TW_RESULT_INVALID_ARGUMENT,
                   "tw_session_take_synctest_state", "which is 2");
        CHECK(tw_session_take_synctest_state(s, TW_SYNCTEST_STATE_RESIMULATED, buf, sizeof buf, &n) ==
              TW_RESULT_EMPTY);
        CHECK(n == 99); /* untouched */
        tw_session_destroy(s);
        s = NULL;
    }
    cfg.mode = TW_SESSION_MODE_P2P;
    strcpy(cfg.bind_address, "127.0.0.1:0");
    EXPECT_OK(tw_session_create(&cfg, &s));
    if (s != NULL) {
        EXPECT_ERR(tw_session_take_synctest_state(s, TW_SYNCTEST_STATE_SAVED, buf, sizeof buf, &n),
                   TW_RESULT_INVALID_STATE, "tw_session_take_synctest_state", "P2p mode");
        tw_session_destroy(s);
    }
}

/* The net overlay's figures (tw_session_network_stats): a NULL handle or output, the
 * wrong mode, a local player, a player not added, one out of range, and a remote player
 * whose peer has not connected (EMPTY, the output untouched). */
static void network_stats(void) {
    tw_session_config cfg;
    tw_session *s = NULL;
    tw_network_stats ns;

    CHECK(tw_network_stats_size() == sizeof(tw_network_stats));
    memset(&ns, 0xAB, sizeof ns);
    EXPECT_ERR(tw_session_network_stats(NULL, 1, &ns), TW_RESULT_NULL_ARGUMENT, "tw_session_network_stats", "session");

    tw_session_config_init_default(&cfg);
    cfg.mode = TW_SESSION_MODE_SYNCTEST;
    cfg.num_players = 3;
    cfg.input_size = 2;
    EXPECT_OK(tw_session_create(&cfg, &s));
    if (s != NULL) {
        EXPECT_ERR(tw_session_network_stats(s, 1, &ns), TW_RESULT_INVALID_STATE, "tw_session_network_stats", "SyncTest");
        tw_session_destroy(s);
        s = NULL;
    }

    cfg.mode = TW_SESSION_MODE_P2P;
    strcpy(cfg.bind_address, "127.0.0.1:0");
    EXPECT_OK(tw_session_create(&cfg, &s));
    if (s != NULL) {
        EXPECT_OK(tw_session_add_local_player(s, 0));
        /* Nobody listens there: the peer never connects. */
        EXPECT_OK(tw_session_add_remote_player(s, 1, "127.0.0.1:9"));
        EXPECT_ERR(tw_session_network_stats(s, 1, NULL), TW_RESULT_NULL_ARGUMENT, "tw_session_network_stats",
                   "out_stats");
        /* Input delay per local player: a remote one, too long, out of range. */
        EXPECT_OK(tw_session_set_player_input_delay(s, 0, 2));
        EXPECT_ERR(tw_session_set_player_input_delay(s, 1, 2), TW_RESULT_INVALID_ARGUMENT,
                   "tw_session_set_player_input_delay", "remote");
        EXPECT_ERR(tw_session_set_player_input_delay(s, 0, 33), TW_RESULT_INVALID_ARGUMENT,
                   "tw_session_set_player_input_delay", "above 32");
        EXPECT_ERR(tw_session_set_player_input_delay(s, 3, 1), TW_RESULT_INVALID_ARGUMENT,
                   "tw_session_set_player_input_delay", "player 3");
        EXPECT_ERR(tw_session_network_stats(s, 0, &ns), TW_RESULT_INVALID_ARGUMENT, "tw_session_network_stats",
                   "local");
        EXPECT_ERR(tw_session_network_stats(s, 2, &ns), TW_RESULT_INVALID_STATE, "tw_session_network_stats",
                   "not added");
        EXPECT_ERR(tw_session_network_stats(s, 3, &ns), TW_RESULT_INVALID_ARGUMENT, "tw_session_network_stats",
                   "player 3");
        CHECK(tw_session_network_stats(s, 1, &ns) == TW_RESULT_EMPTY);
        CHECK(ns.player == 0xABABABABu && ns.peer == 0xABABABABu); /* untouched */
        tw_session_destroy(s);
    }
}

/* Dropping a player on purpose: tw_session_disconnect_player (P2P) and
 * tw_session_kick_player (RELAY_SERVER) with a NULL handle, the wrong mode, a player out
 * of range, and before the session runs. tw_session_set_timeouts (P2P) the same way,
 * and with a notice not below the drop; tw_session_set_loading (P2P) the same way, and
 * the defaults of the config fields it goes with (progress_timeout_ms and
 * loading_grace_ms, which took the place of reserved bytes at the same offsets). */
static void drop_player(void) {
    tw_session_config cfg;
    tw_session *s = NULL;

    EXPECT_ERR(tw_session_disconnect_player(NULL, 1), TW_RESULT_NULL_ARGUMENT, "tw_session_disconnect_player",
               "session");
    EXPECT_ERR(tw_session_kick_player(NULL, 0, 7), TW_RESULT_NULL_ARGUMENT, "tw_session_kick_player", "session");
    EXPECT_ERR(tw_session_set_timeouts(NULL, 1000, 500), TW_RESULT_NULL_ARGUMENT, "tw_session_set_timeouts",
               "session");
    EXPECT_ERR(tw_session_set_loading(NULL, 1), TW_RESULT_NULL_ARGUMENT, "tw_session_set_loading", "session");

    CHECK(offsetof(tw_session_config, progress_timeout_ms) == 68);
    CHECK(offsetof(tw_session_config, loading_grace_ms) == 316);
    CHECK(sizeof(tw_session_config) == 320);
    tw_session_config_init_default(&cfg);
    CHECK(cfg.progress_timeout_ms == 1500);
    CHECK(cfg.loading_grace_ms == 10000);
    cfg.mode = TW_SESSION_MODE_SYNCTEST;
    cfg.num_players = 2;
    cfg.input_size = 2;
    EXPECT_OK(tw_session_create(&cfg, &s));
    if (s != NULL) {
        EXPECT_ERR(tw_session_disconnect_player(s, 1), TW_RESULT_INVALID_STATE, "tw_session_disconnect_player",
                   "SyncTest");
        EXPECT_ERR(tw_session_kick_player(s, 0, 7), TW_RESULT_INVALID_STATE, "tw_session_kick_player", "SyncTest");
        EXPECT_ERR(tw_session_disconnect_player(s, 2), TW_RESULT_INVALID_ARGUMENT, "tw_session_disconnect_player",
                   "player 2");
        EXPECT_ERR(tw_session_set_timeouts(s, 1000, 500), TW_RESULT_INVALID_STATE, "tw_session_set_timeouts",
                   "SyncTest");
        EXPECT_ERR(tw_session_set_loading(s, 1), TW_RESULT_INVALID_STATE, "tw_session_set_loading", "SyncTest");
        EXPECT_ERR(tw_session_set_loading(s, 0), TW_RESULT_INVALID_STATE, "tw_session_set_loading", "SyncTest");
        tw_session_destroy(s);
        s = NULL;
    }

    cfg.mode = TW_SESSION_MODE_P2P;
    strcpy(cfg.bind_address, "127.0.0.1:0");
    EXPECT_OK(tw_session_create(&cfg, &s));
    if (s != NULL) {
        EXPECT_ERR(tw_session_disconnect_player(s, 1), TW_RESULT_INVALID_STATE, "tw_session_disconnect_player",
                   "not running");
        EXPECT_ERR(tw_session_disconnect_player(s, 9), TW_RESULT_INVALID_ARGUMENT, "tw_session_disconnect_player",
                   "player 9");
        EXPECT_ERR(tw_session_set_timeouts(s, 800, 900), TW_RESULT_INVALID_ARGUMENT, "tw_session_set_timeouts",
                   "disconnect_notify_ms (900) must be below disconnect_timeout_ms (800)");
        EXPECT_OK(tw_session_set_timeouts(s, 0, 900));
        /* Any time, before start too; any non-zero value announces a stall. */
        EXPECT_OK(tw_session_set_loading(s, 1));
        EXPECT_OK(tw_session_set_loading(s, 0xFFFFFFFFu));
        EXPECT_OK(tw_session_set_loading(s, 0));
        tw_session_destroy(s);
        s = NULL;
    }

    cfg.mode = TW_SESSION_MODE_RELAY_SERVER;
    EXPECT_OK(tw_session_create(&cfg, &s));
    if (s != NULL) {
        EXPECT_ERR(tw_session_kick_player(s, 0, 7), TW_RESULT_INVALID_STATE, "tw_session_kick_player", "not running");
        EXPECT_ERR(tw_session_set_loading(s, 1), TW_RESULT_INVALID_STATE, "tw_session_set_loading", "RelayServer");
        EXPECT_ERR(tw_session_kick_player(s, 2, 7), TW_RESULT_INVALID_ARGUMENT, "tw_session_kick_player", "player 2");
        EXPECT_OK(tw_session_start(s));
        EXPECT_ERR(tw_session_kick_player(s, 1, 7), TW_RESULT_INVALID_STATE, "tw_session_kick_player", "free");
        tw_session_destroy(s);
    }
}

static void last_error_buffer(void) {
    char small[8];
    size_t need;
    tw_host_flush(NULL); /* "tw_host_flush: host is NULL" */
    need = tw_last_error_message(NULL, 0);
    CHECK(need == strlen("tw_host_flush: host is NULL") + 1);
    memset(small, 'x', sizeof small);
    CHECK(tw_last_error_message(small, 6) == need);
    CHECK(memcmp(small, "tw_ho", 5) == 0 && small[5] == '\0' && small[6] == 'x');
}

static void live_host(void) {
    static const char *bad_targets[] = {"", "nonsense", "127.0.0.1", "example..com:80", "127.0.0.1:0",
                                        "0.0.0.0:7777", "[::]:7777"};
    tw_host_config cfg;
    tw_link_sim_config link;
    tw_host *h = NULL;
    tw_host *other = SENTINEL_HOST;
    tw_event ev;
    tw_peer_stats ps;
    uint8_t buf[16];
    char addr[64];
    char tiny[4];
    size_t n = 0;
    size_t need;
    uint32_t peer = 55;
    size_t i;
    const uint8_t data[3] = {1, 2, 3};

    tw_host_config_init_default(&cfg);
    EXPECT_OK(tw_host_create(&cfg, "127.0.0.1:0", &h));
    if (h == NULL) {
        fail(__LINE__, "tw_host_create", "no host: skipping the live-host checks");
        return;
    }

    /* NULL outputs. */
    EXPECT_ERR(tw_host_connect(h, "127.0.0.1:9", NULL), TW_RESULT_NULL_ARGUMENT, "tw_host_connect", "out_peer");
    EXPECT_ERR(tw_host_connect(h, NULL, &peer), TW_RESULT_NULL_ARGUMENT, "tw_host_connect", "address");
    EXPECT_ERR(tw_host_send(h, 1, TW_CHANNEL_RELIABLE, NULL, 4), TW_RESULT_NULL_ARGUMENT, "tw_host_send", "data");
    EXPECT_ERR(tw_host_poll_event(h, NULL), TW_RESULT_NULL_ARGUMENT, "tw_host_poll_event", "out_event");
    EXPECT_ERR(tw_host_read_message(h, buf, sizeof buf, NULL), TW_RESULT_NULL_ARGUMENT, "tw_host_read_message",
               "out_len");
    EXPECT_ERR(tw_host_read_message(h, NULL, 4, &n), TW_RESULT_NULL_ARGUMENT, "tw_host_read_message", "buf");
    EXPECT_ERR(tw_host_peer_stats(h, 1, NULL), TW_RESULT_NULL_ARGUMENT, "tw_host_peer_stats", "out_stats");
    EXPECT_ERR(tw_host_get_stats(h, NULL), TW_RESULT_NULL_ARGUMENT, "tw_host_get_stats", "out_stats");
    EXPECT_ERR(tw_host_local_address(h, addr, sizeof addr, NULL), TW_RESULT_NULL_ARGUMENT, "tw_host_local_address",
               "out_len");
    EXPECT_ERR(tw_host_local_address(h, NULL, 8, &n), TW_RESULT_NULL_ARGUMENT, "tw_host_local_address", "buf");

    /* Bad connect targets. */
    for (i = 0; i < sizeof bad_targets / sizeof bad_targets[0]; i++) {
        EXPECT_ERR(tw_host_connect(h, bad_targets[i], &peer), TW_RESULT_INVALID_ARGUMENT, "tw_host_connect", NULL);
    }
    CHECK(peer == 55);

    /* Too-small buffers give the size needed and write nothing else. */
    EXPECT_OK(tw_host_local_address(h, addr, sizeof addr, &n));
    CHECK(n == strlen(addr) + 1 && strncmp(addr, "127.0.0.1:", 10) == 0);
    need = n;
    n = 0;
    memset(tiny, 'x', sizeof tiny);
    EXPECT_ERR(tw_host_local_address(h, tiny, sizeof tiny, &n), TW_RESULT_BUFFER_TOO_SMALL, "tw_host_local_address",
               NULL);
    CHECK(n == need && tiny[0] == 'x');
    n = 0;
    EXPECT_ERR(tw_host_local_address(h, NULL, 0, &n), TW_RESULT_BUFFER_TOO_SMALL, "tw_host_local_address", NULL);
    CHECK(n == need);

    /* The same address again is in use. */
    EXPECT_ERR(tw_host_create(&cfg, addr, &other), TW_RESULT_ADDRESS_IN_USE, "tw_host_create", NULL);
    CHECK(other == SENTINEL_HOST);

    /* Nothing to poll, nothing to read. */
    ev.kind = 12345;
    CHECK(tw_host_poll_event(h, &ev) == TW_RESULT_EMPTY && ev.kind == 12345);
    n = 7;
    EXPECT_ERR(tw_host_read_message(h, buf, sizeof buf, &n), TW_RESULT_INVALID_STATE, "tw_host_read_message", NULL);
    CHECK(n == 7);

    /* Peers and channels. */
    EXPECT_ERR(tw_host_send(h, 0, TW_CHANNEL_RELIABLE, data, 3), TW_RESULT_INVALID_ARGUMENT, "tw_host_send", "peer 0");
    EXPECT_ERR(tw_host_send(h, 4242, TW_CHANNEL_RELIABLE, data, 3), TW_RESULT_UNKNOWN_PEER, "tw_host_send", NULL);
    EXPECT_ERR(tw_host_send(h, 4242, 300, data, 3), TW_RESULT_INVALID_ARGUMENT, "tw_host_send", "channel");
    EXPECT_ERR(tw_host_disconnect(h, 0), TW_RESULT_INVALID_ARGUMENT, "tw_host_disconnect", "peer 0");
    EXPECT_ERR(tw_host_peer_stats(h, 4242, &ps), TW_RESULT_UNKNOWN_PEER, "tw_host_peer_stats", NULL);

    /* Link simulator: unknown direction, struct size, kinds and ranges. */
    tw_link_sim_config_init_default(&link);
    EXPECT_OK(tw_host_set_link_sim(h, TW_DIRECTION_INBOUND, &link));
    EXPECT_OK(tw_host_set_link_sim(h, TW_DIRECTION_INBOUND, NULL));
    EXPECT_ERR(tw_host_set_link_sim(h, 2, &link), TW_RESULT_INVALID_ARGUMENT, "tw_host_set_link_sim", "direction");
    EXPECT_ERR(tw_host_set_link_sim(h, 0xFFFFFFFFu, NULL), TW_RESULT_INVALID_ARGUMENT, "tw_host_set_link_sim",
               "direction");
    link.struct_size = 16;
    EXPECT_ERR(tw_host_set_link_sim(h, TW_DIRECTION_OUTBOUND, &link), TW_RESULT_VERSION_MISMATCH,
               "tw_host_set_link_sim", "struct_size");
    tw_link_sim_config_init_default(&link);
    link.jitter_kind = 9;
    EXPECT_ERR(tw_host_set_link_sim(h, TW_DIRECTION_OUTBOUND, &link), TW_RESULT_INVALID_ARGUMENT,
               "tw_host_set_link_sim", "jitter_kind");
    tw_link_sim_config_init_default(&link);
    link.loss_kind = TW_LOSS_KIND_BERNOULLI;
    link.loss_probability = 1.5;
    EXPECT_ERR(tw_host_set_link_sim(h, TW_DIRECTION_OUTBOUND, &link), TW_RESULT_INVALID_ARGUMENT,
               "tw_host_set_link_sim", "loss_probability");
    tw_link_sim_config_init_default(&link);
    link.seed = 42;
    EXPECT_ERR(tw_host_set_link_sim(h, TW_DIRECTION_OUTBOUND, &link), TW_RESULT_INVALID_ARGUMENT,
               "tw_host_set_link_sim", "seed");

    /* A panic inside a host call is caught and poisons that host. */
    EXPECT_ERR(tw_debug_panic(h), TW_RESULT_PANIC, "tw_debug_panic", "panic: ");
    EXPECT_ERR(tw_host_flush(h), TW_RESULT_PANIC, "tw_host_flush", "earlier panic");
    tw_host_destroy(h);
}

static void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

struct hold_args {
    tw_host *host;
    tw_result result;
};

/* Stays inside a call on the host for 300 ms (retrying while the main thread's own
 * call holds it). */
static void *hold_host_thread(void *p) {
    struct hold_args *a = (struct hold_args *)p;
    do {
        a->result = tw_debug_hold_host(a->host, 300);
    } while (a->result == TW_RESULT_BUSY);
    return NULL;
}

/*
 * Two threads on one host: a call while another thread is inside one returns
 * TW_RESULT_BUSY with a message, and tw_host_destroy during that call returns at once;
 * the call frees the host as it returns (valgrind checks nothing is used after free or
 * leaked).
 */
static void concurrent_calls(void) {
    tw_host_config cfg;
    tw_host *h = NULL;
    pthread_t holder;
    struct hold_args args;
    tw_result r = TW_RESULT_OK;
    int spins;

    tw_host_config_init_default(&cfg);
    EXPECT_OK(tw_host_create(&cfg, "127.0.0.1:0", &h));
    if (h == NULL) {
        return;
    }
    args.host = h;
    args.result = TW_RESULT_PANIC;
    if (pthread_create(&holder, NULL, hold_host_thread, &args) != 0) {
        fail(__LINE__, "pthread_create", "cannot start a thread");
        tw_host_destroy(h);
        return;
    }
    for (spins = 0; spins < 5000; spins++) {
        prime_last_error("tw_host_flush");
        r = tw_host_flush(h);
        if (r == TW_RESULT_BUSY) {
            break;
        }
        sleep_ms(1);
    }
    check_err(__LINE__, "tw_host_flush while another thread is inside tw_debug_hold_host", r, TW_RESULT_BUSY,
              "tw_host_flush", "host is in use by another call");
    tw_host_destroy(h); /* the holding call frees it when it returns */
    pthread_join(holder, NULL);
    CHECK(args.result == TW_RESULT_OK);
}

/*
 * A dead network thread: a FATAL event, then NETWORK_THREAD_GONE from later calls, and
 * tw_host_destroy still returns. Runs in a child process (this program started again
 * with --fatal-path-child; no fork, so it runs on Windows too), so that a crash, or
 * death by SIGPIPE at its default action as in any C program, is reported as a failed
 * check rather than ending the whole test.
 */
static int fatal_path_child(void) {
    tw_host_config cfg;
    tw_host *doomed = NULL;
    tw_event ev;
    const uint8_t data[3] = {1, 2, 3};
    int saw_fatal = 0;
    int spins;

    tw_host_config_init_default(&cfg);
    EXPECT_OK(tw_host_create(&cfg, "127.0.0.1:0", &doomed));
    if (doomed == NULL) {
        return 1;
    }
    EXPECT_OK(tw_debug_kill_network_thread(doomed));
    memset(&ev, 0, sizeof ev);
    for (spins = 0; spins < 5000; spins++) {
        struct timespec ts;
        if (tw_host_poll_event(doomed, &ev) == TW_RESULT_OK && ev.kind == TW_EVENT_KIND_FATAL) {
            saw_fatal = 1;
            break;
        }
        ts.tv_sec = 0;
        ts.tv_nsec = 1000000L;
        nanosleep(&ts, NULL);
    }
    CHECK(saw_fatal && ev.peer == 0 && ev.data.fatal.message[0] != '\0');
    EXPECT_ERR(tw_host_flush(doomed), TW_RESULT_NETWORK_THREAD_GONE, "tw_host_flush", NULL);
    EXPECT_ERR(tw_host_send(doomed, 1, TW_CHANNEL_RELIABLE, data, 3), TW_RESULT_NETWORK_THREAD_GONE, "tw_host_send",
               NULL);
    tw_host_destroy(doomed);
    return failed == 0 ? 0 : 1;
}

/* Runs this program again as `argv0 --fatal-path-child` and waits for it: a child
 * process rather than fork, so the check runs on Windows too. Counts a pass when the
 * child passed; otherwise records why. */
static void fatal_path(const char *argv0) {
    const char *what = "create, kill the network thread, poll FATAL, destroy";
    char *args[3];
    args[0] = (char *)argv0;
    args[1] = (char *)"--fatal-path-child";
    args[2] = NULL;
    fflush(stdout);
    fflush(stderr);
#ifdef _WIN32
    {
        intptr_t code = _spawnv(_P_WAIT, argv0, (const char *const *)args);
        if (code == -1) {
            fail(__LINE__, "_spawnv", "cannot start the child");
        } else if (code != 0) {
            fail(__LINE__, what, "a check failed (see above) or the child crashed");
        } else {
            passed++;
        }
    }
#else
    {
        extern char **environ;
        int status = 0;
        pid_t pid;
        if (posix_spawn(&pid, argv0, NULL, NULL, args, environ) != 0) {
            fail(__LINE__, "posix_spawn", "cannot start the child");
            return;
        }
        if (waitpid(pid, &status, 0) != pid) {
            fail(__LINE__, "waitpid", "cannot wait for the child");
        } else if (WIFSIGNALED(status)) {
            char why[128];
            snprintf(why, sizeof why, "the process was killed by signal %d%s", WTERMSIG(status),
                     WTERMSIG(status) == 13 ? " (SIGPIPE)" : "");
            fail(__LINE__, what, why);
        } else if (WEXITSTATUS(status) != 0) {
            fail(__LINE__, what, "a check failed (see above)");
        } else {
            passed++;
        }
    }
#endif
}

/* The session message side channel: NULLs, sizes, targets, the modes without it, and
 * the read contract with nothing to read. */
static void session_messages(void) {
    tw_session_config cfg;
    tw_session *s = NULL;
    tw_session_message_stats st;
    uint8_t buf[8];
    size_t n = 99;
    static uint8_t big[TW_SESSION_MESSAGE_MAX_SIZE + 1];

    CHECK(tw_session_message_stats_size() == sizeof(tw_session_message_stats) && sizeof st == 64);
    CHECK(TW_SESSION_EVENT_KIND_MESSAGE == 26);
    EXPECT_ERR(tw_session_send_message(NULL, 0, "x", 1), TW_RESULT_NULL_ARGUMENT, "tw_session_send_message",
               "session");
    EXPECT_ERR(tw_session_read_message(NULL, buf, sizeof buf, &n), TW_RESULT_NULL_ARGUMENT,
               "tw_session_read_message", "session");
    EXPECT_ERR(tw_session_get_message_stats(NULL, &st), TW_RESULT_NULL_ARGUMENT, "tw_session_get_message_stats",
               "session");

    tw_session_config_init_default(&cfg);
    cfg.mode = TW_SESSION_MODE_SYNCTEST;
    cfg.num_players = 2;
    cfg.input_size = 2;
    EXPECT_OK(tw_session_create(&cfg, &s));
    if (s != NULL) {
        EXPECT_ERR(tw_session_send_message(s, TW_SESSION_MESSAGE_TARGET_ALL, "x", 1), TW_RESULT_INVALID_STATE,
                   "tw_session_send_message", "SyncTest");
        EXPECT_OK(tw_session_get_message_stats(s, &st));
        CHECK(st.sent == 0 && st.received == 0 && st.dropped_unread == 0 && st.dropped_refused == 0);
        tw_session_destroy(s);
        s = NULL;
    }

    cfg.mode = TW_SESSION_MODE_P2P;
    strcpy(cfg.bind_address, "127.0.0.1:0");
    EXPECT_OK(tw_session_create(&cfg, &s));
    if (s != NULL) {
        EXPECT_ERR(tw_session_send_message(s, 1, "x", 1), TW_RESULT_INVALID_STATE, "tw_session_send_message",
                   "not started");
        EXPECT_ERR(tw_session_send_message(s, 1, NULL, 1), TW_RESULT_NULL_ARGUMENT, "tw_session_send_message",
                   "data");
        EXPECT_OK(tw_session_add_local_player(s, 0));
        EXPECT_OK(tw_session_add_remote_player(s, 1, "127.0.0.1:9"));
        EXPECT_OK(tw_session_start(s));
        EXPECT_ERR(tw_session_send_message(s, 1, big, sizeof big), TW_RESULT_MESSAGE_TOO_LARGE,
                   "tw_session_send_message", "16384");
        EXPECT_ERR(tw_session_send_message(s, 0, "x", 1), TW_RESULT_INVALID_ARGUMENT, "tw_session_send_message",
                   "player 0");
        EXPECT_ERR(tw_session_send_message(s, 5, "x", 1), TW_RESULT_INVALID_ARGUMENT, "tw_session_send_message",
                   "player 5");
        EXPECT_ERR(tw_session_send_message(s, 1, "x", 1), TW_RESULT_INVALID_STATE, "tw_session_send_message",
                   "not connected");
        EXPECT_OK(tw_session_send_message(s, TW_SESSION_MESSAGE_TARGET_ALL, "nobody is there yet", 19));
        EXPECT_ERR(tw_session_read_message(s, buf, sizeof buf, NULL), TW_RESULT_NULL_ARGUMENT,
                   "tw_session_read_message", "out_len");
        EXPECT_ERR(tw_session_read_message(s, NULL, sizeof buf, &n), TW_RESULT_NULL_ARGUMENT,
                   "tw_session_read_message", "buf");
        EXPECT_ERR(tw_session_read_message(s, buf, sizeof buf, &n), TW_RESULT_INVALID_STATE,
                   "tw_session_read_message", "no unread message");
        CHECK(n == 99); /* never written on failure */
        EXPECT_ERR(tw_session_get_message_stats(s, NULL), TW_RESULT_NULL_ARGUMENT, "tw_session_get_message_stats",
                   "out_stats");
        tw_session_destroy(s);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--fatal-path-child") == 0) {
        return fatal_path_child();
    }
    fatal_path(argv[0]);
    versions_and_sizes();
    configs();
    keys_and_tokens();
    security_configs();
    null_host();
    drop_player();
    network_stats();
    synctest_states();
    session_messages();
    last_error_buffer();
    EXPECT_ERR(tw_debug_panic(NULL), TW_RESULT_PANIC, "tw_debug_panic", "panic: ");
    live_host();
    concurrent_calls();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
