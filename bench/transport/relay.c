/*
 * Rows 5, 6, 7 and 5b: a server process of one host with 64 clients, on the load rig
 * (rig.c), whose clients run in this process.
 *
 * Row 5, the relay: each client sends a 32-byte unreliable input per tick and flushes,
 * then polls; the server's 60 Hz loop echoes every input back to its sender (the
 * relay's per-tick broadcast, one message per client per tick) and flushes. It reports
 * CPU per tick of the whole server process and of its engine thread. Row 6 then counts
 * this process's threads (the 64 client hosts and the harness); row 7 stops calling
 * either library for plan->idle_ms and sums the context switches of every thread but
 * the sleeping harness thread.
 *
 * Row 5b, issue 35's server shape: the same clients and inputs, but the server reads
 * the inputs without echoing them, then sends each connected client one 256-byte
 * unreliable message and flushes: the server's own state going down each tick.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>

#include "bench.h"
#include "rig.h"

int bt_measure_relay(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    bt_rig_config cfg = {BT_RELAY_CLIENTS, 0, 1, BT_DOWN_ECHO, 0, plan->relay_warmup_ticks, plan->relay_ticks};
    bt_rig rig;
    int rc = bt_rig_run(lib, &cfg, &rig);
    if (rc == 0) {
        res->threads = bt_thread_count();
        res->cpu_ticks += rig.server.ticks;
        res->cpu_all_ns += rig.server.all_ns;
        res->cpu_engine_ns += rig.server.engine_ns;
        res->relay_inputs += rig.server.echoed;
        res->relay_echoes += rig.clients.received;
        /* Connected, and no library call until the window ends. */
        uint64_t before, after, t0 = bt_now_ns();
        rc = bt_context_switches(&before);
        bt_sleep_ms(plan->idle_ms);
        rc = rc == 0 ? bt_context_switches(&after) : rc;
        res->idle_seconds += (double)(bt_now_ns() - t0) / 1e9;
        res->idle_switches += after - before;
    }
    if (bt_rig_stop(&rig) != 0) {
        rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "%s: relay with %d clients failed\n", lib->name, BT_RELAY_CLIENTS);
    }
    return rc;
}

int bt_measure_shape(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    bt_rig_config cfg = {BT_RELAY_CLIENTS, 0, 1, BT_DOWN_STATE, BT_STATE_SIZE, plan->shape_warmup_ticks,
                         plan->shape_ticks};
    bt_rig rig;
    int rc = bt_rig_run(lib, &cfg, &rig);
    if (rc == 0) {
        bt_load_add(&res->shape, &rig);
    }
    if (bt_rig_stop(&rig) != 0) {
        rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "%s: the server shape with %d clients failed\n", lib->name, BT_RELAY_CLIENTS);
    }
    return rc;
}
