/* This file is private to weft: what the parallel algorithms (range.c,
 * scan_fused.c, sort.c) share: elements of any size moved as
 * words where they can be, block counts, scratch memory, and a loop that
 * cannot fail once the caller's data is being changed.
 */
#ifndef WEFT_PARALLEL_ALGO_H
#define WEFT_PARALLEL_ALGO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "weft.h"
#include "core_api.h"

/* Bytes kept in the caller's frame before scratch comes from s. */
#define WEFT__ALGO_STACK 2048

static inline size_t weft__div_up(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

/* Copies one element of size bytes: 4 and 8 as one word (the compiler
 * inlines a memcpy of a constant size), others through memcpy. */
static inline void weft__elem_copy(void *d, const void *s, size_t size)
{
    if (size == 8)
        memcpy(d, s, 8);
    else if (size == 4)
        memcpy(d, s, 4);
    else
        memcpy(d, s, size);
}

/* Swaps two elements of size bytes (distinct or the same). */
static inline void weft__elem_swap(void *a, void *b, size_t size)
{
    if (size == 8) {
        uint64_t t, u;
        memcpy(&t, a, 8);
        memcpy(&u, b, 8);
        memcpy(a, &u, 8);
        memcpy(b, &t, 8);
        return;
    }
    if (size == 4) {
        uint32_t t, u;
        memcpy(&t, a, 4);
        memcpy(&u, b, 4);
        memcpy(a, &u, 4);
        memcpy(b, &t, 4);
        return;
    }
    unsigned char *p = a, *q = b;
    unsigned char t[64];
    while (size) {
        size_t k = size < sizeof t ? size : sizeof t;
        memcpy(t, p, k);
        memmove(p, q, k);
        memcpy(q, t, k);
        p += k;
        q += k;
        size -= k;
    }
}

/* Do [a, a + an) and [b, b + bn) share a byte? */
static inline bool weft__overlap(const void *a, size_t an, const void *b, size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return an && bn && x < y + bn && y < x + an;
}

/* Blocks a scan aims for when the grain is 0, and at most. */
#define WEFT__SCAN_BLOCKS 1024

/* A scan's blocks, fixed by the length n > 0 and the grain alone:
 * grain-sized, made whole multiples of the grain when there would be
 * more than WEFT__SCAN_BLOCKS of them. Sets *step; returns the count. */
static inline size_t weft__scan_plan(size_t n, size_t grain, size_t *step)
{
    size_t st = grain ? grain : weft__div_up(n, WEFT__SCAN_BLOCKS);
    size_t nb = weft__div_up(n, st);
    if (nb > WEFT__SCAN_BLOCKS)
        st *= weft__div_up(nb, WEFT__SCAN_BLOCKS);   /* no overflow: nb > 1, so st < n */
    *step = st;
    return weft__div_up(n, st);
}

/* Test seam (scan_fused.c): when set, called by a fused scan's chain
 * right after it parked at block k (handed itself to that block's
 * summer). Set by a test before the scan, cleared after. */
#ifdef WEFT_TEST_SEAMS
extern void (*weft__scan_park_seam)(size_t k);
#endif

/* Runs body over chunks [0, n) in parallel (grain 1); if no loop could
 * be had (memory, or s being destroyed: parallel_for ran nothing) the
 * caller runs them itself, in order. For the steps of an algorithm that
 * has begun to change the caller's data and so may no longer fail.
 * Callable from: any thread. */
static inline void weft__run_all(weft_sched *s, size_t n, weft_range_fn body, void *ctx)
{
    if (n == 0)
        return;
    if (n == 1 || weft_parallel_for(s, 0, n, 1, body, ctx) != WEFT_OK)
        body(0, n, ctx);
}

#endif /* WEFT_PARALLEL_ALGO_H */
