/*
 * The transport benchmark's shared vocabulary: one interface that both libraries
 * (ENet and tickwire, the latter plaintext and encrypted) are driven through, so every
 * measurement runs the same code and the same game loop for each of them; the result
 * record one repetition fills; and the small helpers (clocks, samples, /proc).
 */
#ifndef BT_BENCH_H
#define BT_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* Every message the harness sends is this long: a game input. */
#define BT_MSG_SIZE 32
/* Room for any payload a library hands back (the harness only sends BT_MSG_SIZE). */
#define BT_MAX_PAYLOAD 1500
/* Row 5's clients, and the most one server host takes in rows 5b, 9 and 10. */
#define BT_RELAY_CLIENTS 64
/* The message a server sends each client each tick in rows 5b and 10. */
#define BT_STATE_SIZE 256
/* The game loops' tick: 60 Hz. */
#define BT_TICK_NS 16666667ull

typedef enum bt_delivery { BT_UNRELIABLE = 0, BT_RELIABLE = 1 } bt_delivery;

typedef enum bt_event_kind { BT_EV_CONNECTED = 1, BT_EV_DISCONNECTED = 2, BT_EV_MESSAGE = 3 } bt_event_kind;

typedef struct bt_event {
    bt_event_kind kind;
    uint32_t peer;
    bt_delivery delivery; /* BT_EV_MESSAGE */
    size_t len;           /* BT_EV_MESSAGE: bytes copied into the caller's buffer */
} bt_event;

/*
 * One library behind a common face. Hosts are opaque (each adapter knows its own).
 * Functions returning int give 0 on success and -1 on failure, after printing what
 * failed to stderr. Hosts bind 127.0.0.1.
 */
typedef struct bt_lib {
    const char *name;  /* the table's column */
    uint32_t variant;  /* adapter-specific: tickwire's security mode */
    int (*init)(void); /* once per process, before the first host */
    void (*fini)(void);
    /* max_peers: incoming connections accepted (0: a pure client). port 0: any. */
    int (*create)(const struct bt_lib *lib, uint16_t port, uint32_t max_peers, void **out_host);
    int (*local_port)(void *host, uint16_t *out_port);
    int (*connect)(void *host, uint16_t port, uint32_t *out_peer);
    /* 1 (nothing printed): the peer has disconnected, as a relay meets now and then. */
    int (*send)(void *host, uint32_t peer, bt_delivery delivery, const uint8_t *data, size_t len);
    int (*flush)(void *host);
    /* 1: *ev written (a message's payload copied into buf), 0: nothing now, -1: error. */
    int (*poll)(void *host, bt_event *ev, uint8_t *buf, size_t cap);
    void (*destroy)(void *host);
} bt_lib;

extern const bt_lib bt_lib_enet;
extern const bt_lib bt_lib_tickwire_plain;
extern const bt_lib bt_lib_tickwire_encrypted;
extern const bt_lib bt_lib_tickwire_carrier;

/* --- samples and clocks (stats.c) --------------------------------------------------- */
typedef struct bt_samples {
    double *v;
    size_t n, cap;
} bt_samples;

int bt_samples_push(bt_samples *s, double x);
/* The q-quantile (0..1, nearest rank) of the samples; NAN when there are none. */
double bt_samples_quantile(const bt_samples *s, double q);
void bt_samples_free(bt_samples *s);

uint64_t bt_now_ns(void); /* CLOCK_MONOTONIC */
void bt_sleep_until_ns(uint64_t deadline_ns);
void bt_sleep_ms(unsigned ms);
uint64_t bt_cpu_ns(int clock_id);

/* The harness's 32-byte message: a sequence number and the send time. */
void bt_msg_write(uint8_t msg[BT_MSG_SIZE], uint32_t seq, uint64_t sent_ns);
void bt_msg_read(const uint8_t *msg, uint32_t *seq, uint64_t *sent_ns);

/* --- /proc (procstat.c) ------------------------------------------------------------- */
/* Threads of this process (entries of /proc/self/task), or -1. */
int bt_thread_count(void);
/* Sum of voluntary and involuntary context switches of every thread of this process
 * except the calling one (the harness, which sleeps through the window). */
int bt_context_switches(uint64_t *out);
/* Clock ticks every CPU of the machine spent busy (any process, the kernel's own
 * threads included), and in all, since boot (/proc/stat): on a shared machine the rows
 * that keep a tick should say whether someone else took the cores. */
int bt_machine_cpu(uint64_t *busy, uint64_t *total);

/* --- heap allocation counting (alloc_count.c) --------------------------------------- */
/* Which side of the engine's calls an allocation is charged to: the calling thread
 * says so around its library calls; any other thread (a library's own) is OTHER. */
enum { BT_BUCKET_OTHER = 0, BT_BUCKET_SEND = 1, BT_BUCKET_RECV = 2, BT_BUCKETS = 3 };
void bt_alloc_set_bucket(int bucket);
void bt_alloc_start(void); /* zero the counters and count from now on */
void bt_alloc_stop(uint64_t counts[BT_BUCKETS]);

/* --- the seeded UDP proxy (proxy.c) ------------------------------------------------- */
typedef struct bt_proxy bt_proxy;
typedef struct bt_proxy_config {
    double loss;        /* probability that a datagram is dropped, each direction */
    uint32_t delay_us;  /* one-way delay added in each direction */
    uint64_t seed;
} bt_proxy_config;
typedef struct bt_proxy_counters {
    uint64_t up_bytes, up_datagrams, down_bytes, down_datagrams, dropped;
} bt_proxy_counters;

