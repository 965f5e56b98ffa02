/*
 * Rows 9 and 10, on the load rig (rig.c).
 *
 * Row 9, the idle server loop: a server process of one host whose 60 Hz loop polls
 * everything and sends nothing (nor flushes), measured as a share of one core (its CPU
 * time over the wall time of the window): (a) with no client at all, (b) with 64
 * connected clients, in this process, that keep polling at 60 Hz and send nothing, so
 * that only the libraries' own keepalives and their acknowledgements flow.
 *
 * Row 10, scale: issue 35's server shape (32-byte input up, one 256-byte message down
 * per client per tick) at each of the plan's sizes, the server process running
 * ceil(N / 64) hosts of up to 64 clients each in its one 60 Hz loop, the N client hosts
 * in forked client processes. The figure is CPU per client-tick of the whole server
 * process; beside it, whether the server kept its tick, whether the clients kept theirs
 * (the inputs that arrived) and whether they received what it sent, because a server
 * that falls behind, or clients that do, would make it look cheap.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>

#include "bench.h"
#include "rig.h"

int bt_measure_idle(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    for (int v = 0; v < 2; v++) {
        bt_rig_config cfg = {v == 0 ? 0 : BT_RELAY_CLIENTS, 0, 0, BT_DOWN_NONE, 0, plan->idle_loop_warmup_ticks,
                             plan->idle_loop_ticks};
        bt_rig rig;
        int rc = bt_rig_run(lib, &cfg, &rig);
        if (rc == 0) {
            bt_load_add(&res->idle_loop[v], &rig);
        }
        if (bt_rig_stop(&rig) != 0) {
            rc = -1;
        }
        if (rc != 0) {
            fprintf(stderr, "%s: the idle server loop with %u clients failed\n", lib->name, (unsigned)cfg.clients);
            return -1;
        }
    }
    return 0;
}

int bt_measure_scale(const bt_lib *lib, const bt_plan *plan, bt_result *res) {
    for (int s = 0; s < BT_SCALE_MAX && plan->scale_clients[s] > 0; s++) {
        bt_rig_config cfg = {plan->scale_clients[s], plan->scale_client_procs, 1, BT_DOWN_STATE, BT_STATE_SIZE,
                             plan->scale_warmup_ticks, plan->scale_ticks};
        bt_rig rig;
        int rc = bt_rig_run(lib, &cfg, &rig);
        if (rc == 0) {
            bt_load_add(&res->scale[s], &rig);
            /* How the clients' side kept up, for the reader of the progress lines: on
             * 2 cores the client processes share the machine with the server. */
            const bt_rig_clients *c = &rig.clients;
            fprintf(stderr,
                    "  %u clients in %d process%s: server %.1f%% of a core, %llu of %llu ticks overran; clients "
                    "%.1f%% of a core, %llu of %llu loop ticks overran; the machine %.0f%% busy (all cores)\n",
                    (unsigned)cfg.clients, cfg.client_procs, cfg.client_procs == 1 ? "" : "es",
                    rig.server.wall_ns ? 100.0 * (double)rig.server.all_ns / (double)rig.server.wall_ns : 0.0,
                    (unsigned long long)rig.server.overruns, (unsigned long long)rig.server.ticks,
                    c->wall_ns ? 100.0 * (double)c->cpu_ns / (double)c->wall_ns * cfg.client_procs : 0.0,
                    (unsigned long long)c->overruns, (unsigned long long)c->ticks,
                    rig.server.machine_total
                        ? 100.0 * (double)rig.server.machine_busy / (double)rig.server.machine_total
                        : 0.0);
        }
        if (bt_rig_stop(&rig) != 0) {
            rc = -1;
        }
        if (rc != 0) {
            fprintf(stderr, "%s: scale with %u clients failed\n", lib->name, (unsigned)cfg.clients);
            return -1;
        }
    }
    return 0;
}
