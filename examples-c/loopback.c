/*
 * tickwire loopback example: a server and a client host in one process, connected
 * over 127.0.0.1. The client sends reliable and unreliable messages, the server
 * answers, both print their connection stats, then everything is cleaned up.
 *
 *   cargo build
 *   ln -sf libtickwire.so target/debug/libtickwire.so.1   # its SONAME (the ABI version)
 *   cc -std=c11 -Wall -Wextra -pedantic -Iinclude examples-c/loopback.c \
 *      -Ltarget/debug -ltickwire -o build/loopback
 *   LD_LIBRARY_PATH=target/debug build/loopback
 *
 * Exit status 0 on success, 1 on failure. Every wait has a deadline.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tickwire.h"

#define DEADLINE_MS 5000.0
#define RELIABLE_COUNT 3

/* Prints the failing call, its code and the last error, and returns 0. */
static int report(const char *what, tw_result r) {
    char msg[512];
    tw_last_error_message(msg, sizeof msg);
    fprintf(stderr, "loopback: %s failed: %s (%d): %s\n", what, tw_result_str(r), (int)r, msg);
    return 0;
}

#define TRY(call)                                                                          \
    do {                                                                                   \
        tw_result r_ = (call);                                                             \
        if (TW_FAILED(r_)) {                                                               \
            report(#call, r_);                                                             \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* What one side has seen so far. */
typedef struct side {
    const char *name;
    tw_host *host;
    uint32_t peer;            /* the other side's peer id, once connected */
    int connected;
    int disconnected;
    int reliable_received;
    int unreliable_received;
    int failed;
} side;

/*
 * Copies the payload of the message just polled. Shows the buffer contract: try a
 * small buffer, and on TW_RESULT_BUFFER_TOO_SMALL allocate the size reported.
 * Returns a NUL-terminated heap copy (free it), or NULL on failure.
 */
static char *read_payload(tw_host *host) {
    uint8_t small[16];
    size_t len = 0;
    tw_result r = tw_host_read_message(host, small, sizeof small, &len);
    char *text = NULL;
    if (r == TW_RESULT_OK) {
        text = (char *)malloc(len + 1);
        if (text != NULL) {
            memcpy(text, small, len);
        }
    } else if (r == TW_RESULT_BUFFER_TOO_SMALL) {
        text = (char *)malloc(len + 1);
        if (text != NULL && TW_FAILED(r = tw_host_read_message(host, (uint8_t *)text, len, &len))) {
            report("tw_host_read_message (second try)", r);
            free(text);
            return NULL;
        }
    } else {
        report("tw_host_read_message", r);
        return NULL;
    }
    if (text != NULL) {
        text[len] = '\0';
    }
    return text;
}

/* Drains one host's events, the way an engine does once per frame. */
static void drain(side *s, side *other) {
    tw_event ev;
    tw_result r;
    while ((r = tw_host_poll_event(s->host, &ev)) == TW_RESULT_OK) {
        switch (ev.kind) {
        case TW_EVENT_KIND_CONNECTED:
            printf("%s: connected to peer %u at %s\n", s->name, (unsigned)ev.peer, ev.data.connected.address);
            s->peer = ev.peer;
            s->connected = 1;
            break;
        case TW_EVENT_KIND_DISCONNECTED:
            printf("%s: peer %u disconnected (reason %u)\n", s->name, (unsigned)ev.peer,
                   (unsigned)ev.data.disconnected.reason);
            s->disconnected = 1;
            break;
        case TW_EVENT_KIND_MESSAGE: {
            char *text = read_payload(s->host);
            if (text == NULL) {
                s->failed = 1;
                break;
            }
            if (ev.data.message.channel == TW_CHANNEL_RELIABLE) {
                s->reliable_received++;
                printf("%s: reliable message %d: \"%s\"\n", s->name, s->reliable_received, text);
                /* The server answers every reliable message, reliably. */
                if (other != NULL) {
                    char reply[64];
                    snprintf(reply, sizeof reply, "ack %d", s->reliable_received);
                    r = tw_host_send(s->host, ev.peer, TW_CHANNEL_RELIABLE, (const uint8_t *)reply, strlen(reply));
                    if (TW_FAILED(r)) {
                        report("tw_host_send (reply)", r);
                        s->failed = 1;
                    }
                }
            } else {
                if (s->unreliable_received == 0) {
                    printf("%s: unreliable message on channel %u: \"%s\"\n", s->name,
                           (unsigned)ev.data.message.channel, text);
                }
                s->unreliable_received++;
            }
            free(text);
            break;
        }
        case TW_EVENT_KIND_FATAL:
            fprintf(stderr, "%s: fatal: %s\n", s->name, ev.data.fatal.message);
            s->failed = 1;
            break;
        default:
            break;
        }
    }
    if (TW_FAILED(r)) {
        report("tw_host_poll_event", r);
        s->failed = 1;
    }
}

/* One frame for both hosts: flush what was queued, then handle what arrived. */
static int frame(side *server, side *client) {
    tw_result r;
    if (TW_FAILED(r = tw_host_flush(client->host))) {
        return report("tw_host_flush (client)", r);
    }
    if (TW_FAILED(r = tw_host_flush(server->host))) {
        return report("tw_host_flush (server)", r);
    }
    drain(server, client);
    drain(client, NULL);
    sleep_ms(1);
    return !(server->failed || client->failed);
}

static void print_stats(const side *s) {
    tw_peer_stats ps;
    tw_host_stats hs;
    tw_result r = tw_host_peer_stats(s->host, s->peer, &ps);
    if (TW_FAILED(r)) {
        report("tw_host_peer_stats", r);
        return;
    }
    r = tw_host_get_stats(s->host, &hs);
    if (TW_FAILED(r)) {
        report("tw_host_stats", r);
        return;
    }
    printf("%s: rtt %.0f us (min %.0f), loss %.3f, sent %llu packets / %llu bytes, "
           "received %llu packets / %llu bytes; host: %llu datagrams in, %llu out\n",
           s->name, ps.srtt_us, ps.min_rtt_us, ps.loss, (unsigned long long)ps.packets_sent,
           (unsigned long long)ps.bytes_sent, (unsigned long long)ps.packets_received,
           (unsigned long long)ps.bytes_received, (unsigned long long)hs.datagrams_received,
           (unsigned long long)hs.datagrams_sent);
}

int main(void) {
    int ok = 0;
    side server;
    side client;
    tw_host_config cfg;
    char server_addr[64];
    size_t addr_len = 0;
    double deadline;
    int i;

    memset(&server, 0, sizeof server);
    memset(&client, 0, sizeof client);
    server.name = "server";
    client.name = "client";

    printf("tickwire %s (ABI %u)\n", tw_version_string(), (unsigned)tw_abi_version());
    if (tw_abi_version() != TW_ABI_VERSION || tw_event_size() != sizeof(tw_event) ||
        tw_host_config_size() != sizeof(tw_host_config)) {
        fprintf(stderr, "loopback: the library does not match include/tickwire.h\n");
        return 1;
    }

    TRY(tw_host_config_init_default(&cfg));
    cfg.max_clients = 8;
    TRY(tw_host_create(&cfg, "127.0.0.1:0", &server.host));
    TRY(tw_host_config_init_default(&cfg)); /* a client accepts no connections */
    TRY(tw_host_create(&cfg, "127.0.0.1:0", &client.host));
    TRY(tw_host_local_address(server.host, server_addr, sizeof server_addr, &addr_len));
    printf("server listening on %s\n", server_addr);

    TRY(tw_host_connect(client.host, server_addr, &client.peer));
    deadline = now_ms() + DEADLINE_MS;
    while (!(server.connected && client.connected)) {
        if (now_ms() > deadline) {
            fprintf(stderr, "loopback: no connection within %.0f ms\n", DEADLINE_MS);
            goto cleanup;
        }
        if (!frame(&server, &client)) {
            goto cleanup;
        }
    }

    /* Reliable messages arrive once each, in order; the server acks each one. */
    for (i = 1; i <= RELIABLE_COUNT; i++) {
        char text[32];
        snprintf(text, sizeof text, "hello %d", i);
        TRY(tw_host_send(client.host, client.peer, TW_CHANNEL_RELIABLE, (const uint8_t *)text, strlen(text)));
    }
    /* Unreliable messages may be lost, so keep sending one per frame until one lands. */
    deadline = now_ms() + DEADLINE_MS;
    while (server.reliable_received < RELIABLE_COUNT || client.reliable_received < RELIABLE_COUNT ||
           server.unreliable_received == 0 || client.unreliable_received == 0) {
        static const char ping[] = "ping";
        static const char pong[] = "pong";
        if (now_ms() > deadline) {
            fprintf(stderr, "loopback: messages missing after %.0f ms\n", DEADLINE_MS);
            goto cleanup;
        }
        if (server.unreliable_received == 0) {
            TRY(tw_host_send(client.host, client.peer, TW_CHANNEL_UNRELIABLE, (const uint8_t *)ping, 4));
        }
        if (client.unreliable_received == 0) {
            TRY(tw_host_send(server.host, server.peer, TW_CHANNEL_SEQUENCED, (const uint8_t *)pong, 4));
        }
        if (!frame(&server, &client)) {
            goto cleanup;
        }
    }

    /* Stats are snapshots the network thread publishes every few milliseconds: keep
     * running frames until the client's snapshot includes the exchange. */
    deadline = now_ms() + DEADLINE_MS;
    for (;;) {
        tw_peer_stats ps;
        TRY(tw_host_peer_stats(client.host, client.peer, &ps));
        if (ps.packets_received > 0 && ps.srtt_us > 0.0) {
            break;
        }
        if (now_ms() > deadline) {
            fprintf(stderr, "loopback: stats never showed the traffic\n");
            goto cleanup;
        }
        if (!frame(&server, &client)) {
            goto cleanup;
        }
    }
    print_stats(&server);
    print_stats(&client);

    /* A polite goodbye: the server sees the client leave. */
    TRY(tw_host_disconnect(client.host, client.peer));
    deadline = now_ms() + DEADLINE_MS;
    while (!server.disconnected) {
        if (now_ms() > deadline) {
            fprintf(stderr, "loopback: the server did not see the disconnect\n");
            goto cleanup;
        }
        if (!frame(&server, &client)) {
            goto cleanup;
        }
    }
    ok = 1;

cleanup:
    tw_host_destroy(client.host); /* NULL is a no-op */
    tw_host_destroy(server.host);
    printf("loopback: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
