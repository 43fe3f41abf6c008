/* This file is private to weft: the interface of steal order: which victim
 * a search visits k-th (worker.c), the strides it steps by (sched.c).
 */
#ifndef WEFT_STEAL_H
#define WEFT_STEAL_H

#include "core.h"

/* The k-th victim (0 <= k < n) of a search that starts at `start` and
 * steps by `stride`, coprime with n: k = 0..n-1 visits every worker once
 * (Go's steal order). */
static inline unsigned weft__victim(unsigned start, unsigned stride, unsigned k, unsigned n)
{
    return (unsigned)(((uint64_t)start + (uint64_t)k * stride) % n);
}

/* Fills out[] with the strides in 1..n coprime with n; returns how many. */
unsigned weft__coprimes(unsigned n, unsigned *out);

#endif /* WEFT_STEAL_H */
