/* This file is private to weft's tests: a checking allocator.
 *
 * A walloc counts its calls and what is outstanding (blocks and bytes),
 * can fail its N-th call, and checks every free: the block must be one it
 * made (not another walloc's, not malloc's) and come back with the size
 * it was asked for. A bad free aborts with a message: it may happen on a
 * worker thread, where an assertion could not report.
 *
 *   static walloc a = WALLOC_INIT("config");
 *   cfg.allocator = *walloc_hooks(&a);   or   weft_set_allocator(walloc_hooks(&a));
 *   walloc_fail_at(&a, 3);               the third call from now fails
 */
#ifndef WEFT_TEST_ALLOC_UTIL_H
#define WEFT_TEST_ALLOC_UTIL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

typedef struct walloc {
    weft_allocator hooks;       /* { walloc_alloc, walloc_free, this } */
    const char *name;
    atomic_long calls;          /* alloc calls, failed ones included */
    atomic_long fail_at;        /* the call (1-based) that returns NULL; 0 = none */
    atomic_long failed;         /* calls failed on purpose */
    atomic_long blocks;         /* outstanding blocks */
    atomic_long bytes;          /* outstanding bytes, as asked for */
    _Atomic size_t last_size;   /* the latest request: names a stray allocation */
} walloc;

/* A header line in front of every block: who made it, and its size. */
#define WALLOC_HEADER ((size_t)64)
#define WALLOC_MAGIC  0x77616c6c6f63ull   /* "walloc" */
struct walloc_hdr {
    uint64_t magic;
    const walloc *owner;
    size_t size;
};

static void *walloc_alloc(size_t size, void *ctx)
{
    walloc *a = ctx;
    long k = atomic_fetch_add(&a->calls, 1) + 1;
    atomic_store(&a->last_size, size);
    if (k == atomic_load(&a->fail_at)) {
        atomic_fetch_add(&a->failed, 1);
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, WALLOC_HEADER + size) != 0)
        return NULL;
    struct walloc_hdr *h = p;
    h->magic = WALLOC_MAGIC;
    h->owner = a;
    h->size = size;
    atomic_fetch_add(&a->blocks, 1);
    atomic_fetch_add(&a->bytes, (long)size);
    return (char *)p + WALLOC_HEADER;
}

static void walloc_free(void *ptr, size_t size, void *ctx)
{
    walloc *a = ctx;
    struct walloc_hdr *h = (struct walloc_hdr *)((char *)ptr - WALLOC_HEADER);
    if (h->magic != WALLOC_MAGIC) {
        fprintf(stderr, "walloc %s: free of %p (size %zu): not a walloc block\n", a->name, ptr, size);
        abort();
    }
    if (h->owner != a) {
        fprintf(stderr, "walloc %s: free of %p (size %zu): made by walloc %s\n",
                a->name, ptr, size, h->owner->name);
        abort();
    }
    if (h->size != size) {
        fprintf(stderr, "walloc %s: free of %p with size %zu; it was made with size %zu\n",
                a->name, ptr, size, h->size);
        abort();
    }
    h->magic = 0;
    atomic_fetch_sub(&a->blocks, 1);
    atomic_fetch_sub(&a->bytes, (long)size);
    free(h);
}

#define WALLOC_INIT(nm) { .name = (nm) }

/* Fills in the hooks; the counters start at zero. */
static inline weft_allocator *walloc_hooks(walloc *a)
{
    a->hooks = (weft_allocator){ walloc_alloc, walloc_free, a };
    return &a->hooks;
}

/* From now on, the n-th call fails (n >= 1), or none (n = 0). */
static inline void walloc_fail_at(walloc *a, long n)
{
    atomic_store(&a->failed, 0);
    atomic_store(&a->calls, 0);
    atomic_store(&a->fail_at, n);
}

#endif /* WEFT_TEST_ALLOC_UTIL_H */
