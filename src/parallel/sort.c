/* This file is private to weft: the two sorts. weft_parallel_sort is an
 * in-place quicksort whose two sides run in parallel;
 * weft_parallel_sort_stable a merge sort through a scratch array.
 *
 * The quicksort.
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
 * A thread outside the scheduler runs a loop's chunks but no other work
 * while it waits, so in nested splits it would sort only the leftmost
 * path and then wait. Called from such a thread (with a CPU spare for
 * it, beside workers), the sort starts flat instead (flat_sort): the
 * caller splits the input into as many pieces as threads, each split
 * around the median of a sample (sampled_pivot) so that the pieces are
 * near equal, then runs them as one loop, sorting its own piece
 * sequentially while the workers split theirs further. One piece per
 * thread, not more: the splits before the loop are sequential, so each
 * halving of the pieces saves a pass over the input on the caller alone,
 * and near-equal pieces need no balancing (with two pieces per thread
 * around medians of medians, the caller of a two-thread sort of 10^7
 * keys made 56-68% of the comparisons, where about half is its share).
 *
 * The merge sort. The input is cut into a power of two of leaves, at
 * least twice as many as the threads that may run them, each at least
 * STABLE_LEAF_MIN elements. Each leaf is sorted sequentially (runs of STABLE_RUN sorted
 * by insertion, then merged pairwise between the leaf's part of the input
 * and of the scratch), the leaves in parallel. Then rounds of merges
 * double the sorted width until one run is left, each round merging from
 * one array into the other. A round's merges are cut into pieces of the
 * output, so that the last rounds, with one or two merges, still run on
 * every worker: a piece finds where it starts in each of its two runs by
 * a binary search (the co-rank: how many of the piece's predecessors come
 * from the left run), then merges independently of the others. Equal
 * elements are taken from the left run first, in the merges and in the
 * searches alike, so the sort is stable. The leaves leave their result in
 * whichever array makes the last round end in the input, so no final
 * copy is made.
 *
 * The scratch is the caller's, or taken from s (weft__scratch_get) before
 * anything is moved: only that can fail. Past it, a loop that cannot be
 * had runs on the calling fiber (weft__run_all), so the sort completes.
 *
 * Synchronization
 *   quicksort: a range's elements belong to the one fiber that holds it:
 *   the split writes them before the loop that hands its sides out, whose
 *   queueing publishes them; a side's writes reach the splitter through
 *   the loop's wait.
 *   merge sort: a leaf, and a piece of a round's output, are written by
 *   one chunk only; a round reads what the previous round's chunks wrote
 *   after that loop's wait, which carries their writes, and its own
 *   chunks see them through the queueing of the next loop's pieces.
 */
#include "algo.h"

/* A sort's call: its scheduler, element size and comparison. */
typedef struct sorter {
    weft_sched *s;
    size_t size;
    weft_cmp_fn cmp;
    void *arg;
} sorter;

/* Ranges shorter than this are sorted sequentially. */
#define SORT_PAR_MIN 16384
/* Insertion sort below this many elements. */
#define SORT_SMALL 16
/* Nested parallel splits at most (each a loop's frame on the stack). */
#define SORT_PAR_DEPTH 24

static inline unsigned char *at(const sorter *q, unsigned char *base, size_t i)
{
    return base + i * q->size;
}

static inline int cmp_at(const sorter *q, unsigned char *base, size_t i, size_t j)
{
    return q->cmp(at(q, base, i), at(q, base, j), q->arg);
}

/* Sorts base[0, n) by insertion, stably, in place: for short runs. An
 * element of up to 64 bytes is held aside while the greater ones before
 * it shift up one place each (a copy each, not a swap); a larger one
 * moves by adjacent swaps. */
static void sort_small(const sorter *q, unsigned char *base, size_t n)
{
    size_t sz = q->size;
    if (sz > 64) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && cmp_at(q, base, j - 1, j) > 0; j--)
                weft__elem_swap(at(q, base, j - 1), at(q, base, j), sz);   /* adjacent swaps: stable */
        return;
    }
    _Alignas(16) unsigned char held[64];
    for (size_t i = 1; i < n; i++) {
        unsigned char *p = at(q, base, i);
        if (q->cmp(p - sz, p, q->arg) <= 0)
            continue;   /* already in place: the common case near the end of a sort */
        weft__elem_copy(held, p, sz);
        do {
            weft__elem_copy(p, p - sz, sz);
            p -= sz;
        } while (p > base && q->cmp(p - sz, held, q->arg) > 0);   /* equal ones stay before: stable */
        weft__elem_copy(p, held, sz);
    }
}

