/*
 * The log hook from C (tw_host_set_log): records arrive only from inside
 * tw_host_poll_event, on the polling thread, NUL-terminated, at or above the level
 * asked for; a call on the same host from inside the hook gets TW_RESULT_BUSY; a bad
 * level is refused; NULL turns the log off; a network-thread fault is logged as ERROR.
 *
 * Prints "N passed, N failed" as its last line; exits non-zero if anything failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tickwire.h"

/* A test hook of a library built with the cargo feature "test-hooks" (tests/run.sh
 * builds it so); not in the header. */
#ifdef __cplusplus
extern "C" {
#endif
tw_result tw_debug_kill_network_thread(tw_host *host);
#ifdef __cplusplus
}
#endif

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

static void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* What one hook has seen: its `user`. */
typedef struct {
    tw_host *host;          /* the host it is set on, to call back into */
    int in_poll;            /* set by the test around tw_host_poll_event */
    pthread_t poller;       /* the thread that polls */
    int records;
    int outside_poll;       /* records delivered outside poll_event */
    int wrong_thread;       /* records delivered on another thread */
    int bad_text;           /* missing NUL, too long or empty */
    uint32_t min_level_seen;
    uint32_t max_level_seen;
    int reentry_not_busy;   /* calls on the same host from the hook that were not BUSY */
    char last[256];
    int saw_connection_up;
    int saw_fault;
} sink;

static void on_log(void *user, uint32_t level, const char *message, size_t len) {
    sink *s = (sink *)user;
    s->records++;
    if (!s->in_poll) s->outside_poll++;
    if (!pthread_equal(pthread_self(), s->poller)) s->wrong_thread++;
    if (len == 0 || len > 255 || message[len] != '\0' || strlen(message) != len) s->bad_text++;
    if (s->min_level_seen == 0 || level < s->min_level_seen) s->min_level_seen = level;
    if (level > s->max_level_seen) s->max_level_seen = level;
    if (tw_host_flush(s->host) != TW_RESULT_BUSY) s->reentry_not_busy++;
    if (tw_host_set_log(s->host, NULL, NULL, 0) != TW_RESULT_BUSY) s->reentry_not_busy++;
    memcpy(s->last, message, len + 1);
    if (strstr(message, "connection up: peer") != NULL) s->saw_connection_up = 1;
    if (level == TW_LOG_LEVEL_ERROR && strstr(message, "network thread") != NULL) s->saw_fault = 1;
}

/* Polls every event of `h`, marked as inside poll_event for the hook; returns 1 if
 * one was FATAL. */
static int poll_all(tw_host *h, sink *s) {
    tw_event e;
    int fatal = 0;
    s->in_poll = 1;
    while (tw_host_poll_event(h, &e) == TW_RESULT_OK) {
        if (e.kind == TW_EVENT_KIND_FATAL) fatal = 1;
    }
    s->in_poll = 0;
    return fatal;
}

static tw_host *make_host(uint32_t max_clients) {
    tw_host_config cfg;
    tw_host *h = NULL;
    tw_host_config_init_default(&cfg);
    cfg.max_clients = max_clients;
    if (tw_host_create(&cfg, "127.0.0.1:0", &h) != TW_RESULT_OK) return NULL;
    return h;
}

int main(void) {
    tw_host *server = make_host(4);
    tw_host *client = make_host(0);
    sink srv, cli;
    char addr[64];
    size_t n = 0;
    uint32_t peer = 0;
    int i;
    memset(&srv, 0, sizeof srv);
    memset(&cli, 0, sizeof cli);
    CHECK(server != NULL && client != NULL);
    if (server == NULL || client == NULL) return 1;
    srv.host = server;
    cli.host = client;
    srv.poller = cli.poller = pthread_self();

    CHECK(tw_host_set_log(server, on_log, &srv, 5) == TW_RESULT_INVALID_ARGUMENT);
    CHECK(tw_host_set_log(NULL, on_log, &srv, TW_LOG_LEVEL_INFO) == TW_RESULT_NULL_ARGUMENT);
    CHECK(tw_host_set_log(server, on_log, &srv, TW_LOG_LEVEL_INFO) == TW_RESULT_OK);
    /* The client asks for warnings only: a clean connection gives it none. */
    CHECK(tw_host_set_log(client, on_log, &cli, TW_LOG_LEVEL_WARN) == TW_RESULT_OK);

    CHECK(tw_host_local_address(server, addr, sizeof addr, &n) == TW_RESULT_OK);
    CHECK(tw_host_connect(client, addr, &peer) == TW_RESULT_OK);
    /* Nothing is delivered while nobody polls. */
    sleep_ms(200);
    CHECK(srv.records == 0);
    for (i = 0; i < 500 && !srv.saw_connection_up; i++) {
        poll_all(server, &srv);
        poll_all(client, &cli);
        sleep_ms(5);
    }
    CHECK(srv.saw_connection_up);
    CHECK(srv.records >= 2); /* the note of set_log, the connection */
    CHECK(srv.outside_poll == 0);
    CHECK(srv.wrong_thread == 0);
    CHECK(srv.bad_text == 0);
    CHECK(srv.min_level_seen >= TW_LOG_LEVEL_ERROR && srv.max_level_seen <= TW_LOG_LEVEL_INFO);
    CHECK(srv.reentry_not_busy == 0);
    CHECK(cli.records == 0);

    /* NULL turns it off. */
    CHECK(tw_host_set_log(server, NULL, NULL, TW_LOG_LEVEL_DEBUG) == TW_RESULT_OK);
    {
        int before = srv.records;
        CHECK(tw_host_disconnect(client, peer) == TW_RESULT_OK);
        for (i = 0; i < 40; i++) {
            poll_all(server, &srv);
            poll_all(client, &cli);
            sleep_ms(5);
        }
        CHECK(srv.records == before);
    }

    /* A fault of the network thread is an ERROR record, delivered by a later poll. */
    CHECK(tw_host_set_log(client, on_log, &cli, TW_LOG_LEVEL_ERROR) == TW_RESULT_OK);
    CHECK(tw_debug_kill_network_thread(client) == TW_RESULT_OK);
    for (i = 0; i < 500 && !cli.saw_fault; i++) {
        poll_all(client, &cli);
        sleep_ms(5);
    }
    CHECK(cli.saw_fault);
    CHECK(cli.outside_poll == 0 && cli.wrong_thread == 0 && cli.bad_text == 0);
    if (cli.saw_fault) printf("logged: %s\n", cli.last);

    tw_host_destroy(client);
    tw_host_destroy(server);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
