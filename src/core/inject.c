/* This file is private to weft: the global ring with its overflow list.
 *
 * Synchronization
 * ---------------
 * Shared variables:
 *   lock         a pthread mutex (weft__mutex_init_brief: a waiter spins a
 *                little before it sleeps). Held by every push (the
 *                producers' side is serialized) and by a pop that needs
 *                the overflow list.
 *   ring, slots  a ck_ring used as SPMC: the one producer at a time is
 *                whoever holds `lock` (ck_ring_enqueue_spmc); consumers
 *                dequeue lock-free from any thread (ck_ring_dequeue_spmc:
 *                c_head and p_tail loads, load fences, slot copy, CAS on
 *                c_head). The producer stores the slot, fences, then stores
 *                p_tail.
 *   over_len     unsigned, through ck_pr only. Number of items on the
 *                overflow list. Written only with `lock` held, when the
 *                list changes; read without the lock by pop_batch (is there
 *                a list to look at?) and by empty/size.
 *   head, tail   the overflow list, linked through weft__node.next; only
 *                with `lock` held. It is dealt over WEFT__INJECT_LANES
 *                lanes: the k-th item appended since init goes to lane
 *                k mod LANES (push_lane), and pops take lanes in the same
 *                rotation (pop_lane), so the lanes together are one FIFO.
 *   push_lane, pop_lane  only with `lock` held.
 *   spilled, overflows  statistics; only with `lock` held.
 *
 * Why producers take a lock although ck_ring has an MPMC enqueue: the MP
 * enqueue reserves a slot with a CAS on p_head, fills it, then spins
 * (pause, never yielding) until every earlier reservation has committed
 * p_tail. A producer preempted between reserving and committing stalls
 * every later producer, and hides everything behind it from consumers,
 * for as long as it stays off-CPU. With more runnable producers than
 * cores (workers offloading while oversubscribed, as RELIABILITY.md runs
 * on purpose), test 4 of stress_queues slowed to a crawl (a few hundred
 * items in tens of seconds, on 2 cores shared with other busy processes)
 * and tripped its 300 s watchdog. Under the mutex a waiting
 * producer sleeps instead, the ring has one producer at a time, and a
 * batch push costs one lock round trip for the whole batch.
 *
 * Invariant (FIFO): every item on the overflow list was pushed after every
 * item in the ring. Pushes are totally ordered by the lock, so the order
 * is one FIFO order for all producers.
 *
 * Invariant (lanes): push_lane - pop_lane = over_len (mod LANES), and
 * lane pop_lane + i holds items i, i + LANES, i + 2 LANES, ... of the list
 * in order. So the oldest item is always the head of lane pop_lane.
 *
 * Why lanes: a burst (one task spawning 10^6) leaves most of its records
 * on this list, out of cache by the time they are popped. As one chain,
 * each pop of 32 followed 32 dependent misses (a quarter of the burst's
 * time). Over 32 lanes the heads a pop needs are known before any of them
 * is read, and each lane's next head is prefetched as the pop passes it,
 * ready for the next pop.
 *
 * Protocol:
 *   push, push_batch (any thread)
 *     1. Take the lock.
 *     2. While the list is empty and the ring accepts the next item,
 *        enqueue it in the ring (store slot, store fence, store p_tail).
 *     3. The rest (the list was non-empty, or the ring is full) is appended
 *        to the list, each item to lane push_lane, which then advances:
 *        once the list is non-empty every push goes behind it, even when
 *        the ring has room again, until the list drains. Store over_len =
 *        new length. Unlock.
 *   pop_batch (any thread)
 *     1. Dequeue from the ring, lock-free, up to max.
 *     2. Room left and over_len != 0: take the lock.
 *     3. Dequeue from the ring again until it is empty or max is reached.
 *        While we hold the lock no push can run, so once the ring reads
 *        empty here it stays empty, and everything older than the list's
 *        head has been taken. (Without this step, step 1 could have found
 *        the ring empty just before a push put x1 in the ring and a later
 *        one put x2 on the list; taking x2 now would overtake x1.)
 *     4. Take from the list up to max, each from the head of lane pop_lane,
 *        which then advances; prefetch the lane's new head. Store
 *        over_len = what is left, unlock.
 *
 * The race between "the list becomes empty" and a push choosing ring or
 * list does not arise: both happen under the lock. The list becomes empty
 * only in pop_batch step 4, at the moment its last items leave it (they are
 * in the consumer's out array: their dequeue has happened), so no consumer
 * is still draining older list items when the next push picks the ring.
 *
 * A pop that reads a stale over_len == 0 returns fewer items (perhaps
 * none) although the list has some; callers treat 0 as "look again later".
 * empty() after a seq_cst fence cannot be stale about a push that
 * completed before the fence: the push's last store (p_tail, or over_len
 * under the lock) precedes it.
 *
 * Memory orders: the ring's are CK's (store fence before the p_tail store
 * = release; load fence after the p_tail load = acquire; the consumer's CAS
 * on c_head after its slot copy, with fence_store_atomic). The producer's
 * full check loads c_head: a stale c_head only makes the ring look fuller
 * (the item then goes to the list, still in order). The list and its
 * counters are ordered by the mutex. over_len is a hint outside the lock;
 * correctness rests on the lock, never on which value a racing reader of
 * over_len sees.
 *
 * ThreadSanitizer: TSAN cannot see ck_pr (inline asm), so to it the
 * ring's plain slot copies look unordered: a race inside _ck_ring_
 * between a producer's slot store and a consumer's slot load. Those
 * copies are hidden from it instead (RING_BEGIN/RING_END around each
 * ck_ring call: the TSAN runtime's AnnotateIgnoreReads/WritesBegin/End,
 * which stop it recording this thread's plain memory accesses, and
 * nothing else, until the matching End), and each record carries its
 * own edge: WEFT_TSAN_RELEASE(n) before a push publishes n,
 * WEFT_TSAN_ACQUIRE(n) after a pop returns it. So no suppression is
 * needed, in weft's tests or in a user's program.
 * Deliberately not an edge through the ring object itself (release and
 * acquire on &q->ring): every pop would then acquire everything every
 * earlier push released, and a real race on a task's data (a write
 * after the spawn, a read in the task) was hidden by a later, unrelated
 * spawn. The per-record edge orders only what its own spawner wrote
 * before publishing it; tests/core/tsan_ring_canary.c checks that such a
 * race is still reported. (One limit remains: pop_batch acquires every
 * record of a batch before the first of them runs, so a write made
 * between two spawns whose records leave in one batch looks ordered
 * before the earlier task. The canary pops one record at a time.)
 * Only the accesses inside the ck_ring calls are ignored (the slot, the
 * ring's mask and size fields, the copy into out[]): the records
 * themselves are read and written outside. The list is under the mutex,
 * which TSAN sees.
 */
