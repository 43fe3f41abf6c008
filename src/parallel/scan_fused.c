/* This file is private to weft: weft_parallel_scan_fused, the scan
 * whose body folds each block from the identity and gets the block's
 * prefix apart, so that a block whose prefix is known when it starts is
 * read once.
 *
 * The result is fixed by the blocks (weft__scan_plan: the range and the
 * grain alone): block k's sum is its iterations folded from the
 * identity; prefix 0 is the identity and prefix k + 1 is prefix k folded
 * with sum k; output i of block k is prefix k folded with block k's fold
 * up to i. The body computes that fold whether it writes or not, so one
 * call with the prefix at hand writes the outputs and yields the sum
 * that the next prefix needs: one pass over the block where
 * weft_parallel_scan (range.c), whose body writes by folding onto the
 * prefix, needs a separate fold for the sum. Which thread runs which
 * block, and in which mode, changes the work done, never a bit of the
 * result.
 *
 * Roles. One loop over the blocks (weft_parallel_for, a chunk per
 * block), each chunk call doing one of two things:
 *   - The chain (taken by the first call that runs). It holds prefix k and
 *     walks blocks left to right. A free block it claims and runs with
 *     its prefix (fused: outputs and sum in one pass) while every block
 *     before it is written; once it passes a block summed by someone
 *     else, whose outputs it leaves to the second pass, it only sums the
 *     free blocks it claims (a block that writes may wait for anything
 *     an earlier block does, so no block may be written in the first
 *     loop after one that is not). A block summed by someone else gives
 *     the next prefix at once.
 *   - A summer (every other call): claims the rightmost free block
 *     (`back` counts down) and folds its sum alone.
 * So at one thread the chain fuses every block: each element is read
 * once and written once. At two the chain fuses from the left while the
 * other thread sums from the right; where they meet the chain runs over
 * the summed blocks, and the second pass, a loop over them alone,
 * writes them on both threads. A block is never summed twice.
 *
 * The chain never waits for a summer. Reaching a block being summed, it
 * parks there: it leaves the prefix (and whether it still fuses) in the
 * block's slot and hands itself to the summer, who takes it over when
 * its sum is done (a state CAS decides which of the two saw the other;
 * exactly one goes on). The summer that takes over a chain that still
 * fuses writes its block's outputs at once (the input is in its cache).
 *
 *   1. First loop, chunk call: if the chain is not taken, take it and
 *      run it from block 0. Else claim the rightmost free block, FREE ->
 *      SUMMING (none left: return), fold its sum, then SUMMING ->
 *      SUMMED; if the block was PARKED meanwhile, take the chain over.
 *   2. The chain at block k: FREE -> CHAIN and run it (fused, or sum
 *      only once it no longer fuses); SUMMED: stop fusing; SUMMING:
 *      store whether it fuses, SUMMING -> PARKED and return (the CAS
 *      failing means SUMMED: as above). Then prefix k + 1 = prefix k op
 *      sum k, and on. After the last block, prefix nblocks is the total.
 *   3. Second loop, after the first's wait: blocks [written, nblocks),
 *      each from its prefix, in order as a loop of their own.
 * Every chain step ends in a block's next prefix, and a parked chain is
 * taken over by the summer of the block it parked at; so when the
 * first loop's wait returns every prefix and the total are in place.
 *
 * Blocking: a summer's call, and a chain's sum-only call, fold only
 * (the contract: they must not wait for an earlier block's outputs). A
 * block is written in the first loop only when every block before it
 * is written; the second loop runs its blocks in order, so a block that
 * writes may wait for anything an earlier block does. A free block is
 * always claimed by a later chunk call if not by the chain (a chunk
 * call claims at most one, and there are as many calls as blocks), so a
 * fold waiting for an earlier block's fold is never stranded.
 * Only the first loop may fail, and it runs every chunk or none: then
 * nothing is written. The second may not (weft__run_all).
 *
 * Synchronization
 *   taken  the chain is taken: exchanged 0 -> 1 by the first chunk call
 *          (relaxed: the chain reads only prefix 0, put in place before
 *          the loop, whose queueing publishes it).
 *   back   the next summer claims block back - 1: lowered by CAS from
 *          summers, set to 0 by the chain at its end (relaxed: it only
 *          hands out distinct indices; the block's state CAS is the
 *          claim, so a stale value costs a failed claim, never a block).
 *   state  a block's: FREE, CHAIN, SUMMING, SUMMED, PARKED. FREE -> CHAIN
 *          by the chain (acquire, as its failure must be) and FREE ->
 *          SUMMING by a summer (relaxed: a claim, no data with it; a
 *          summer whose claim fails stops, as the chain has then claimed
 *          or passed every block up to it).
 *          SUMMING -> SUMMED by the summer (release: publishes the sum;
 *          the chain's failed CAS that reads it acquires). SUMMING ->
 *          PARKED by the chain (release: publishes the prefix and fuse;
 *          the summer's failed CAS that reads it acquires). Each block's
 *          state moves once out of FREE and once out of SUMMING.
 *   slots  a block's sum, written by whoever claimed it; its prefix, by
 *          the chain at the block before (or the caller for block 0);
 *          fuse, by the chain parking there; its write sum (RUN), by
 *          the one call that writes its outputs. written, by the chain.
 *          The caller reads prefixes, written and the total after the
 *          first loop's wait, which carries every chunk's writes; the
 *          second loop's queueing publishes them to its chunks.
 *   out    each output written by the one call that writes its block.
 */
