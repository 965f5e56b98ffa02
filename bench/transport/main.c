/*
 * bench/transport: tickwire's transport against ENet 1.3.17, side by side, in one run
 * (issues 17 and 35). Both libraries are driven through their C APIs by the same code
 * (bench.h's interface): the same 32-byte messages, the same loops, the same proxy.
 * The order of the libraries alternates between repetitions (forward, then reversed),
 * and each measurement runs for every library before the next measurement starts, so
 * that a slow moment of the machine does not land on one library only. Samples and
 * counters of all repetitions are pooled into one table.
 *
 *   bench-transport [--smoke] [--reps N] [--only pingpong|gameloop|relay|shape|idle|scale]
 *                 [--relay-ticks N] [--scale-procs N] [--scale-ticks N] [--scale-clients N]
 *                 [--lib enet|plaintext|encrypted|carrier]... [--pin]
 *
 * --only runs one measurement (rows 1, 2, 8; rows 3, 4; rows 5, 6, 7; row 5b, issue 35's
 * server shape; row 9, the idle server loop; or row 10, the server at 64, 512 and 2,048
 * clients), for comparing builds side by side or profiling one scenario; the other rows
 * print n/a.
 * --relay-ticks sets how many server ticks rows 5 and 5b measure (a longer window for perf).
 * --scale-procs sets how many processes run row 10's client hosts (default 1, at most 8).
 * --scale-ticks sets how many server ticks each size of row 10 measures, and --scale-clients
 * runs that one size only (both for profiling one size of row 10).
 * --lib (repeatable) runs only the libraries named; the others' columns print n/a.
 * --pin puts the server processes on core 0 and this process and its client processes on
 * core 1 (pin.c): for comparing builds, not for the table, which is measured unpinned.
 * --smoke: a few seconds; it checks behaviour (every message of the RTT rows and every
 * reliable message through the lossy proxy delivered; in rows 5b and 10 every client
 * connected and at least 99% of the inputs and of the server's messages arrived; the
 * figures finite), never speed, prints "N passed, N failed" and exits 1 on a failure.
 * Row 10 runs at 64 and 128 clients there. Without it the run takes about 8 minutes
 * and only a failure to measure makes it exit 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <enet/enet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "tickwire.h"

/* The three over UDP, then tickwire on an external carrier (lib_tickwire_carrier.c),
 * which runs the ping-pong rows only and has a table of its own beside encrypted UDP. */
#define NLIBS 4
#define NUDP 3
#define CARRIER 3

static const bt_lib *const LIBS[NLIBS] = {&bt_lib_enet, &bt_lib_tickwire_plain, &bt_lib_tickwire_encrypted,
                                          &bt_lib_tickwire_carrier};

typedef int (*measure_fn)(const bt_lib *, const bt_plan *, bt_result *);
static const measure_fn MEASURES[] = {bt_measure_pingpong, bt_measure_game_loop, bt_measure_relay,
                                     bt_measure_shape,    bt_measure_idle,      bt_measure_scale};
static const char *const MEASURE_NAMES[] = {"ping-pong (rows 1, 2, 8)",
                                            "60 Hz through the proxy (rows 3, 4)",
                                            "relay, 64 clients (rows 5, 6, 7)",
                                            "server shape, 64 clients (row 5b)",
                                            "idle server loop (row 9)",
                                            "scale, many hosts in one server process (row 10)"};
#define NMEASURES (sizeof MEASURES / sizeof MEASURES[0])

static const bt_plan FULL = {
    .rtt_warmup = 200, .rtt_samples = 10000, .alloc_round_trips = 2000,
    .impaired_ticks = 900, .impaired_warmup_ticks = 120, .wire_ticks = 300,
    .relay_warmup_ticks = 60, .relay_ticks = 300, .idle_ms = 3000,
    .shape_warmup_ticks = 60, .shape_ticks = 300,
    .idle_loop_warmup_ticks = 60, .idle_loop_ticks = 600, /* 10 s */
    .scale_warmup_ticks = 60, .scale_ticks = 300, .scale_clients = {64, 512, 2048}, .scale_client_procs = 1,
    .seed = 17,
};
/* Short windows: the smoke checks what arrives, not what it costs. */
static const bt_plan SMOKE = {
    .rtt_warmup = 20, .rtt_samples = 200, .alloc_round_trips = 200,
    .impaired_ticks = 90, .impaired_warmup_ticks = 15, .wire_ticks = 60,
    .relay_warmup_ticks = 15, .relay_ticks = 30, .idle_ms = 500,
    .shape_warmup_ticks = 5, .shape_ticks = 10,
    .idle_loop_warmup_ticks = 2, .idle_loop_ticks = 6,
    .scale_warmup_ticks = 5, .scale_ticks = 10, .scale_clients = {64, 128, 0}, .scale_client_procs = 1,
    .seed = 17,
};

