/*
 * ENet 1.3.17 (Debian's libenet-dev) behind the harness's interface. ENet has no
 * thread: enet_host_service does its receiving, resending and acknowledging, so the
 * harness's poll is one enet_host_service(host, &event, 0) call, as a game's loop
 * would make it, and flush is enet_host_flush. Unreliable messages go on channel 0
 * with no flag (ENet's default, unreliable-sequenced), reliable ones on channel 1 with
 * ENET_PACKET_FLAG_RELIABLE, mirroring tickwire's separate channels.
 */
#define _POSIX_C_SOURCE 200809L

#include <enet/enet.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define CHANNELS 2

static int en_init(void) {
    if (enet_initialize() != 0) {
        fprintf(stderr, "enet: enet_initialize failed\n");
        return -1;
    }
    return 0;
}

static void en_fini(void) {
    enet_deinitialize();
}

static int en_create(const bt_lib *lib, uint16_t port, uint32_t max_peers, void **out) {
    (void)lib;
    ENetAddress a;
    if (enet_address_set_host_ip(&a, "127.0.0.1") != 0) {
        fprintf(stderr, "enet: enet_address_set_host_ip failed\n");
        return -1;
    }
    a.port = port;
    /* A client needs one peer slot for its server. No bandwidth limits (0, 0). */
    ENetHost *h = enet_host_create(&a, max_peers > 0 ? max_peers : 1, CHANNELS, 0, 0);
    if (h == NULL) {
        fprintf(stderr, "enet: enet_host_create failed\n");
        return -1;
    }
    *out = h;
    return 0;
}

static int en_local_port(void *host, uint16_t *out) {
    /* enet_host_create stores the bound address (the real port for port 0). */
    *out = ((ENetHost *)host)->address.port;
    return 0;
}

/* Peer ids are slot numbers + 1, so that 0 stays invalid as in tickwire. */
static uint32_t peer_id(ENetHost *h, ENetPeer *p) {
    return (uint32_t)(p - h->peers) + 1;
}

static int en_connect(void *host, uint16_t port, uint32_t *out_peer) {
    ENetHost *h = host;
    ENetAddress a;
    if (enet_address_set_host_ip(&a, "127.0.0.1") != 0) {
        fprintf(stderr, "enet: enet_address_set_host_ip failed\n");
        return -1;
    }
    a.port = port;
    ENetPeer *p = enet_host_connect(h, &a, CHANNELS, 0);
    if (p == NULL) {
        fprintf(stderr, "enet: enet_host_connect failed\n");
        return -1;
    }
    *out_peer = peer_id(h, p);
    return 0;
}

static int en_send(void *host, uint32_t peer, bt_delivery d, const uint8_t *data, size_t len) {
    ENetHost *h = host;
    if (peer == 0 || peer > h->peerCount) {
        fprintf(stderr, "enet: send to unknown peer %u\n", (unsigned)peer);
        return -1;
    }
    if (h->peers[peer - 1].state != ENET_PEER_STATE_CONNECTED) {
        return 1;
    }
    ENetPacket *pkt = enet_packet_create(data, len, d == BT_RELIABLE ? ENET_PACKET_FLAG_RELIABLE : 0);
    if (pkt == NULL) {
        fprintf(stderr, "enet: enet_packet_create failed\n");
        return -1;
    }
    if (enet_peer_send(&h->peers[peer - 1], d == BT_RELIABLE ? 1 : 0, pkt) != 0) {
        enet_packet_destroy(pkt);
        fprintf(stderr, "enet: enet_peer_send failed\n");
        return -1;
    }
    return 0;
}

static int en_flush(void *host) {
    enet_host_flush(host);
    return 0;
}

static int en_poll(void *host, bt_event *ev, uint8_t *buf, size_t cap) {
    ENetHost *h = host;
    ENetEvent e;
    int r = enet_host_service(h, &e, 0);
    if (r < 0) {
        fprintf(stderr, "enet: enet_host_service failed\n");
        return -1;
    }
    if (r == 0) {
        return 0;
    }
    ev->peer = peer_id(h, e.peer);
    switch (e.type) {
    case ENET_EVENT_TYPE_CONNECT:
        ev->kind = BT_EV_CONNECTED;
        return 1;
    case ENET_EVENT_TYPE_DISCONNECT:
        ev->kind = BT_EV_DISCONNECTED;
        return 1;
    case ENET_EVENT_TYPE_RECEIVE: {
        size_t n = e.packet->dataLength;
        int ok = n <= cap;
        if (ok) {
            memcpy(buf, e.packet->data, n);
        }
        enet_packet_destroy(e.packet);
        if (!ok) {
            fprintf(stderr, "enet: a %zu-byte message for a %zu-byte buffer\n", n, cap);
            return -1;
        }
        ev->kind = BT_EV_MESSAGE;
        ev->delivery = e.channelID == 1 ? BT_RELIABLE : BT_UNRELIABLE;
        ev->len = n;
        return 1;
    }
    default:
        return 0;
    }
}

static void en_destroy(void *host) {
    ENetHost *h = host;
    /* Tell connected peers goodbye, as tw_host_destroy does, then free. */
    for (size_t i = 0; i < h->peerCount; i++) {
        if (h->peers[i].state == ENET_PEER_STATE_CONNECTED) {
            enet_peer_disconnect_now(&h->peers[i], 0);
        }
    }
    enet_host_destroy(h);
}

const bt_lib bt_lib_enet = {
    "ENet", 0, en_init, en_fini, en_create, en_local_port, en_connect, en_send, en_flush, en_poll, en_destroy,
};