#include <stdatomic.h>

#include "algo.h"

enum { FREE, CHAIN, SUMMING, SUMMED, PARKED };

#ifdef WEFT_TEST_SEAMS
void (*weft__scan_park_seam)(size_t k);
#endif

/* The head of a block's slot; its values follow at WEFT_CACHELINE. */
struct fslot {
    atomic_int state;
    bool fuse;                   /* set by a chain parked here: it still fused */
};

struct fscan {
    size_t begin, end, step, nblocks;
    unsigned char *slots;        /* nblocks + 1: the last one's prefix is the total */
    size_t size, value, stride;  /* bytes of a sum; of a value in a slot, and of a slot */
    const void *identity;
    weft_scan_block_fn body;
    weft_combine_fn combine;
    void *arg;
    size_t written;              /* blocks [0, written) are written (the chain's) */
    atomic_int taken;            /* the chain is taken */
    atomic_size_t back;          /* summers claim blocks below it, right to left */
};

/* A slot's values: the block's sum, its prefix, and the sum of a call
 * that writes after the block was summed (kept apart from the sum). */
enum { SUM, PREFIX, RUN };

static struct fslot *slot(const struct fscan *c, size_t k)
{
    return (struct fslot *)(void *)(c->slots + k * c->stride);
}

static unsigned char *val(const struct fscan *c, size_t k, unsigned v)
{
    return c->slots + k * c->stride + WEFT_CACHELINE + v * c->value;
}

/* Runs block k's body into value v from the identity, writing its
 * outputs from its prefix if write. */
static void run_block(const struct fscan *c, size_t k, unsigned v, bool write)
{
    size_t lo = c->begin + k * c->step;
    size_t hi = c->end - lo > c->step ? lo + c->step : c->end;
    memcpy(val(c, k, v), c->identity, c->size);
    c->body(lo, hi, val(c, k, v), write ? val(c, k, PREFIX) : NULL, c->arg);
}

/* Prefix k + 1 (for the last block: the total) from prefix k and sum k. */
static void next_prefix(const struct fscan *c, size_t k)
{
    unsigned char *p = val(c, k + 1, PREFIX);
    memcpy(p, val(c, k, PREFIX), c->size);
    c->combine(p, val(c, k, SUM), c->arg);
}

/* Step 2: the chain from block k, holding its prefix, fusing if fuse. */
static void chain(struct fscan *c, size_t k, bool fuse)
{
    for (; k < c->nblocks; k++) {
        struct fslot *h = slot(c, k);
        int st = FREE;
        if (atomic_compare_exchange_strong_explicit(&h->state, &st, CHAIN, memory_order_acquire,
                                                    memory_order_acquire)) {   /* acquire on failure: a SUMMED block's sum (a claim needs none; C11 wants success as strong) */
            run_block(c, k, SUM, fuse);
            if (fuse)
                c->written = k + 1;
        } else {
            if (st == SUMMING) {
                h->fuse = fuse;
                /* release: prefix k and fuse to the summer; acquire on failure: its sum */
                if (atomic_compare_exchange_strong_explicit(&h->state, &st, PARKED, memory_order_release,
                                                            memory_order_acquire)) {
#ifdef WEFT_TEST_SEAMS
                    if (weft__scan_park_seam)
                        weft__scan_park_seam(k);   /* tests: the chain has parked at block k */
#endif
                    return;   /* the summer goes on from here */
                }
            }
            fuse = false;   /* SUMMED: written in the second loop, so is every block after it */
        }
        next_prefix(c, k);
    }
    /* Every block is claimed: the calls still to come return at their
     * first load instead of each claiming an index to find it taken. */
    atomic_store_explicit(&c->back, 0, memory_order_relaxed);   /* relaxed: a hint; the state CAS decides */
}

