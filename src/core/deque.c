/* This file is private to weft: the per-worker Chase-Lev deque.
 *
 * Synchronization
 * ---------------
 * Shared variables (all through ck_pr; nothing here uses C11 atomics):
 *   top     uint64_t. Changed only by CAS: by thieves in steal, by the owner
 *           in pop (last item) and pop_oldest. Read by everyone. It only
 *           grows and is 64 bits wide, so it never wraps and a CAS on it
 *           cannot suffer ABA.
 *   bottom  uint64_t. Written by the owner only (push, pop); read by
 *           thieves (steal, size).
 *   buf[i]  weft__node *. Written by the owner in push; read by the owner
 *           (pop, pop_oldest) and by thieves (steal). Loads and stores are
 *           ck_pr_load_ptr / ck_pr_store_ptr: a thief holding a stale top may
 *           read a slot the owner is refilling; it must get a whole pointer
 *           (which it then discards when its CAS fails).
 *   buf, mask  written by init, read-only afterwards.
 *
 * Invariants: the items are buf[top & mask .. bottom & mask), oldest at
 * top; top <= bottom <= top + capacity, except inside pop where bottom may
 * be top - 1 for a moment (every comparison below is on the signed
 * difference, so that moment reads as "empty"). push panics if it finds
 * top past bottom: only a broken protocol gets there.
 *
 * Protocol (Chase-Lev 2005 with the fences of Lê et al. 2013):
 *   push (owner)
 *     1. load bottom b (own field) and top t; load->store fence so the slot
 *        is not overwritten before the thief that freed it has read it.
 *     2. b - t == capacity: full, return false.
 *     3. store buf[b] = n; store fence; store bottom = b + 1 (publishes n).
 *   push_many (owner): push's steps for k slots: one look at top, the k
 *     slot stores, one store fence, one bottom store (b + k).
 *   pop (owner)
 *     0. top == bottom: empty, return at once (no fence: top only grows
 *        and never passes bottom outside pop, so even a stale top equal
 *        to bottom means empty). pop_expected skips this step; on an
 *        empty deque step 3 then finds t > b - 1 and restores bottom.
 *     1. store bottom = b - 1 (claims slot b - 1 against thieves).
 *     2. StoreLoad fence.
 *     3. load top t. t < b - 1: take slot b - 1, no CAS (no thief can
 *        reach it, see pop). t == b - 1: the last item; CAS top t -> t + 1
 *        races the thieves for it; then bottom = t + 1. t > b - 1: empty,
 *        restore bottom.
 *   steal (any thread)
 *     1. load top t; full fence (a compiler barrier on TSO, see steal);
 *        load bottom b. b <= t: empty.
 *     2. load fence; load buf[t].
 *     3. CAS top t -> t + 1. Failure: another thief or the owner took it;
 *        return NULL. Exactly one item per steal: see steal for why a
 *        batch steal is not allowed (the owner's pop_oldest may batch).
 *   pop_oldest (owner)
 *     1. load top t; read up to max slots from t; CAS top t -> t + n,
 *        retried with the new top if a thief moved it.
 *
 * ThreadSanitizer cannot see ck_pr (inline asm). The edge that matters to
 * callers, "what the pusher wrote into the record is visible to whoever
 * takes it", is annotated on the record itself: WEFT_TSAN_RELEASE(n) right
 * before push publishes n, WEFT_TSAN_ACQUIRE(n) right after a successful
 * pop, steal or pop_oldest.
 */
#include <ck_pr.h>

#include "deque.h"

/* The thieves' half of the Dekker pattern with pop: top load, then bottom
 * load, ordered by a sequentially consistent fence (Lê et al. 2013, steal).
 * Under TSO loads are never reordered with older loads, and the owner's
 * StoreLoad fence in pop already drains its bottom store before its top
 * load, so a compiler barrier is enough there; weaker models need the full
 * fence. This keys on CK's CK_MD_TSO like every ck_pr fence does: a build
 * against the wrong ck_md.h (AArch64 cross builds,
 * docs/toolchain.md#concurrency-kit) is wrong everywhere, not only here. */
#if defined(CK_MD_TSO)
# define thief_fence() ck_pr_fence_load()
#else
# define thief_fence() ck_pr_fence_memory()
#endif