#include <ck_pr.h>
#include <ck_ring.h>

#include "inject.h"

#ifdef WEFT_TSAN
/* Exported by the TSAN runtime (clang's libclang_rt.tsan and gcc's
 * libtsan both define them; no installed header declares them). The
 * file and line only label the region in TSAN's debug output. */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
# define RING_BEGIN()                                                          \
    (AnnotateIgnoreReadsBegin(__FILE__, __LINE__), AnnotateIgnoreWritesBegin(__FILE__, __LINE__))
# define RING_END()                                                            \
    (AnnotateIgnoreWritesEnd(__FILE__, __LINE__), AnnotateIgnoreReadsEnd(__FILE__, __LINE__))
#else
# define RING_BEGIN() ((void)0)
# define RING_END() ((void)0)
#endif

/* ck_ring's enqueue and dequeue with their slot copies hidden from TSAN
 * (see above). The orders are CK's: the enqueue stores the slot, a store
 * fence, then p_tail (release); the dequeue loads p_tail, a load fence
 * (acquire), copies the slot, then CASes c_head. */
static inline bool ring_put(weft__inject *q, weft__node *n)
{
    RING_BEGIN();
    bool ok = ck_ring_enqueue_spmc(&q->ring, q->slots, n);   /* store fence, then p_tail store (release); pairs with the load fence in ring_take */
    RING_END();
    return ok;
}

static inline bool ring_take(weft__inject *q, weft__node **out)
{
    RING_BEGIN();
    bool ok = ck_ring_dequeue_spmc(&q->ring, q->slots, out);   /* p_tail load, then load fence (acquire); pairs with the store fence in ring_put */
    RING_END();
    return ok;
}

int weft__inject_init(weft__inject *q, unsigned capacity, const weft_allocator *a)
{
    if (capacity < 4 || (capacity & (capacity - 1)) != 0)
        return WEFT_EINVAL;
    ck_ring_buffer_t *slots = weft__alloc_with(a, (size_t)capacity * sizeof *slots);
    if (slots == NULL)
        return WEFT_ENOMEM;
    if (weft__mutex_init_brief(&q->lock) != 0) {
        weft__free_with(a, slots, (size_t)capacity * sizeof *slots);
        return WEFT_ENOMEM;
    }
    ck_ring_init(&q->ring, capacity);
    q->slots = slots;
    q->alloc = a;
    for (unsigned j = 0; j < WEFT__INJECT_LANES; j++) {
        q->head[j] = NULL;
        q->tail[j] = NULL;
    }
    q->push_lane = 0;
    q->pop_lane = 0;
    q->spilled = 0;
    q->overflows = 0;
    ck_pr_store_uint(&q->over_len, 0);  /* unshared yet; sharing the queue publishes it */
    return 0;
}

