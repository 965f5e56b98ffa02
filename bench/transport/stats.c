/* Samples with percentiles, the clocks, and the harness's message layout. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

int bt_samples_push(bt_samples *s, double x) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        double *v = realloc(s->v, cap * sizeof *v);
        if (v == NULL) {
            return -1;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bt_samples_quantile(const bt_samples *s, double q) {
    if (s->n == 0) {
        return NAN;
    }
    /* Sorted in place: the order samples came in is never needed afterwards. */
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    size_t rank = (size_t)ceil(q * (double)s->n);
    if (rank == 0) {
        rank = 1;
    }
    return s->v[rank - 1];
}

void bt_samples_free(bt_samples *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}

uint64_t bt_now_ns(void) {
    return bt_cpu_ns(CLOCK_MONOTONIC);
}

uint64_t bt_cpu_ns(int clock_id) {
    struct timespec ts;
    clock_gettime((clockid_t)clock_id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bt_sleep_until_ns(uint64_t deadline_ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline_ns / 1000000000u);
    ts.tv_nsec = (long)(deadline_ns % 1000000000u);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

void bt_sleep_ms(unsigned ms) {
    bt_sleep_until_ns(bt_now_ns() + (uint64_t)ms * 1000000u);
}

void bt_msg_write(uint8_t msg[BT_MSG_SIZE], uint32_t seq, uint64_t sent_ns) {
    /* The rest is a fixed pattern so that no library sees a run of zeros it might
     * treat specially. */
    for (size_t i = 0; i < BT_MSG_SIZE; i++) {
        msg[i] = (uint8_t)(0xA5 ^ i);
    }
    memcpy(msg, &seq, sizeof seq);
    memcpy(msg + 4, &sent_ns, sizeof sent_ns);
}

void bt_msg_read(const uint8_t *msg, uint32_t *seq, uint64_t *sent_ns) {
    memcpy(seq, msg, sizeof *seq);
    memcpy(sent_ns, msg + 4, sizeof *sent_ns);
}
