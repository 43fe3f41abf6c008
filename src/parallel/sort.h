/* This file is private to weft: what the two sorts (sort.c, the
 * quicksort; sort_stable.c, the merge sort) share.
 */
#ifndef WEFT_PARALLEL_SORT_H
#define WEFT_PARALLEL_SORT_H

#include <stddef.h>

#include "weft.h"

/* A sort's call: its scheduler, element size and comparison. */
typedef struct weft__sorter {
    weft_sched *s;
    size_t size;
    weft_cmp_fn cmp;
    void *arg;
} weft__sorter;

/* Sorts base[0, n) by insertion, stably, in place: for short runs.
 * Callable from: any thread. */
void weft__sort_small(const weft__sorter *q, unsigned char *base, size_t n);

#endif /* WEFT_PARALLEL_SORT_H */