/* --only's names, in MEASURES' order. */
static const char *const ONLY_NAMES[] = {"pingpong", "gameloop", "relay", "shape", "idle", "scale"};

static int only_index(const char *name) {
    for (int m = 0; m < (int)(sizeof ONLY_NAMES / sizeof ONLY_NAMES[0]); m++) {
        if (strcmp(name, ONLY_NAMES[m]) == 0) {
            return m;
        }
    }
    return -1;
}

/* --lib's names, in LIBS' order. */
static const char *const LIB_NAMES[NLIBS] = {"enet", "plaintext", "encrypted", "carrier"};

static int lib_index(const char *name) {
    for (int l = 0; l < NLIBS; l++) {
        if (strcmp(name, LIB_NAMES[l]) == 0) {
            return l;
        }
    }
    return -1;
}

/* --- the table ---------------------------------------------------------------------- */
typedef double (*figure_fn)(bt_result *);

static double per(uint64_t a, uint64_t b) {
    return b == 0 ? NAN : (double)a / (double)b;
}
static double f_urtt50(bt_result *r) { return bt_samples_quantile(&r->rtt_us[BT_UNRELIABLE], 0.50); }
static double f_urtt99(bt_result *r) { return bt_samples_quantile(&r->rtt_us[BT_UNRELIABLE], 0.99); }
static double f_one50(bt_result *r) { return bt_samples_quantile(&r->rtt_one_thread_us, 0.50); }
static double f_rrtt50(bt_result *r) { return bt_samples_quantile(&r->rtt_us[BT_RELIABLE], 0.50); }
static double f_rrtt99(bt_result *r) { return bt_samples_quantile(&r->rtt_us[BT_RELIABLE], 0.99); }
static double f_imp50(bt_result *r) { return bt_samples_quantile(&r->impaired_ms, 0.50); }
static double f_imp99(bt_result *r) { return bt_samples_quantile(&r->impaired_ms, 0.99); }
/* Per input that arrived: ENet's packet throttle drops some unreliable inputs before
 * they reach the wire (row "arrived"), and bytes never sent are not a saving. */
static double f_up(bt_result *r) { return per(r->wire_up_bytes, r->wire_delivered); }
static double f_down(bt_result *r) { return per(r->wire_down_bytes, r->wire_delivered); }
static double f_arrived(bt_result *r) { return 100.0 * per(r->wire_delivered, r->wire_inputs); }
static double f_cpu_all(bt_result *r) { return per(r->cpu_all_ns, r->cpu_ticks) / 1e3; }
static double f_cpu_engine(bt_result *r) { return per(r->cpu_engine_ns, r->cpu_ticks) / 1e3; }
static double f_threads(bt_result *r) { return (double)r->threads; }
static double f_idle(bt_result *r) { return r->idle_seconds > 0 ? (double)r->idle_switches / r->idle_seconds : NAN; }
static double f_idle_host(bt_result *r) { return f_idle(r) / BT_RELAY_CLIENTS; }
static double f_alloc_send(bt_result *r) { return per(r->alloc[BT_BUCKET_SEND], r->alloc_messages); }
static double f_alloc_recv(bt_result *r) { return per(r->alloc[BT_BUCKET_RECV], r->alloc_messages); }
static double f_alloc_other(bt_result *r) { return per(r->alloc[BT_BUCKET_OTHER], r->alloc_messages); }

/* Loopback loses a datagram only when a socket's buffer overflows: one in a hundred is
 * room for that, not for a server or clients that fell behind or dropped messages. */
#define DELIVERED_MIN 99.0

