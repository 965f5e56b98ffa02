/*
 * What a load costs a 60 Hz server at the start of its tick: the memory it touched a
 * tick ago, after it slept (or after a sweep of other memory, or warm). Walks 256
 * lines in a random order, each load depending on the last (as a lookup's chain of
 * pointers does), or all independent (as loads a processor can overlap), with the
 * lines on 256 pages of their own or packed into 4 pages, in huge pages or small.
 * Prints nanoseconds per load, the mean over 100 rounds.
 *
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -O2 bench/probe/cold_pages.c -o cold_pages
 *   taskset -c 1 ./cold_pages
 *
 * Linux only (madvise). docs/benchmarks.md, "A server's tick after its sleep", has the
 * figures of the machines we measured and what they changed.
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { LINES = 256, ROUNDS = 100, SWEEP = 64 << 20, HUGE = 2 << 20 };
enum before { SLEPT, SWEPT, WARM };

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static volatile uint64_t sink;

/* Nanoseconds per load. */
static double probe(enum before before, int huge, size_t stride, int dependent, char *sweep) {
    size_t size = LINES * stride < (size_t)4 * HUGE ? (size_t)4 * HUGE : LINES * stride;
    char *raw = mmap(NULL, size + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    char *m = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    madvise(m, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    memset(m, 1, size);
    size_t order[LINES];
    for (size_t i = 0; i < LINES; i++) {
        order[i] = i;
    }
    srand(1);
    for (size_t i = LINES - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    char *at[LINES];
    for (size_t i = 0; i < LINES; i++) {
        at[i] = m + order[i] * stride;
    }
    for (size_t i = 0; i < LINES; i++) {
        memcpy(at[i], &at[(i + 1) % LINES], sizeof(char *));
    }
    uint64_t total = 0;
    for (int r = 0; r < ROUNDS; r++) {
        if (before == SLEPT) {
            struct timespec tick = {0, 16667000};
            nanosleep(&tick, NULL);
        } else if (before == SWEPT) {
            for (size_t i = 0; i < SWEEP; i += 64) {
                sweep[i]++;
            }
        }
        uint64_t t0 = now_ns(), acc = 0;
        if (dependent) {
            char *p = at[0];
            for (size_t i = 0; i < LINES; i++) {
                memcpy(&p, p, sizeof p);
            }
            acc = (uintptr_t)p;
        } else {
            for (size_t i = 0; i < LINES; i++) {
                acc += *(volatile uint64_t *)(void *)at[i];
            }
        }
        total += now_ns() - t0;
        sink += acc;
    }
    munmap(raw, size + HUGE);
    return (double)total / ROUNDS / LINES;
}

int main(void) {
    char *sweep = calloc(SWEEP, 1);
    if (sweep == NULL) {
        return 1;
    }
    static const char *const names[] = {"slept 16.7 ms", "after a 64 MiB sweep", "warm"};
    printf("| before the loads | a page each, dependent | a page each, huge pages | 4 pages, dependent | a page "
           "each, independent |\n|---|---:|---:|---:|---:|\n");
    for (int b = SLEPT; b <= WARM; b++) {
        printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", names[b], probe(b, 0, 4096, 1, sweep),
               probe(b, 1, 4096, 1, sweep), probe(b, 0, 64, 1, sweep), probe(b, 0, 4096, 0, sweep));
    }
    free(sweep);
    return 0;
}