/* The index of the median of elements i, j, k. */
static size_t median3(const sorter *q, unsigned char *base, size_t i, size_t j, size_t k)
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

/* Elements a side of the block partition classifies at a time. */
#define SORT_BLOCK 64

/* Splits base[0, n) (n >= 2) around a pivot: returns p with [0, p) no
 * greater than it, base[p] the pivot, (p, n) no less. Elements equal to
 * the pivot count as misplaced on both sides and are swapped, so a run of
 * equal keys splits in the middle rather than to one side.
 *
 * A comparison through a pointer cannot be inlined, and a branch on its
 * result is a coin toss on random keys: the scans below never branch on
 * one. While the unknown zone [l, r) holds two blocks, each side
 * classifies SORT_BLOCK elements of its end, noting the offsets of the
 * misplaced ones without a branch, then as many pairs as both sides have
 * are swapped; a side whose block has no misplaced element left moves
 * on. What is left (at most two blocks) takes the classic scans, with the
 * pivot at 0 and the elements already placed as their sentinels. */
static size_t split_at(const sorter *q, unsigned char *base, size_t n, size_t piv)
{
    weft__elem_swap(base, at(q, base, piv), q->size);   /* the pivot waits at 0 */
    size_t l = 1, r = n, nl = 0, nr = 0, sl = 0, sr = 0;
    unsigned char offl[SORT_BLOCK], offr[SORT_BLOCK];
    while (r - l >= 2 * SORT_BLOCK) {
        if (nl == 0) {
            sl = 0;
            for (size_t k = 0; k < SORT_BLOCK; k++) {
                offl[nl] = (unsigned char)k;
                nl += q->cmp(at(q, base, l + k), base, q->arg) >= 0;
            }
        }
        if (nr == 0) {
            sr = 0;
            for (size_t k = 0; k < SORT_BLOCK; k++) {
                offr[nr] = (unsigned char)k;
                nr += q->cmp(at(q, base, r - 1 - k), base, q->arg) <= 0;
            }
        }
        size_t k = nl < nr ? nl : nr;
        for (size_t x = 0; x < k; x++)
            weft__elem_swap(at(q, base, l + offl[sl + x]), at(q, base, r - 1 - offr[sr + x]), q->size);
        nl -= k;
        nr -= k;
        sl += k;
        sr += k;
        if (nl == 0)
            l += SORT_BLOCK;   /* this block holds no element greater than the pivot now */
        if (nr == 0)
            r -= SORT_BLOCK;
    }
    /* The rest: [1, l) is no greater than the pivot, [r, n) no less (a
     * block with misplaced elements still noted is scanned again). */
    size_t i = l - 1, j = r;
    for (;;) {
        do
            i++;
        while (i < n && cmp_at(q, base, i, 0) < 0);
        do
            j--;
        while (cmp_at(q, base, j, 0) > 0);   /* stops at l - 1 at the latest: placed, or the pivot */
        if (i >= j)
            break;
        weft__elem_swap(at(q, base, i), at(q, base, j), q->size);
    }
    weft__elem_swap(base, at(q, base, j), q->size);
    return j;
}

/* split around the median of three, or of three medians of three when
 * long: cheap, though on random keys a side often holds 40% or 60% (a
 * nested split's sides balance between workers anyway). */
static size_t split(const sorter *q, unsigned char *base, size_t n)
{
    size_t m = n / 2, last = n - 1, piv;
    if (n >= 128) {
        size_t d = n / 8;
        piv = median3(q, base, median3(q, base, 0, d, 2 * d), median3(q, base, m - d, m, m + d),
                      median3(q, base, last - 2 * d, last - d, last));
    } else {
        piv = median3(q, base, 0, m, last);
    }
    return split_at(q, base, n, piv);
}

/* Moves base[i] down the max-heap base[0, n) to its place. */
static void sift(const sorter *q, unsigned char *base, size_t i, size_t n)
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

