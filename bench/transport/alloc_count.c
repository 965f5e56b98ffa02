/*
 * Counts heap allocations of the whole process (both libraries and their threads) by
 * interposing the allocator's entry points: the executable defines them (linked with
 * -rdynamic, so libtickwire.so and libenet.so bind to these) and forwards to glibc's
 * own __libc_* functions. Counting is off except inside a measured window, and each
 * allocation is charged to the bucket the calling thread set (BT_BUCKET_OTHER for the
 * libraries' own threads, which never set one).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#include "bench.h"

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

static atomic_int counting;
static atomic_ullong counts[BT_BUCKETS];
/* Initial-exec TLS in the executable: reading it never allocates. */
static _Thread_local int bucket;

static void note(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&counts[bucket], 1, memory_order_relaxed);
    }
}

void bt_alloc_set_bucket(int b) {
    bucket = b;
}

void bt_alloc_start(void) {
    for (int i = 0; i < BT_BUCKETS; i++) {
        atomic_store(&counts[i], 0);
    }
    atomic_store(&counting, 1);
}

void bt_alloc_stop(uint64_t out[BT_BUCKETS]) {
    atomic_store(&counting, 0);
    for (int i = 0; i < BT_BUCKETS; i++) {
        out[i] = atomic_load(&counts[i]);
    }
}

void *malloc(size_t size) {
    note();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    note();
    return __libc_calloc(n, size);
}

/* A realloc may move the block: counted as an allocation, as a fresh malloc would be. */
void *realloc(void *p, size_t size) {
    note();
    return __libc_realloc(p, size);
}

void free(void *p) {
    __libc_free(p);
}

/* Rust's System allocator takes this path for alignments above 16. */
int posix_memalign(void **out, size_t align, size_t size) {
    note();
    void *p = __libc_memalign(align, size);
    if (p == NULL) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t size) {
    note();
    return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size) {
    note();
    return __libc_memalign(align, size);
}