/* Rows 5b, 9 and 10: figures of a server under load (bt_load). */
typedef double (*load_fn)(const bt_load *);
static double l_cpu_tick(const bt_load *l) { return per(l->all_ns, l->ticks) / 1e3; }
static double l_engine_tick(const bt_load *l) { return per(l->engine_ns, l->ticks) / 1e3; }
static double l_core(const bt_load *l) { return 100.0 * per(l->all_ns, l->wall_ns); }
static double l_cpu_client_tick(const bt_load *l) { return per(l->all_ns, l->client_ticks) / 1e3; }
static double l_overran(const bt_load *l) { return 100.0 * per(l->overruns, l->ticks); }
static double l_tick_hz(const bt_load *l) { return 1e9 * per(l->ticks, l->wall_ns); }
static double l_inputs(const bt_load *l) { return 100.0 * per(l->inputs, l->inputs_expected); }
/* Whether the window's inputs all arrived. The server counts what its polls in the
 * window read, and the clients' ticks are not in step with its own: a tick's inputs may
 * land just before or just after the poll that opens or closes the window, so a count
 * one tick's worth short per run (of a 10-tick smoke window, a tenth) is still all of
 * them. */
static int l_inputs_arrived(const bt_load *l) {
    uint64_t edge = l->ticks ? l->inputs_expected * l->runs / l->ticks : 0;
    return l->inputs_expected > 0 && 100.0 * per(l->inputs + edge, l->inputs_expected) >= DELIVERED_MIN;
}
/* Against one message per client per tick, not against what the server managed to
 * send: a client the server lost counts as not served. */
static double l_received(const bt_load *l) { return 100.0 * per(l->received, l->sent_expected); }
static double l_machine(const bt_load *l) { return 100.0 * per(l->machine_busy, l->machine_total); }
static double f_shape_all(bt_result *r) { return l_cpu_tick(&r->shape); }
static double f_shape_engine(bt_result *r) { return l_engine_tick(&r->shape); }
static double f_shape_received(bt_result *r) { return l_received(&r->shape); }
static double f_idle_none(bt_result *r) { return l_core(&r->idle_loop[0]); }
static double f_idle_clients(bt_result *r) { return l_core(&r->idle_loop[1]); }

typedef struct row {
    const char *label;
    const char *format;
    figure_fn f;
    const char *goal;
    int ratio; /* print tickwire / ENet */
} row;

static const row ROWS[] = {
    {"1. unreliable RTT engine to engine, busy poll, p50 (µs)", "%.1f", f_urtt50, "≤ 1.5×", 1},
    {"1. unreliable RTT, p99 (µs)", "%.1f", f_urtt99, "", 1},
    {"1. the same, one thread playing both engines (no scheduling in the path), p50 (µs)", "%.1f", f_one50, "", 1},
    {"2. reliable RTT, p50 (µs)", "%.1f", f_rrtt50, "≤ 1.5×", 1},
    {"2. reliable RTT, p99 (µs)", "%.1f", f_rrtt99, "", 1},
    {"3. reliable 60 Hz at 5% loss and 20 ms, one-way latency p50 (ms)", "%.1f", f_imp50, "", 1},
    {"3. reliable 60 Hz at 5% loss and 20 ms, one-way latency p99 (ms)", "%.1f", f_imp99, "≤ 1×", 1},
    {"4. bytes up per 32-byte unreliable input at 60 Hz (UDP payload, per input that arrived)", "%.1f", f_up,
     "≤ 1× plaintext; + 16 B encrypted", 1},
    {"4. bytes down per input (acks only)", "%.1f", f_down, "≤ 2×", 1},
    {"4. inputs sent that arrived at the server engine (%), clean link", "%.1f", f_arrived, "", 0},
    {"5. server CPU per tick, 64 clients, all threads (µs)", "%.1f", f_cpu_all, "≤ 1×", 1},
    {"5. of which engine thread (µs)", "%.1f", f_cpu_engine, "", 1},
    {"5b. issue 35's shape, 64 clients, 32-B input up and one 256-B message down per client per tick: server CPU "
     "per tick, all threads (µs)",
     "%.1f", f_shape_all, "≤ 1× plaintext; ≤ 1.2× encrypted", 1},
    {"5b. of which engine thread (µs)", "%.1f", f_shape_engine, "", 1},
    {"5b. messages down that the clients received (% of one per client per tick)", "%.1f", f_shape_received, "", 0},
    {"6. threads of a process with 64 client hosts", "%.0f", f_threads, "≤ 2", 0},
    {"7. idle wakeups/s, process of 64 connected client hosts, no library calls", "%.1f", f_idle, "", 1},
    {"7. the same per client host", "%.1f", f_idle_host, "≤ 2/s without timers due", 1},
    {"8. heap allocations per message sent (send + flush calls)", "%.2f", f_alloc_send, "0", 0},
    {"8. heap allocations per message received (poll + read calls)", "%.2f", f_alloc_recv, "0", 0},
    {"8. heap allocations on the library's own threads, per message", "%.2f", f_alloc_other, "0", 0},
    {"9. idle 60 Hz server loop (polls everything, sends nothing), no clients (% of one core)", "%.3f", f_idle_none,
     "≤ 1.5×", 1},
    {"9. the same, 64 connected clients polling at 60 Hz and sending nothing (% of one core)", "%.3f",
     f_idle_clients, "≤ 1.5×", 1},
};
#define NROWS (sizeof ROWS / sizeof ROWS[0])

