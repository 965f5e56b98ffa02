/*
 * --pin (main.c): the server process on one core and every client process on the other,
 * so that where the scheduler happens to put them does not move the server's figures.
 * Off by default: the table's rows are measured unpinned. For comparing builds, where
 * the spread of unpinned runs (docs/benchmarks.md) hides differences of 10-20%.
 */
#define _GNU_SOURCE

#include <sched.h>
#include <stdio.h>

#include "bench.h"

int bt_pin = 0;

void bt_pin_to(int cpu) {
    if (!bt_pin) {
        return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
    }
}