void weft__inject_fini(weft__inject *q)
{
    pthread_mutex_destroy(&q->lock);
    weft__free_with(q->alloc, q->slots, (size_t)ck_ring_capacity(&q->ring) * sizeof *q->slots);
    q->slots = NULL;
}

/* Steps 1-3 of push: appends v[0..count) behind everything queued.
 * Callable from: any thread (not a signal handler: it takes the mutex). */
void weft__inject_push_batch(weft__inject *q, weft__node **v, unsigned count)
{
    unsigned i = 0;
    for (unsigned k = 0; k < count; k++)
        WEFT_TSAN_RELEASE(v[k]);
    pthread_mutex_lock(&q->lock);
    unsigned listed = ck_pr_load_uint(&q->over_len);   /* under lock: exact */
    if (listed == 0) {
        /* Step 2: nothing on the list, so the ring is the tail of the queue. */
        while (i < count && ring_put(q, v[i]))   /* release: publishes v[i]; pairs with the acquire in ring_take */
            i++;
    }
    if (i < count) {
        /* Step 3: the list is non-empty or the ring is full. */
        unsigned added = count - i;
        if (listed == 0)
            q->overflows++;
        unsigned j = q->push_lane;
        for (; i < count; i++) {
            /* The lane's tail went in LANES items ago: still in cache. */
            weft__node_set_next(v[i], NULL);   /* links keep a hook record's mark (node.h) */
            if (q->tail[j])
                weft__node_set_next(q->tail[j], v[i]);
            else
                q->head[j] = v[i];
            q->tail[j] = v[i];
            j = (j + 1) & (WEFT__INJECT_LANES - 1);
        }
        q->push_lane = j;
        q->spilled += added;
        ck_pr_store_uint(&q->over_len, listed + added); /* under lock; read lock-free in pop_batch and empty */
    }
    pthread_mutex_unlock(&q->lock);
}

/* Callable from: any thread (not a signal handler). */
void weft__inject_push(weft__inject *q, weft__node *n)
{
    weft__inject_push_batch(q, &n, 1);
}

/* Callable from: any thread. */
unsigned weft__inject_pop_batch(weft__inject *q, weft__node **out, unsigned max)
{
    unsigned n = 0;

    /* Step 1: the ring, lock-free. */
    while (n < max && ring_take(q, &out[n])) {   /* acquire: pairs with the release in ring_put */
        WEFT_TSAN_ACQUIRE(out[n]);
        n++;
    }
    if (n == max || ck_pr_load_uint(&q->over_len) == 0)  /* hint; pairs with the store under lock in push_batch */
        return n;

    pthread_mutex_lock(&q->lock);
    /* Step 3: the ring again. No push runs while we hold the lock, so an
     * empty ring stays empty and the list's head is the oldest item. */
    while (n < max && ring_take(q, &out[n])) {   /* as in step 1 */
        WEFT_TSAN_ACQUIRE(out[n]);
        n++;
    }
    /* Step 4: the ring was seen empty (or we are full); the list is next. */
    unsigned listed = ck_pr_load_uint(&q->over_len);   /* under lock: exact */
    if (n < max && listed != 0) {
        unsigned take = max - n < listed ? max - n : listed;
        unsigned j = q->pop_lane;
        for (unsigned k = 0; k < take; k++) {
            weft__node *x = q->head[j];
            weft__node *next = weft__node_next(x);
            q->head[j] = next;
            if (next)
                __builtin_prefetch(next);           /* the lane's next pop: LANES items from now */
            else
                q->tail[j] = NULL;
            weft__node_set_next(x, NULL);
            WEFT_TSAN_ACQUIRE(x);                   /* the mutex orders it already; kept for symmetry */
            out[n++] = x;
            j = (j + 1) & (WEFT__INJECT_LANES - 1);
        }
        q->pop_lane = j;
        ck_pr_store_uint(&q->over_len, listed - take); /* under lock; 0: pushes use the ring again */
    }
    pthread_mutex_unlock(&q->lock);
    return n;
}

/* Callable from: any thread. */
unsigned weft__inject_size(const weft__inject *q)
{
    return ck_ring_size(&q->ring) + ck_pr_load_uint(&q->over_len);
}

/* Callable from: any thread. */
weft__inject_stats weft__inject_get_stats(weft__inject *q)
{
    pthread_mutex_lock(&q->lock);
    weft__inject_stats s = { q->spilled, q->overflows };
    pthread_mutex_unlock(&q->lock);
    return s;
}