static void heap_sort(const sorter *q, unsigned char *base, size_t n)
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
static void intro_sort(const sorter *q, unsigned char *base, size_t n, unsigned depth)
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
    sort_small(q, base, n);
}

static unsigned log2_floor(size_t n)
{
    unsigned k = 0;
    while (n >>= 1)
        k++;
    return k;
}

/* Elements a sampled pivot is the median of: n / SORT_SAMPLE_PER, at
 * least SORT_SAMPLE_MIN and at most SORT_SAMPLE_MAX. */
#define SORT_SAMPLE_PER 256
#define SORT_SAMPLE_MIN 63
#define SORT_SAMPLE_MAX 4095

/* A pivot within a per cent or so of the middle, for the flat start's
 * splits, whose pieces do not balance afterwards: m elements spread
 * evenly over base[0, n) are swapped to its front and sorted there (m
 * log m comparisons: under 1% of a split's n), and the middle one is the
 * pivot (the rank of a sample's median strays about n / (2 sqrt(m)) from
 * n / 2: 0.8% at m = 4095; the median of three medians of three, over
 * ten times as far; a sample of 127 left pieces of 41-59% of 10^7 keys).
 * Sample k comes from k * step + step / 2, which is at
 * least k, so no swap moves an element already sampled. Returns the
 * pivot's index. n >= SORT_PAR_MIN. */
static size_t sampled_pivot(const sorter *q, unsigned char *base, size_t n)
{
    size_t m = n / SORT_SAMPLE_PER;
    m = m < SORT_SAMPLE_MIN ? SORT_SAMPLE_MIN : m > SORT_SAMPLE_MAX ? SORT_SAMPLE_MAX : m;
    size_t step = n / m;
    for (size_t k = 0; k < m; k++)
        weft__elem_swap(at(q, base, k), at(q, base, k * step + step / 2), q->size);
    intro_sort(q, base, m, 2 * log2_floor(m));
    return m / 2;
}

/* The two sides of a split, handed out as a loop of two chunks. */
struct sides {
    const sorter *q;
    unsigned char *base[2];
    size_t n[2];
    unsigned depth, par;
};

static void par_sort(const sorter *q, unsigned char *base, size_t n, unsigned depth, unsigned par);

static void sides_chunk(size_t b, size_t e, void *p)
{
    struct sides *sd = p;
    for (size_t k = b; k < e; k++)
        par_sort(sd->q, sd->base[k], sd->n[k], sd->depth, sd->par);
}

static void par_sort(const sorter *q, unsigned char *base, size_t n, unsigned depth, unsigned par)
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

/* Is the calling thread outside s (neither a worker nor a bound thread
 * of it)? Such a thread runs a loop's chunks but no other work while it
 * waits, so a loop it nests inside its own chunk keeps it busy only for
 * that loop's first chunk. */
static bool outside(weft_sched *s)
{
    weft__worker *w = weft__tls_worker;
    return !w || weft__worker_sched(w) != s;
}

/* Pieces an outside caller cuts the input into before they run. */
#define SORT_FLAT_MAX 64

/* The flat start of an outside caller's sort: its pieces, each split off
 * on the caller, run as one loop. */
struct flat {
    const sorter *q;
    unsigned char *base[SORT_FLAT_MAX];
    size_t n[SORT_FLAT_MAX];
    unsigned depth[SORT_FLAT_MAX];
};

/* A piece run on the outside caller is sorted there sequentially (see
 * outside); on a worker it splits again in parallel. */
static void flat_chunk(size_t b, size_t e, void *p)
{
    struct flat *f = p;
    for (size_t k = b; k < e; k++) {
        if (outside(f->q->s))
            intro_sort(f->q, f->base[k], f->n[k], f->depth[k]);
        else
            par_sort(f->q, f->base[k], f->n[k], f->depth[k], SORT_PAR_DEPTH);
    }
}

/* Called from outside s beside workers, with a CPU spare for the caller
 * (so that it runs chunks): splits the largest piece on the caller, each
 * around a sampled pivot, until there are as many pieces as threads, then
 * runs them as one loop,
 * the caller taking its share as in any loop. The splits before the loop
 * are sequential: log2 of the piece count passes over the input. */