static void cell(char *buf, size_t len, const char *format, double v) {
    if (isfinite(v)) {
        snprintf(buf, len, format, v);
    } else {
        snprintf(buf, len, "n/a");
    }
}

static void ratio_cell(char *buf, size_t len, double tw, double en) {
    if (isfinite(tw) && isfinite(en) && en > 0) {
        snprintf(buf, len, "%.2f×", tw / en);
    } else {
        snprintf(buf, len, "n/a");
    }
}

/* One line of the table; returns how many of its figures are not finite. */
static int print_row(const char *label, const char *format, const double v[NUDP], int ratio, const char *goal) {
    int not_finite = 0;
    char c[NUDP][32], r1[32] = "", r2[32] = "";
    for (int l = 0; l < NUDP; l++) {
        not_finite += !isfinite(v[l]);
        cell(c[l], sizeof c[l], format, v[l]);
    }
    if (ratio) {
        ratio_cell(r1, sizeof r1, v[1], v[0]);
        ratio_cell(r2, sizeof r2, v[2], v[0]);
    }
    printf("| %s | %s | %s | %s | %s | %s | %s |\n", label, c[0], c[1], c[2], r1, r2, goal);
    return not_finite;
}

/* 2048 as "2,048", as the docs write client counts. */
static const char *thousands(char *buf, size_t len, uint32_t n) {
    if (n >= 1000) {
        snprintf(buf, len, "%u,%03u", (unsigned)(n / 1000), (unsigned)(n % 1000));
    } else {
        snprintf(buf, len, "%u", (unsigned)n);
    }
    return buf;
}

/* Row 10's per-client-tick figures of one library: max / min over the sizes run (NAN
 * unless at least two sizes, and all of them, gave a figure). */
