/* Threads and context switches of this process, and the busy CPU time of the whole
 * machine, read from /proc. */
#define _GNU_SOURCE

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

/* Calls fn for each thread of this process but `skip` (NULL: none); -1 if /proc fails. */
static int for_each_task(const char *skip, void (*fn)(const char *tid, uint64_t *acc), uint64_t *acc) {
    DIR *d = opendir("/proc/self/task");
    if (d == NULL) {
        perror("opendir /proc/self/task");
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.' && (skip == NULL || strcmp(e->d_name, skip) != 0)) {
            fn(e->d_name, acc);
        }
    }
    closedir(d);
    return 0;
}

static void count_one(const char *tid, uint64_t *n) {
    (void)tid;
    ++*n;
}

int bt_thread_count(void) {
    uint64_t n = 0;
    return for_each_task(NULL, count_one, &n) == 0 ? (int)n : -1;
}

/* Adds the two ctxt_switches lines of one task's status file. */
static void task_switches(const char *tid, uint64_t *sum) {
    char path[300], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return; /* the thread ended meanwhile: nothing more to count */
    }
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long long v;
        if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
            sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1) {
            *sum += v;
        }
    }
    fclose(f);
}

int bt_context_switches(uint64_t *out) {
    char self[32];
    snprintf(self, sizeof self, "%ld", (long)syscall(SYS_gettid));
    *out = 0;
    return for_each_task(self, task_switches, out);
}

int bt_machine_cpu(uint64_t *busy, uint64_t *total) {
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL) {
        return -1;
    }
    unsigned long long user, nice, sys, idle, iowait, irq, softirq, steal;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle, &iowait, &irq,
                   &softirq, &steal);
    fclose(f);
    if (n != 8) {
        return -1;
    }
    /* guest time is counted in user already. */
    *busy = user + nice + sys + irq + softirq + steal;
    *total = *busy + idle + iowait;
    return 0;
}