static void flat_sort(const sorter *q, unsigned char *base, size_t count, unsigned depth)
{
    struct flat f = { .q = q, .base = { base }, .n = { count }, .depth = { depth } };
    size_t np = 1, want = (size_t)weft__sched_workers(q->s) + 1;
    if (want > SORT_FLAT_MAX)
        want = SORT_FLAT_MAX;
    while (np < want) {
        size_t big = 0;
        for (size_t k = 1; k < np; k++)
            if (f.n[k] > f.n[big])
                big = k;
        if (f.n[big] < SORT_PAR_MIN || f.depth[big] == 0)
            break;
        size_t p = split_at(q, f.base[big], f.n[big], sampled_pivot(q, f.base[big], f.n[big]));
        f.base[np] = at(q, f.base[big], p + 1);
        f.n[np] = f.n[big] - p - 1;
        f.n[big] = p;
        f.depth[np] = --f.depth[big];
        np++;
    }
    weft__run_all(q->s, np, flat_chunk, &f);
}

int weft_parallel_sort(weft_sched *s, void *base, size_t count, size_t size,
                       weft_cmp_fn cmp, void *arg)
{
    if (!s || !cmp || size == 0 || (!base && count > 0) || count > SIZE_MAX / size)
        return WEFT_EINVAL;
    if (count < 2)
        return WEFT_OK;
    sorter q = { .s = s, .size = size, .cmp = cmp, .arg = arg };
    unsigned depth = 2 * log2_floor(count);
    if (count >= SORT_PAR_MIN && weft__sched_workers(s) > 0 && weft__sched_spare_cpu(s) && outside(s))
        flat_sort(&q, base, count, depth);
    else
        par_sort(&q, base, count, depth, SORT_PAR_DEPTH);
    return WEFT_OK;
}

/* ---- the stable sort ------------------------------------------------------ */

/* Elements sorted by insertion before a leaf's merges begin. */
#define STABLE_RUN 16
/* A leaf holds at least this many elements (fewer leaves otherwise). */
#define STABLE_LEAF_MIN 2048
/* A piece of a round's output holds at least this many. */
#define STABLE_PIECE_MIN 4096

struct msort {
    sorter q;
    unsigned char *a, *b;        /* the input and the scratch */
    size_t n, leaf;
    bool leaves_to_b;            /* the leaves' result goes to the scratch */
    /* the round in progress */
    const unsigned char *src;
    unsigned char *dst;
    size_t width, piece, pieces_per_pair;
};

/* Merges A[0, an) and B[0, bn) into out, equal elements from A first. */
static void merge(const sorter *q, const unsigned char *A, size_t an,
                  const unsigned char *B, size_t bn, unsigned char *out)
{
    size_t sz = q->size;
    const unsigned char *ae = A + an * sz, *be = B + bn * sz;
    while (A < ae && B < be) {
        if (q->cmp(B, A, q->arg) < 0) {
            weft__elem_copy(out, B, sz);
            B += sz;
        } else {
            weft__elem_copy(out, A, sz);
            A += sz;
        }
        out += sz;
    }
    if (A < ae)
        memcpy(out, A, (size_t)(ae - A));
    else if (B < be)
        memcpy(out, B, (size_t)(be - B));
}

/* How many of the first k outputs of merge(A, an, B, bn) come from A:
 * the first i at which A[i] no longer goes before B[k - i - 1]. */
static size_t corank(const sorter *q, size_t k, const unsigned char *A, size_t an,
                     const unsigned char *B, size_t bn)
{
    size_t lo = k > bn ? k - bn : 0, hi = k < an ? k : an;
    while (lo < hi) {
        size_t i = lo + (hi - lo) / 2, j = k - i;   /* j >= 1: i < hi <= k */
        if (q->cmp(A + i * q->size, B + (j - 1) * q->size, q->arg) <= 0)
            lo = i + 1;
        else
            hi = i;
    }
    return lo;
}

/* Sorts a[0, n) with tmp[0, n) beside it; returns the one that holds the
 * result. */