/* Starts forwarding 127.0.0.1:*out_port <-> 127.0.0.1:server_port on its own thread. */
int bt_proxy_start(const bt_proxy_config *cfg, uint16_t server_port, bt_proxy **out, uint16_t *out_port);
void bt_proxy_counters_get(bt_proxy *p, bt_proxy_counters *out);
void bt_proxy_counters_reset(bt_proxy *p);
void bt_proxy_stop(bt_proxy *p);

/* --- a connected client/server pair and the server's engine thread (pair.c) ------- */
typedef enum bt_server_mode {
    BT_SERVER_ECHO_BUSY, /* busy-poll, echo every message at once */
    BT_SERVER_TICK_60HZ, /* a 60 Hz game loop that records one-way latency */
} bt_server_mode;

typedef struct bt_pair {
    const bt_lib *lib;
    void *server, *client;
    uint32_t to_server; /* the client's peer id of the server */
    bt_proxy *proxy;    /* NULL: direct */
    /* the server thread */
    bt_server_mode mode;
    uint32_t record_from_seq; /* TICK_60HZ: latency of messages from this seq on */
    bt_samples latency_ms;    /* TICK_60HZ; read after bt_pair_stop_server */
    uint64_t delivered;       /* TICK_60HZ: messages from record_from_seq on */
    int server_failed;
    void *thread_state;
} bt_pair;

int bt_pair_open(bt_pair *p, const bt_lib *lib, const bt_proxy_config *impair);
int bt_pair_start_server(bt_pair *p, bt_server_mode mode);
/* Atomic snapshot of `delivered` while the server thread runs. */
uint64_t bt_pair_delivered(bt_pair *p);
int bt_pair_stop_server(bt_pair *p);
void bt_pair_close(bt_pair *p);

/* --- a server under load (rig.h), summed over repetitions: rows 5b, 9, 10 ------------- */
typedef struct bt_load {
    uint64_t runs;
    uint64_t ticks, client_ticks; /* the server's measured ticks; times its clients */
    uint64_t wall_ns, all_ns, engine_ns, overruns;
    uint64_t inputs, inputs_expected; /* inputs the server polled; one per client-tick */
    uint64_t sent, sent_expected;     /* messages down in the window; one per client-tick */
    uint64_t received;                /* of those, what the clients read */
    uint64_t short_connected;         /* clients missing when the window ended */
    uint64_t disconnects;             /* connections the clients saw end too early */
    uint64_t client_loop_ticks, client_overruns, client_cpu_ns, client_wall_ns; /* the clients' loops */
    uint64_t machine_busy, machine_total; /* /proc/stat over the server's window */
} bt_load;

#define BT_SCALE_MAX 3 /* row 10's sizes */

/* --- what one repetition of one library measured ------------------------------------ */
typedef struct bt_result {
    bt_samples rtt_us[2]; /* rows 1-2, by bt_delivery */
    uint64_t rtt_sent[2], rtt_lost[2];
    bt_samples rtt_one_thread_us; /* row 1, one thread playing both engines */
    uint64_t one_thread_sent, one_thread_lost;
    bt_samples impaired_ms; /* row 3: one-way latency through the impaired proxy */
    uint64_t impaired_sent, impaired_delivered, impaired_dropped;
    uint64_t wire_inputs, wire_delivered, wire_up_bytes, wire_down_bytes; /* row 4 */
    uint64_t cpu_ticks, cpu_all_ns, cpu_engine_ns;         /* row 5 */
    uint64_t relay_inputs, relay_echoes;
    int threads; /* row 6 */
    uint64_t idle_switches;
    double idle_seconds; /* row 7 */
    uint64_t alloc_messages, alloc[BT_BUCKETS]; /* row 8: per message sent/received */
    bt_load shape;                              /* row 5b */
    bt_load idle_loop[2];                       /* row 9: no clients, then connected clients */
    bt_load scale[BT_SCALE_MAX];                /* row 10, by bt_plan's scale_clients */
    int failed;
} bt_result;

typedef struct bt_plan {
    int rtt_warmup, rtt_samples, alloc_round_trips;
    int impaired_ticks, impaired_warmup_ticks;
    int wire_ticks;
    int relay_warmup_ticks, relay_ticks; /* row 5 */
    unsigned idle_ms;                    /* row 7 */
    int shape_warmup_ticks, shape_ticks; /* row 5b */
    int idle_loop_warmup_ticks, idle_loop_ticks; /* row 9 */
    int scale_warmup_ticks, scale_ticks;         /* row 10 */
    uint32_t scale_clients[BT_SCALE_MAX];        /* row 10's sizes; 0: none */
    int scale_client_procs;                      /* the client processes of row 10 */
    uint64_t seed;
} bt_plan;

/* --pin (pin.c): when set, bt_pin_to(cpu) pins the calling process (and the threads it
 * starts afterwards) to that core; otherwise it does nothing. */
extern int bt_pin;
void bt_pin_to(int cpu);

int bt_measure_pingpong(const bt_lib *lib, const bt_plan *plan, bt_result *res);  /* rows 1, 2, 8 */
int bt_measure_game_loop(const bt_lib *lib, const bt_plan *plan, bt_result *res); /* rows 3, 4 */
int bt_measure_relay(const bt_lib *lib, const bt_plan *plan, bt_result *res);     /* rows 5, 6, 7 */
int bt_measure_shape(const bt_lib *lib, const bt_plan *plan, bt_result *res);     /* row 5b */
int bt_measure_idle(const bt_lib *lib, const bt_plan *plan, bt_result *res);      /* row 9 */
int bt_measure_scale(const bt_lib *lib, const bt_plan *plan, bt_result *res);     /* row 10 */

#endif