static double scale_spread(const bt_result *r, const bt_plan *plan) {
    double lo = INFINITY, hi = 0;
    int sizes = 0;
    for (int s = 0; s < BT_SCALE_MAX && plan->scale_clients[s] > 0; s++, sizes++) {
        double v = l_cpu_client_tick(&r->scale[s]);
        if (!isfinite(v) || v <= 0) {
            return NAN;
        }
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    return sizes >= 2 ? hi / lo : NAN;
}

/* Row 10: the cost per client-tick at each size, how flat it is, then at each size
 * whether the server kept its tick, the clients theirs, and what was delivered. */
static int print_scale_rows(bt_result res[NLIBS], const bt_plan *plan) {
    static const struct {
        const char *what, *format;
        load_fn f;
    } KEEPING[] = {
        {"ticks of the server that overran (%)", "%.1f", l_overran},
        {"server tick rate achieved (Hz)", "%.1f", l_tick_hz},
        {"inputs up that arrived at the server (% of one per client per tick, ± a tick at the window's edges)",
         "%.1f", l_inputs},
        {"messages down that the clients received (% of one per client per tick)", "%.1f", l_received},
        {"the machine's CPU busy in the window, every process (% of all cores)", "%.0f", l_machine},
    };
    int not_finite = 0;
    char label[256], n[16];
    double v[NUDP];
    for (int s = 0; s < BT_SCALE_MAX && plan->scale_clients[s] > 0; s++) {
        uint32_t c = plan->scale_clients[s], hosts = (c + BT_RELAY_CLIENTS - 1) / BT_RELAY_CLIENTS;
        snprintf(label, sizeof label,
                 "10. server CPU per client-tick, %s clients on %u server host%s in one process, 5b's shape, all "
                 "threads (µs)",
                 thousands(n, sizeof n, c), (unsigned)hosts, hosts == 1 ? "" : "s");
        for (int l = 0; l < NUDP; l++) {
            v[l] = l_cpu_client_tick(&res[l].scale[s]);
        }
        not_finite += print_row(label, "%.2f", v, 1, "");
    }
    for (int l = 0; l < NUDP; l++) {
        v[l] = scale_spread(&res[l], plan);
    }
    not_finite +=
        print_row("10. max / min of those per-client-tick figures", "%.2f", v, 0, "≤ 1.20 (flat within 20%)");
    for (int s = 0; s < BT_SCALE_MAX && plan->scale_clients[s] > 0; s++) {
        for (size_t k = 0; k < sizeof KEEPING / sizeof KEEPING[0]; k++) {
            snprintf(label, sizeof label, "10. %s clients: %s", thousands(n, sizeof n, plan->scale_clients[s]),
                     KEEPING[k].what);
            for (int l = 0; l < NUDP; l++) {
                v[l] = KEEPING[k].f(&res[l].scale[s]);
            }
            not_finite += print_row(label, KEEPING[k].format, v, 0, "");
        }
    }
    return not_finite;
}

/* Prints the table; returns how many figures are not finite. */
static int print_table(bt_result res[NLIBS], const bt_plan *plan) {
    int not_finite = 0;
    printf("| row | %s | %s | %s | plaintext / ENet | encrypted / ENet | goal |\n", LIBS[0]->name, LIBS[1]->name,
           LIBS[2]->name);
    printf("|---|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < NROWS; i++) {
        double v[NUDP];
        for (int l = 0; l < NUDP; l++) {
            v[l] = ROWS[i].f(&res[l]);
        }
        not_finite += print_row(ROWS[i].label, ROWS[i].format, v, ROWS[i].ratio, ROWS[i].goal);
    }
    return not_finite + print_scale_rows(res, plan);
}

/* Whether row 10's server carried the whole load at one size: its tick rate within 1%
 * of 60 Hz, and 99% of the inputs and of its messages arrived. A server or clients that
 * fell behind did less work per client-tick than the shape asks, and look cheap. */
static int scale_held(const bt_load *l) {
    return l_tick_hz(l) >= 59.4 && l_inputs_arrived(l) && l_received(l) >= DELIVERED_MIN;
}

/* Row 10's check, a line per library: judged only over sizes whose load was held. */
static void print_flat_checks(bt_result res[NLIBS], const bt_plan *plan) {
    char sizes[64] = "", n[16];
    for (int s = 0; s < BT_SCALE_MAX && plan->scale_clients[s] > 0; s++) {
        size_t used = strlen(sizes);
        snprintf(sizes + used, sizeof sizes - used, "%s%s", s ? ", " : "",
                 thousands(n, sizeof n, plan->scale_clients[s]));
    }
    for (int l = 0; l < NUDP; l++) {
        double spread = scale_spread(&res[l], plan);
        printf("row 10, flat within 20%% (CPU per client-tick at %s clients, max / min): %s: ", sizes, LIBS[l]->name);
        if (!isfinite(spread)) {
            printf("n/a\n");
            continue;
        }
        int held = 1;
        for (int s = 0; s < BT_SCALE_MAX && plan->scale_clients[s] > 0; s++) {
            const bt_load *sc = &res[l].scale[s];
            if (!scale_held(sc)) {
                printf("%snot judged: at %s clients the load was not held (server %.1f Hz, %.1f%% of the inputs and "
                       "%.1f%% of the messages arrived)",
                       held ? "" : "; ", thousands(n, sizeof n, plan->scale_clients[s]), l_tick_hz(sc), l_inputs(sc),
                       l_received(sc));
                held = 0;
            }
        }
        if (held) {
            printf("%s (%.2f)\n", spread <= 1.2 ? "yes" : "no", spread);
        } else {
            printf("; max / min %.2f\n", spread);
        }
    }
}

/* The external carrier beside encrypted UDP: the ping-pong rows (1, 2, 8). */
static const row CARRIER_ROWS[] = {
    {"unreliable RTT engine to engine, busy poll, p50 (µs)", "%.1f", f_urtt50, "≤ 1×", 1},
    {"unreliable RTT, p99 (µs)", "%.1f", f_urtt99, "", 1},
    {"the same, one thread playing both engines, p50 (µs)", "%.1f", f_one50, "≤ 1×", 1},
    {"reliable RTT, p50 (µs)", "%.1f", f_rrtt50, "≤ 1×", 1},
    {"heap allocations per message sent (send + flush + pull)", "%.2f", f_alloc_send, "0", 0},
    {"heap allocations per message received (push + poll + read)", "%.2f", f_alloc_recv, "0", 0},
    {"heap allocations on the library's own threads, per message", "%.2f", f_alloc_other, "0", 0},
};
#define NCARRIER_ROWS (sizeof CARRIER_ROWS / sizeof CARRIER_ROWS[0])

static int print_carrier_table(bt_result res[NLIBS]) {
    int not_finite = 0;
    printf("| external carrier (encrypted, the harness's in-memory mailboxes) | %s (UDP) | %s | carrier / UDP | goal |\n",
           LIBS[2]->name, LIBS[CARRIER]->name);
    printf("|---|---:|---:|---:|---|\n");
    for (size_t i = 0; i < NCARRIER_ROWS; i++) {
        double udp = CARRIER_ROWS[i].f(&res[2]), ext = CARRIER_ROWS[i].f(&res[CARRIER]);
        char a[32], b[32], r[32] = "";
        not_finite += !isfinite(ext);
        cell(a, sizeof a, CARRIER_ROWS[i].format, udp);
        cell(b, sizeof b, CARRIER_ROWS[i].format, ext);
        if (CARRIER_ROWS[i].ratio) {
            ratio_cell(r, sizeof r, ext, udp);
        }
        printf("| %s | %s | %s | %s | %s |\n", CARRIER_ROWS[i].label, a, b, r, CARRIER_ROWS[i].goal);
    }
    return not_finite;
}

/* The machine's load average (/proc/loadavg), printed before and after the run: on a
 * shared machine other work lands in the timed rows, and the reader should know. */
static void print_load(const char *when) {
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fgets(buf, sizeof buf, f) == NULL) {
            snprintf(buf, sizeof buf, "?\n");
        }
        fclose(f);
    }
    printf("load average %s: %s", when, buf);
}

