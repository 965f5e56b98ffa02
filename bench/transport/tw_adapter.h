/*
 * What the two tickwire adapters share (lib_tickwire.c over UDP,
 * lib_tickwire_carrier.c on an external carrier): the failure report, the check of a
 * call's result, and the host they both drive.
 */
#ifndef BT_TW_ADAPTER_H
#define BT_TW_ADAPTER_H

#include <stdint.h>

#include "tickwire.h"

/* Prints the call that failed with tw_last_error_message; returns -1. */
int bt_tw_fail(const char *what, tw_result r);

#define CHECK(call)                                                                        \
    do {                                                                                   \
        tw_result r_ = (call);                                                             \
        if (TW_FAILED(r_)) {                                                               \
            return bt_tw_fail(#call, r_);                                                  \
        }                                                                                  \
    } while (0)

/* A host as the benchmark runs one: security `mode`, bound to `bind` (an address, or
 * "remote:<id>"), accepting `max_peers`, with room for a busy ping-pong's rate. */
int bt_tw_host(uint32_t mode, const char *bind, uint32_t max_peers, tw_host **out);

#endif
