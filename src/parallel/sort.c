/* This file is private to weft: weft_parallel_sort, an in-place
 * quicksort whose two sides run in parallel, and the sequential pieces
 * both sorts share (weft__sort_small, an insertion sort).
 *
 * A range longer than SORT_PAR_MIN is split around a pivot (the median
 * of three, or of three medians of three when long), on the fiber that
 * holds it, then its two sides run as a loop of two chunks
 * (weft_parallel_for), so that another worker takes one while this one
 * sorts the other, each splitting again. Shorter ranges, and any range
 * once the splits have gone deeper than twice log2 of the count (a run of
 * bad pivots), are sorted sequentially: an introsort (quicksort that
 * turns to heapsort past the same depth, insertion sort below
 * SORT_SMALL), so no input takes more than n log n comparisons. The
 * first split is sequential, as in every quicksort; it reads the input
 * once.
 *
 * Nothing is allocated: the state of a split lives in its caller's frame,
 * and the recursion of the parallel part is bounded by SORT_PAR_DEPTH
 * (a fiber's stack is small). Once the input is being moved the call may
 * not fail, so a loop that cannot be had (no task record, or s being
 * destroyed) sorts its two sides on the calling fiber instead
 * (weft__run_all); weft_parallel_sort therefore never fails on valid
 * input.
 *
 * Synchronization
 *   a range's elements belong to the one fiber that holds it: the split
 *   writes them before the loop that hands its sides out, whose queueing
 *   publishes them; a side's writes reach the splitter through the
 *   loop's wait.
 */
#include "algo.h"
#include "sort.h"

/* Ranges shorter than this are sorted sequentially. */
#define SORT_PAR_MIN 16384
/* Insertion sort below this many elements. */
#define SORT_SMALL 16
/* Nested parallel splits at most (each a loop's frame on the stack). */
#define SORT_PAR_DEPTH 24

static inline unsigned char *at(const weft__sorter *q, unsigned char *base, size_t i)
{
    return base + i * q->size;
}

static inline int cmp_at(const weft__sorter *q, unsigned char *base, size_t i, size_t j)
{
    return q->cmp(at(q, base, i), at(q, base, j), q->arg);
}

void weft__sort_small(const weft__sorter *q, unsigned char *base, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cmp_at(q, base, j - 1, j) > 0; j--)
            weft__elem_swap(at(q, base, j - 1), at(q, base, j), q->size);   /* adjacent swaps: stable */
}

/* The index of the median of elements i, j, k. */
static size_t median3(const weft__sorter *q, unsigned char *base, size_t i, size_t j, size_t k)
{
    if (cmp_at(q, base, i, j) < 0) {
        if (cmp_at(q, base, j, k) < 0)
            return j;
        return cmp_at(q, base, i, k) < 0 ? k : i;
    }
    if (cmp_at(q, base, i, k) < 0)
        return i;
    return cmp_at(q, base, j, k) < 0 ? k : j;
}

/* Splits base[0, n) (n >= 2) around a pivot: returns p with [0, p) no
 * greater than it, base[p] the pivot, (p, n) no less. Elements equal to
 * the pivot stop both scans and are swapped, so a run of equal keys
 * splits in the middle rather than to one side. */
static size_t split(const weft__sorter *q, unsigned char *base, size_t n)
{
    size_t m = n / 2, last = n - 1, piv;
    if (n >= 128) {
        size_t d = n / 8;
        piv = median3(q, base, median3(q, base, 0, d, 2 * d), median3(q, base, m - d, m, m + d),
                      median3(q, base, last - 2 * d, last - d, last));
    } else {
        piv = median3(q, base, 0, m, last);
    }
    weft__elem_swap(base, at(q, base, piv), q->size);   /* the pivot waits at 0 */
    size_t i = 0, j = n;
    for (;;) {
        do
            i++;
        while (i < n && cmp_at(q, base, i, 0) < 0);
        do
            j--;
        while (cmp_at(q, base, j, 0) > 0);   /* stops at 0 at the latest: the pivot */
        if (i >= j)
            break;
        weft__elem_swap(at(q, base, i), at(q, base, j), q->size);
    }
    weft__elem_swap(base, at(q, base, j), q->size);
    return j;
}

/* Moves base[i] down the max-heap base[0, n) to its place. */
static void sift(const weft__sorter *q, unsigned char *base, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && cmp_at(q, base, c, c + 1) < 0)
            c++;
        if (cmp_at(q, base, i, c) >= 0)
            return;
        weft__elem_swap(at(q, base, i), at(q, base, c), q->size);
        i = c;
    }
}

static void heap_sort(const weft__sorter *q, unsigned char *base, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(q, base, i, n);
    for (size_t k = n; k-- > 1;) {
        weft__elem_swap(base, at(q, base, k), q->size);
        sift(q, base, 0, k);
    }
}

/* The sequential introsort: recurses into the shorter side, loops on the
 * longer, so its stack stays within log2(n) frames. */
static void intro_sort(const weft__sorter *q, unsigned char *base, size_t n, unsigned depth)
{
    while (n > SORT_SMALL) {
        if (depth == 0) {
            heap_sort(q, base, n);
            return;
        }
        depth--;
        size_t p = split(q, base, n);
        if (p < n - p - 1) {
            intro_sort(q, base, p, depth);
            base = at(q, base, p + 1);
            n = n - p - 1;
        } else {
            intro_sort(q, at(q, base, p + 1), n - p - 1, depth);
            n = p;
        }
    }
    weft__sort_small(q, base, n);
}

static unsigned log2_floor(size_t n)
{
    unsigned k = 0;
    while (n >>= 1)
        k++;
    return k;
}

/* The two sides of a split, handed out as a loop of two chunks. */
struct sides {
    const weft__sorter *q;
    unsigned char *base[2];
    size_t n[2];
    unsigned depth, par;
};

static void par_sort(const weft__sorter *q, unsigned char *base, size_t n, unsigned depth, unsigned par);

static void sides_chunk(size_t b, size_t e, void *p)
{
    struct sides *sd = p;
    for (size_t k = b; k < e; k++)
        par_sort(sd->q, sd->base[k], sd->n[k], sd->depth, sd->par);
}

static void par_sort(const weft__sorter *q, unsigned char *base, size_t n, unsigned depth, unsigned par)
{
    if (n < SORT_PAR_MIN || depth == 0 || par == 0) {
        intro_sort(q, base, n, depth);
        return;
    }
    size_t p = split(q, base, n);
    struct sides sd = { .q = q, .base = { base, at(q, base, p + 1) }, .n = { p, n - p - 1 },
                        .depth = depth - 1, .par = par - 1 };
    weft__run_all(q->s, 2, sides_chunk, &sd);
}

int weft_parallel_sort(weft_sched *s, void *base, size_t count, size_t size,
                       weft_cmp_fn cmp, void *arg)
{
    if (!s || !cmp || size == 0 || (!base && count > 0) || count > SIZE_MAX / size)
        return WEFT_EINVAL;
    if (count < 2)
        return WEFT_OK;
    weft__sorter q = { .s = s, .size = size, .cmp = cmp, .arg = arg };
    par_sort(&q, base, count, 2 * log2_floor(count), SORT_PAR_DEPTH);
    return WEFT_OK;
}