static unsigned char *seq_sort(const sorter *q, unsigned char *a, unsigned char *tmp, size_t n)
{
    size_t sz = q->size;
    for (size_t i = 0; i < n; i += STABLE_RUN)
        sort_small(q, a + i * sz, n - i < STABLE_RUN ? n - i : STABLE_RUN);
    unsigned char *src = a, *dst = tmp;
    for (size_t w = STABLE_RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t an = n - lo < w ? n - lo : w;
            size_t bn = n - lo - an < w ? n - lo - an : w;
            merge(q, src + lo * sz, an, src + (lo + an) * sz, bn, dst + lo * sz);
        }
        unsigned char *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

static void leaf_chunk(size_t b, size_t e, void *p)
{
    struct msort *m = p;
    size_t sz = m->q.size;
    for (size_t k = b; k < e; k++) {
        size_t lo = k * m->leaf, len = m->n - lo < m->leaf ? m->n - lo : m->leaf;
        unsigned char *a = m->a + lo * sz, *t = m->b + lo * sz;
        unsigned char *got = seq_sort(&m->q, a, t, len);
        unsigned char *want = m->leaves_to_b ? t : a;
        if (got != want)
            memcpy(want, got, len * sz);
    }
}

/* Pieces [b, e) of a round: piece c is part c % pieces_per_pair of the
 * output of merge c / pieces_per_pair. */
static void round_chunk(size_t b, size_t e, void *p)
{
    struct msort *m = p;
    size_t sz = m->q.size, w = m->width;
    for (size_t c = b; c < e; c++) {
        size_t lo = c / m->pieces_per_pair * 2 * w;
        size_t an = m->n - lo < w ? m->n - lo : w;
        size_t bn = m->n - lo - an < w ? m->n - lo - an : w;
        size_t k0 = c % m->pieces_per_pair * m->piece;
        if (k0 >= an + bn)
            continue;   /* the last merge is shorter than the others */
        size_t k1 = an + bn - k0 > m->piece ? k0 + m->piece : an + bn;
        const unsigned char *A = m->src + lo * sz, *B = A + an * sz;
        size_t i0 = corank(&m->q, k0, A, an, B, bn), i1 = corank(&m->q, k1, A, an, B, bn);
        merge(&m->q, A + i0 * sz, i1 - i0, B + (k0 - i0) * sz, (k1 - i1) - (k0 - i0),
              m->dst + (lo + k0) * sz);
    }
}

int weft_parallel_sort_stable(weft_sched *s, void *base, size_t count, size_t size,
                              void *scratch, weft_cmp_fn cmp, void *arg)
{
    if (!s || !cmp || size == 0 || (!base && count > 0) || count > SIZE_MAX / size)
        return WEFT_EINVAL;
    if (scratch && weft__overlap(base, count * size, scratch, count * size))
        return WEFT_EINVAL;
    struct msort m = { .q = { .s = s, .size = size, .cmp = cmp, .arg = arg },
                       .a = base, .n = count };
    if (count <= STABLE_RUN) {
        sort_small(&m.q, base, count);   /* no scratch needed */
        return WEFT_OK;
    }
    size_t cap = 0;
    m.b = scratch ? scratch : weft__scratch_get(s, count * size, &cap);
    if (!m.b)
        return WEFT_ENOMEM;
    size_t threads = weft__sched_workers(s) + 1, nleaves = 1;
    while (nleaves < 2 * threads)
        nleaves *= 2;
    while (nleaves > 1 && count / nleaves < STABLE_LEAF_MIN)
        nleaves /= 2;
    m.leaf = weft__div_up(count, nleaves);
    unsigned rounds = 0;
    for (size_t w = m.leaf; w < count; w *= 2)
        rounds++;
    m.leaves_to_b = rounds % 2 == 1;
    weft__run_all(s, weft__div_up(count, m.leaf), leaf_chunk, &m);
    m.piece = weft__div_up(count, 8 * threads);
    if (m.piece < STABLE_PIECE_MIN)
        m.piece = STABLE_PIECE_MIN;
    bool in_b = m.leaves_to_b;
    for (size_t w = m.leaf; w < count; w *= 2) {
        m.src = in_b ? m.b : m.a;
        m.dst = in_b ? m.a : m.b;
        m.width = w;
        m.pieces_per_pair = weft__div_up(2 * w, m.piece);
        weft__run_all(s, weft__div_up(count, 2 * w) * m.pieces_per_pair, round_chunk, &m);
        in_b = !in_b;
    }
    if (!scratch)
        weft__scratch_put(s, m.b, cap);
    return WEFT_OK;
}