int weft__deque_init(weft__deque *d, unsigned capacity, const weft_allocator *a)
{
    if (capacity < 2 || (capacity & (capacity - 1)) != 0)
        return WEFT_EINVAL;
    weft__node **buf = weft__alloc_with(a, (size_t)capacity * sizeof *buf);
    if (buf == NULL)
        return WEFT_ENOMEM;
    d->buf = buf;
    d->mask = capacity - 1;
    d->alloc = a;
    ck_pr_store_64(&d->top, 0);     /* unshared yet; sharing the deque (thread start, or a release by the caller) publishes it */
    ck_pr_store_64(&d->bottom, 0);  /* same */
    return 0;
}

void weft__deque_fini(weft__deque *d)
{
    weft__free_with(d->alloc, d->buf, (size_t)(d->mask + 1) * sizeof *d->buf);
    d->buf = NULL;
}

/* Callable from: any thread. */
weft__node *weft__deque_steal(weft__deque *d)
{
    uint64_t t = ck_pr_load_64(&d->top);
    thief_fence();                           /* SC: top load before bottom load; pairs with store_load fence in pop */
    uint64_t b = ck_pr_load_64(&d->bottom);
    if ((int64_t)(b - t) <= 0)
        return NULL;                         /* empty, or the owner is claiming the last item */
    ck_pr_fence_load();                      /* acquire: bottom before slot; pairs with store fence in push */
    weft__node *n = ck_pr_load_ptr(&d->buf[t & d->mask]);
    /* Our slot read must come before the CAS that lets the owner reuse the
     * slot (the owner refills slot t only after reading top > t). */
    ck_pr_fence_load_atomic();               /* slot load before CAS; pairs with load_store fence in push */
    /* One item only. A thief may not take n > 1 items with one CAS on top:
     * the owner's pop takes every item but the last without a CAS, so a
     * batch CAS t -> t + n could include the slot the owner is taking at
     * that moment and both would run it. (Tokio and Go allow steal-half
     * because their owner pop is a CAS too; Chase-Lev trades that for a
     * CAS-free pop.) */
    if (!ck_pr_cas_64(&d->top, t, t + 1))    /* full barrier; pairs with the CAS in pop and other thieves' CAS */
        return NULL;                         /* lost to another thief or to the owner */
    WEFT_TSAN_ACQUIRE(n);
    return n;
}

/* Callable from: owner worker only. Safe as a batch because the owner,
 * the only thread that moves bottom, is here and not in pop: every item in
 * [top, bottom) can only leave through a CAS on top, so one CAS
 * t -> t + k claims exactly the k items read, or fails because a thief
 * took the one at t. */
unsigned weft__deque_pop_oldest(weft__deque *d, weft__node **out, unsigned max)
{
    uint64_t b = ck_pr_load_64(&d->bottom);  /* owner's own field: does not move while we are here */
    for (;;) {
        uint64_t t = ck_pr_load_64(&d->top);
        int64_t avail = (int64_t)(b - t);
        if (avail <= 0 || max == 0)
            return 0;
        unsigned k = (uint64_t)avail < max ? (unsigned)avail : max;
        for (unsigned i = 0; i < k; i++)
            out[i] = ck_pr_load_ptr(&d->buf[(t + i) & d->mask]);
        ck_pr_fence_load_atomic();           /* slot loads before CAS; pairs with load_store fence in push (our own later refill) */
        if (ck_pr_cas_64(&d->top, t, t + k)) { /* full barrier; pairs with the CAS in steal */
            for (unsigned i = 0; i < k; i++)
                WEFT_TSAN_ACQUIRE(out[i]);
            return k;
        }
        /* a thief moved top: read again from the new top */
    }
}

/* Owner-only with no thieves: plain loads and stores are enough. */
void weft__deque_swap_newest(weft__deque *d, uint64_t k)
{
    uint64_t t = ck_pr_load_64(&d->top);
    uint64_t b = ck_pr_load_64(&d->bottom);
    if (b - t < 2)
        return;
    weft__node **newest = &d->buf[(b - 1) & d->mask];
    weft__node **other = &d->buf[(t + k % (b - t)) & d->mask];
    weft__node *n = *newest;
    *newest = *other;
    *other = n;
}