/* --- the smoke's checks ------------------------------------------------------------- */
static int passed, failed;

static void check(int ok, const char *lib, const char *what) {
    printf("%s: %s%s%s\n", ok ? "ok" : "FAILED", lib ? lib : "", lib ? ": " : "", what);
    ok ? passed++ : failed++;
}

/* The interposed allocator sees the harness's own malloc: row 8 counts at all. */
static int allocation_counter_works(void) {
    uint64_t counts[BT_BUCKETS];
    bt_alloc_start();
    void *volatile p = malloc(64);
    bt_alloc_stop(counts);
    free(p);
    return counts[BT_BUCKET_OTHER] >= 1;
}

/* ... and a library's: creating a host allocates in both, so a zero in row 8 is the
 * library's, not a counter that libtickwire.so or libenet.so bypass. */
static int library_allocations_counted(const bt_lib *lib) {
    uint64_t counts[BT_BUCKETS];
    void *h = NULL;
    bt_alloc_start();
    int rc = lib->create(lib, 0, 0, &h);
    bt_alloc_stop(counts);
    if (rc == 0) {
        lib->destroy(h);
    }
    return rc == 0 && counts[BT_BUCKET_OTHER] >= 1;
}

static void smoke_checks(bt_result res[NLIBS], const bt_plan *plan, int not_finite) {
    check(allocation_counter_works(), NULL, "the allocation counter counts a malloc of the harness");
    for (int l = 0; l < NLIBS; l++) {
        const char *n = LIBS[l]->name;
        bt_result *r = &res[l];
        check(!r->failed, n, "every measurement ran");
        if (l == CARRIER) {
            check(r->rtt_sent[BT_RELIABLE] > 0 && r->rtt_lost[BT_RELIABLE] == 0, n,
                  "reliable ping-pong: every message echoed");
            check(r->rtt_sent[BT_UNRELIABLE] > 0 && r->rtt_lost[BT_UNRELIABLE] == 0, n,
                  "unreliable ping-pong: every message echoed (the mailboxes lose nothing)");
            check(r->one_thread_sent > 0 && r->one_thread_lost == 0, n, "one-thread ping-pong: every message echoed");
            continue;
        }
        check(library_allocations_counted(LIBS[l]), n, "the allocation counter sees its allocations (creating a host)");
        check(r->rtt_sent[BT_RELIABLE] > 0 && r->rtt_lost[BT_RELIABLE] == 0, n, "reliable ping-pong: every message echoed");
        /* Loopback does not lose datagrams unless a buffer overflows; one in a hundred
         * is room for that, not for a library that fails to deliver. */
        check(r->rtt_sent[BT_UNRELIABLE] > 0 && r->rtt_lost[BT_UNRELIABLE] * 100 <= r->rtt_sent[BT_UNRELIABLE], n,
              "unreliable ping-pong: at least 99% echoed");
        check(r->one_thread_sent > 0 && r->one_thread_lost * 100 <= r->one_thread_sent, n,
              "one-thread ping-pong: at least 99% echoed");
        check(r->impaired_sent > 0 && r->impaired_delivered == r->impaired_sent && r->impaired_dropped > 0, n,
              "reliable through 5% loss: the proxy dropped datagrams and every message arrived");
        check(f_up(r) >= BT_MSG_SIZE, n, "bytes up per input hold the 32-byte input");
        check(r->relay_inputs > 0 && r->relay_echoes > 0 && r->threads >= 1, n,
              "relay: the server received inputs and the clients their echoes");
        check(r->shape.runs > 0 && r->shape.short_connected == 0 && l_inputs_arrived(&r->shape) &&
                  l_received(&r->shape) >= DELIVERED_MIN,
              n, "server shape (5b): at least 99% of the inputs and of the 256-byte messages arrived");
        check(r->idle_loop[0].runs > 0 && r->idle_loop[1].runs > 0 && r->idle_loop[1].short_connected == 0 &&
                  r->idle_loop[1].disconnects == 0,
              n, "idle server loop (9): measured without clients, then with 64 that stayed connected sending nothing");
        for (int s = 0; s < BT_SCALE_MAX && plan->scale_clients[s] > 0; s++) {
            const bt_load *sc = &r->scale[s];
            char what[160];
            snprintf(what, sizeof what,
                     "scale (10) at %u clients on %u hosts: all connected, at least 99%% of the inputs and of the "
                     "messages arrived",
                     (unsigned)plan->scale_clients[s], (unsigned)((plan->scale_clients[s] + 63) / 64));
            check(sc->runs > 0 && sc->short_connected == 0 && sc->disconnects == 0 && l_inputs_arrived(sc) &&
                      l_received(sc) >= DELIVERED_MIN,
                  n, what);
        }
    }
    check(not_finite == 0, NULL, "every figure of the table is finite");
}