/* A summer whose block k was parked at: the chain, from there. */
static void take_over(struct fscan *c, size_t k)
{
    bool fuse = slot(c, k)->fuse;
    if (fuse) {   /* every block before it is written: write it now, its input in the cache */
        run_block(c, k, RUN, true);
        c->written = k + 1;
    }
    next_prefix(c, k);
    chain(c, k + 1, fuse);
}

/* Step 1: one role per call (see the block above). */
static void first_loop(size_t b, size_t e, void *p)
{
    struct fscan *c = p;
    for (size_t i = b; i < e; i++) {
        if (!atomic_load_explicit(&c->taken, memory_order_relaxed) &&
            !atomic_exchange_explicit(&c->taken, 1, memory_order_relaxed)) {   /* relaxed: see Synchronization; the load spares the rest a locked exchange */
            chain(c, 0, true);
            continue;
        }
        size_t k = atomic_load_explicit(&c->back, memory_order_relaxed);
        do {
            if (k == 0)
                return;
        } while (!atomic_compare_exchange_weak_explicit(&c->back, &k, k - 1, memory_order_relaxed,
                                                        memory_order_relaxed));   /* relaxed: an index only */
        k--;
        struct fslot *h = slot(c, k);
        int st = FREE;
        if (!atomic_compare_exchange_strong_explicit(&h->state, &st, SUMMING, memory_order_relaxed,
                                                     memory_order_relaxed))   /* relaxed: a claim */
            return;   /* the chain is here or past: nothing free to the left */
        run_block(c, k, SUM, false);
        st = SUMMING;
        if (!atomic_compare_exchange_strong_explicit(&h->state, &st, SUMMED, memory_order_release,
                                                     memory_order_acquire))   /* release: the sum; acquire on failure: the parked prefix */
            take_over(c, k);
    }
}

/* Step 3 for chunks [b, e): the blocks from written on, in order. */
static void second_loop(size_t b, size_t e, void *p)
{
    struct fscan *c = p;
    for (size_t i = b; i < e; i++)
        run_block(c, c->written + i, RUN, true);
}

int weft_parallel_scan_fused(weft_sched *s, size_t begin, size_t end, size_t grain,
                             void *sum, size_t sum_size, const void *identity,
                             weft_scan_block_fn body, weft_combine_fn combine, void *arg)
{
    if (!s || !sum || sum_size == 0 || !identity || !body || !combine || begin > end)
        return WEFT_EINVAL;
    if (begin == end) {
        memmove(sum, identity, sum_size);
        return WEFT_OK;
    }
    struct fscan c = { .begin = begin, .end = end, .size = sum_size, .identity = identity,
                       .body = body, .combine = combine, .arg = arg };
    c.nblocks = weft__scan_plan(end - begin, grain, &c.step);
    c.value = (sum_size + 15) & ~(size_t)15;   /* each value aligned as malloc's */
    if (c.value < sum_size || c.value > (SIZE_MAX - 2 * WEFT_CACHELINE) / 4)
        return WEFT_ENOMEM;
    c.stride = (WEFT_CACHELINE + 3 * c.value + WEFT_CACHELINE - 1) & ~(size_t)(WEFT_CACHELINE - 1);
    if (c.nblocks >= SIZE_MAX / c.stride)
        return WEFT_ENOMEM;
    size_t bytes = (c.nblocks + 1) * c.stride, cap = 0;
    _Alignas(WEFT_CACHELINE) unsigned char local[WEFT__ALGO_STACK];
    c.slots = local;
    if (bytes > sizeof local && !(c.slots = weft__scratch_get(s, bytes, &cap)))
        return WEFT_ENOMEM;
    for (size_t k = 0; k < c.nblocks; k++)
        atomic_init(&slot(&c, k)->state, FREE);
    atomic_init(&c.taken, 0);
    atomic_init(&c.back, c.nblocks);
    memcpy(val(&c, 0, PREFIX), identity, sum_size);
    int rc = weft_parallel_for(s, 0, c.nblocks, 1, first_loop, &c);
    if (rc == WEFT_OK) {
        weft__run_all(s, c.nblocks - c.written, second_loop, &c);   /* outputs are being written: may not fail */
        memmove(sum, val(&c, c.nblocks, PREFIX), sum_size);
    }
    if (c.slots != local)
        weft__scratch_put(s, c.slots, cap);
    return rc;
}