int main(int argc, char **argv) {
    int smoke = 0, reps = 2, only = -1, relay_ticks = 0, scale_procs = 0, scale_ticks = 0, scale_clients = 0;
    int libs = 0; /* a bit per LIBS index, 0: all */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            smoke = 1;
        } else if (strcmp(argv[i], "--pin") == 0) {
            bt_pin = 1;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            reps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc && only_index(argv[i + 1]) >= 0) {
            only = only_index(argv[++i]);
        } else if (strcmp(argv[i], "--lib") == 0 && i + 1 < argc && lib_index(argv[i + 1]) >= 0) {
            libs |= 1 << lib_index(argv[++i]);
        } else if (strcmp(argv[i], "--relay-ticks") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            relay_ticks = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--scale-procs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0 &&
                   atoi(argv[i + 1]) <= 8) {
            scale_procs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--scale-ticks") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            scale_ticks = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--scale-clients") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0 &&
                   atoi(argv[i + 1]) <= 4096) {
            scale_clients = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--smoke] [--reps N] [--only pingpong|gameloop|relay|shape|idle|scale] "
                    "[--relay-ticks N] [--scale-procs N] [--scale-ticks N] [--scale-clients N] "
                    "[--lib enet|plaintext|encrypted|carrier]... [--pin]\n",
                    argv[0]);
            return 2;
        }
    }
    if (smoke) {
        reps = 1;
    }
    bt_pin_to(1);
    bt_plan plan_v = smoke ? SMOKE : FULL;
    if (relay_ticks > 0) {
        plan_v.relay_ticks = relay_ticks;
        plan_v.shape_ticks = relay_ticks;
    }
    if (scale_procs > 0) {
        plan_v.scale_client_procs = scale_procs;
    }
    if (scale_ticks > 0) {
        plan_v.scale_ticks = scale_ticks;
    }
    if (scale_clients > 0) {
        plan_v.scale_clients[0] = (uint32_t)scale_clients;
        for (int s = 1; s < BT_SCALE_MAX; s++) {
            plan_v.scale_clients[s] = 0;
        }
    }
    const bt_plan *plan = &plan_v;
    ENetVersion ev = enet_linked_version();
    printf("ENet %u.%u.%u; tickwire %u.%u.%u (ABI %u); %ld cores; 127.0.0.1; %d repetition%s; %s\n",
           ENET_VERSION_GET_MAJOR(ev), ENET_VERSION_GET_MINOR(ev), ENET_VERSION_GET_PATCH(ev),
           (unsigned)(tw_version() >> 16), (unsigned)((tw_version() >> 8) & 0xff), (unsigned)(tw_version() & 0xff),
           (unsigned)tw_abi_version(), sysconf(_SC_NPROCESSORS_ONLN), reps, reps == 1 ? "" : "s",
           smoke ? "smoke (short: the figures are rough)" : "full");
    for (int l = 0; l < NLIBS; l++) {
        if (LIBS[l]->init() != 0) {
            return 1;
        }
    }
    print_load("before");
    bt_result res[NLIBS];
    memset(res, 0, sizeof res);
    for (int rep = 0; rep < reps; rep++) {
        for (size_t m = 0; m < NMEASURES; m++) {
            if (only >= 0 && (size_t)only != m) {
                continue;
            }
            for (int k = 0; k < NLIBS; k++) {
                int l = rep % 2 == 0 ? k : NLIBS - 1 - k;
                if ((libs != 0 && !(libs & (1 << l))) || (l == CARRIER && m != 0)) {
                    continue;
                }
                /* Progress on stderr: the table on stdout stays clean. */
                fprintf(stderr, "repetition %d: %s: %s\n", rep + 1, MEASURE_NAMES[m], LIBS[l]->name);
                if (!res[l].failed && MEASURES[m](LIBS[l], plan, &res[l]) != 0) {
                    res[l].failed = 1;
                }
            }
        }
    }
    print_load("after");
    printf("\n");
    int not_finite = print_table(res, plan);
    printf("\n");
    if (only < 0 || MEASURES[only] == bt_measure_scale) {
        print_flat_checks(res, plan);
        printf("\n");
    }
    if (only < 0 || only == 0) {
        not_finite += print_carrier_table(res);
    }
    printf("\nBytes are UDP payload counted at the harness's proxy (IP and UDP headers, 28 B per "
           "datagram, not included). ENet's unreliable messages are its default unreliable-sequenced.\n\n");
    int any_failed = 0;
    for (int l = 0; l < NLIBS; l++) {
        any_failed |= res[l].failed;
    }
    if (smoke) {
        smoke_checks(res, plan, not_finite);
    }
    for (int l = 0; l < NLIBS; l++) {
        LIBS[l]->fini();
        for (int d = 0; d < 2; d++) {
            bt_samples_free(&res[l].rtt_us[d]);
        }
        bt_samples_free(&res[l].impaired_ms);
        bt_samples_free(&res[l].rtt_one_thread_us);
    }
    if (smoke) {
        printf("%d passed, %d failed\n", passed, failed);
        return failed == 0 ? 0 : 1;
    }
    return any_failed ? 1 : 0;
}
