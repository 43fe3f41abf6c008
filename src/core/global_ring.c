/* This file is private to weft: the global ring with its overflow list.
 *
 * Synchronization
 * ---------------
 * Shared variables, once per iq (the main queue, and each port below):
 *   lock         a pthread mutex (weft__mutex_init_brief: a waiter spins a
 *                little before it sleeps). Held by every push to the
 *                main queue (the producers' side is serialized), by a
 *                port's owner when it appends to the port's list (see
 *                Ports), and by a pop that needs the overflow list.
 *   ring, slots  a ck_ring used as SPMC: the one producer at a time is
 *                whoever holds `lock` (main queue), or the port's owner
 *                (ck_ring_enqueue_spmc); consumers
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
 * every later producer, and hides everything behind it from consumers, for
 * as long as it stays off-CPU. With more runnable producers than cores
 * (workers offloading while oversubscribed, as the tests of
 * docs/reliability.md run on purpose), test 4 of stress_queues slowed to a
 * crawl (a few hundred items in tens of seconds, on 2 cores shared with
 * other busy processes) and tripped its 300 s watchdog. Under the mutex a
 * waiting producer sleeps instead, the ring has one producer at a time, and
 * a batch push costs one lock round trip for the whole batch.
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
 * list does not arise: both happen under the lock (for a port, see Ports:
 * only its owner can make the list non-empty). The list becomes empty
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
 * Ports (one producer each)
 * -------------------------
 * A port is a FIFO like the main one (a ring, then an overflow list with
 * its over_len, lock and lanes) whose producer is the one thread that
 * claimed it (port_claim, under the main lock; owned). Its ring is
 * weft__pring, not a ck_ring: one producer, and consumers that take a
 * batch with one CAS.
 *   head         through ck_pr. The next item to take; consumers CAS it
 *                from h to h + k after copying slots h .. h+k-1 (load
 *                fence after the tail load = acquire; the copies before
 *                the CAS). The owner reads it only when the ring looks
 *                full by head_seen, its own older copy (which can only
 *                make the ring look fuller), and then fences loads before
 *                its later stores (acquire: its writes of the slots that
 *                head freed come after the copies the CAS followed; a
 *                compiler barrier under TSO).
 *   tail         through ck_pr. Stored by the owner after the slot (store
 *                fence = release); loaded by consumers and empty(). The
 *                owner also lowers it to take its newest items back
 *                (T1-T3 below), so readers take tail - head as a signed
 *                difference: below 0 (for a moment) it means nothing.
 *   slot[]       through ck_pr. The owner writes item i into slot
 *                i % size once head > i - size: the consumer that took
 *                item i - size, the slot's last, copied it before its CAS
 *                moved head past it.
 * That lets a push skip the lock while the list is empty:
 *   port_push (owner only)
 *     P1. pushed += 1 (relaxed load, release store): counted before it is
 *         published, so a consumer that runs the item and counts it done
 *         has seen the count (core's idle test, task.c).
 *     P2. If over_len reads 0 and the ring accepts n: store slot, store
 *         fence, store tail. Done: no lock, no RMW.
 *     P3. Else under the port's lock: the ring if over_len is 0 (exact
 *         now) and it accepts n, else the list (step 3 of push); unlock.
 *   Consumers run pop_batch's steps on the port, steps 1 and 3 taking a
 *   batch from the ring at once.
 *   Why P2 may skip the lock: only the owner makes over_len non-zero
 *   (P3, under the lock); consumers only lower it, under the lock. So
 *   the owner reads 0 only if the list is empty, and it stays empty until
 *   the owner itself appends: the FIFO invariant holds. And a consumer in
 *   step 3/4 holding the lock with a non-empty list sees no ring push
 *   meanwhile (the owner reads over_len >= 1 until a consumer, under the
 *   lock, takes the list's last item), so "once the ring reads empty here
 *   it stays empty" still holds whenever step 4 takes from the list.
 *   A stale non-zero read only sends the owner through P3.
 *   take back (owner only, weft__pring_pop; a bound thread's spawns
 *   when its port is full, spawn_bound.c): k of its newest items, leaving at
 *   least keep >= WEFT__PRING_TAKE_MAX below them.
 *     T1. tail = t - k; StoreLoad fence; read head h (into head_seen).
 *     T2. t - k - h >= keep: slots t-k .. t-1 are the owner's.
 *     T3. Else tail = t again: nothing taken.
 *   Why T2 holds: a consumer takes at most WEFT__PRING_TAKE_MAX items
 *   (pring_take caps max), from the head it read before its tail load
 *   (load fence). One whose tail load read t or more read its head
 *   before T1's store, so before T1's head load (the fence): its h <= h
 *   of T1, and what it takes ends below h + WEFT__PRING_TAKE_MAX <= t - k.
 *   One that read t - k stops there. In T3's window a consumer may see
 *   tail below a head that one of the first kind moved past it: the
 *   signed test takes nothing then, and the emptiness a reader may see
 *   in that window (head == t - k) is the owner's to cover: it wakes a
 *   worker if one must be after taking back (weft__host_run).
 *   A push after a take back refills the slots taken (they were the
 *   owner's), so no consumer copies them stale: P2 as ever.
 *   Ownership moves only through the main lock (claim, release), so the
 *   ring's producer-side state (head_seen, and the owner's own reads of
 *   tail) passes from one owner to the next with a happens-before edge.
 * ports, nports  the list of ports, newest first: a new port is filled
 *   in, then published (store fence, store of ports, under the main
 *   lock). Consumers and empty() read it lock-free (ck_pr load, then a
 *   load fence before reading the port). Never unlinked; freed by fini.
 *   A port made before a checker's seq_cst fence is seen by the checker:
 *   its owner published it before its first push, and that push before
 *   the owner's own fence (the idle protocol's two fences).
 * pop_batch with ports: the main queue and the ports are each one FIFO;
 *   a pop takes from one of them, the first that gives anything in an
 *   order a per-thread counter moves (main first on every other call,
 *   the ports from a moving offset), so that no source starves behind a
 *   busy one. One source per pop, not a batch filled from several:
 *   core's grab_global treats the first two items of a batch as a pair
 *   submitted back to back (it keeps the second for its LIFO slot, out
 *   of thieves' reach for a grace period), which holds only within one
 *   producer's FIFO. There is no order between different producers'
 *   items, as between two threads pushing to the main queue at once; in
 *   particular a YIELD push to the main queue goes behind the main
 *   queue's items only, not behind what waits in the ports.
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
 * needed, in weft's tests or in a user's program. A port's ring is
 * accessed through ck_pr only (slots included), which TSAN does not see
 * at all, so it needs no ignore region; its records carry the same
 * per-record edges. The port itself is published with one edge of its
 * own (WEFT_TSAN_RELEASE(p) in port_claim, WEFT_TSAN_ACQUIRE in
 * ports_first), made once, so it orders the port's initialization and
 * nothing pushed through it later.
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

#include "global_ring.h"

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
static inline bool ring_put(weft__iq *q, weft__node *n)
{
    RING_BEGIN();
    bool ok = ck_ring_enqueue_spmc(&q->ring, q->slots, n);   /* store fence, then p_tail store (release); pairs with the load fence in ring_take */
    RING_END();
    return ok;
}

static inline bool ring_take(weft__iq *q, weft__node **out)
{
    RING_BEGIN();
    bool ok = ck_ring_dequeue_spmc(&q->ring, q->slots, out);   /* p_tail load, then load fence (acquire); pairs with the store fence in ring_put */
    RING_END();
    return ok;
}

/* ---- overflow lists (the main queue's and every port's) ------------------- */

static int ilist_init(weft__ilist *l)
{
    if (weft__mutex_init_brief(&l->lock) != 0)
        return WEFT_ENOMEM;
    for (unsigned j = 0; j < WEFT__INJECT_LANES; j++) {
        l->head[j] = NULL;
        l->tail[j] = NULL;
    }
    l->push_lane = 0;
    l->pop_lane = 0;
    l->spilled = 0;
    l->overflows = 0;
    ck_pr_store_uint(&l->over_len, 0);  /* unshared yet; sharing the queue publishes it */
    return 0;
}

/* Step 3 of push: appends v[0..count) to the list (listed items on it
 * now). Caller holds l->lock. */
static void ilist_append_locked(weft__ilist *l, unsigned listed, weft__node **v, unsigned count)
{
    if (listed == 0)
        l->overflows++;
    unsigned j = l->push_lane;
    for (unsigned i = 0; i < count; i++) {
        /* The lane's tail went in LANES items ago: still in cache. */
        weft__node_set_next(v[i], NULL);   /* links keep a hook record's mark (node.h) */
        if (l->tail[j])
            weft__node_set_next(l->tail[j], v[i]);
        else
            l->head[j] = v[i];
        l->tail[j] = v[i];
        j = (j + 1) & (WEFT__INJECT_LANES - 1);
    }
    l->push_lane = j;
    l->spilled += count;
    ck_pr_store_uint(&l->over_len, listed + count); /* under lock; read lock-free in pop_batch and empty */
}

/* Step 4 of pop_batch: up to max - n items from the list into out[n..].
 * Returns the new n. Caller holds l->lock. */
static unsigned ilist_take_locked(weft__ilist *l, weft__node **out, unsigned n, unsigned max)
{
    unsigned listed = ck_pr_load_uint(&l->over_len);   /* under lock: exact */
    if (n == max || listed == 0)
        return n;
    unsigned take = max - n < listed ? max - n : listed;
    unsigned j = l->pop_lane;
    for (unsigned k = 0; k < take; k++) {
        weft__node *x = l->head[j];
        weft__node *next = weft__node_next(x);
        l->head[j] = next;
        if (next)
            __builtin_prefetch(next);           /* the lane's next pop: LANES items from now */
        else
            l->tail[j] = NULL;
        weft__node_set_next(x, NULL);
        WEFT_TSAN_ACQUIRE(x);                   /* the mutex orders it already; kept for symmetry */
        out[n++] = x;
        j = (j + 1) & (WEFT__INJECT_LANES - 1);
    }
    l->pop_lane = j;
    ck_pr_store_uint(&l->over_len, listed - take); /* under lock; 0: pushes use the ring again */
    return n;
}

static void ilist_stats(weft__ilist *l, weft__inject_stats *s)
{
    pthread_mutex_lock(&l->lock);
    s->spilled += l->spilled;
    s->overflows += l->overflows;
    pthread_mutex_unlock(&l->lock);
}

/* ---- the main FIFO ------------------------------------------------------------- */

/* Steps 1-3 of push. Callable from: any thread (not a signal handler). */
static void iq_push_batch(weft__iq *q, weft__node **v, unsigned count)
{
    for (unsigned k = 0; k < count; k++)
        WEFT_TSAN_RELEASE(v[k]);
    pthread_mutex_lock(&q->l.lock);
    unsigned i = 0;
    unsigned listed = ck_pr_load_uint(&q->l.over_len);   /* under lock: exact */
    if (listed == 0) {
        /* Step 2: nothing on the list, so the ring is the tail of the queue. */
        while (i < count && ring_put(q, v[i]))   /* release: publishes v[i]; pairs with the acquire in ring_take */
            i++;
    }
    if (i < count)
        ilist_append_locked(&q->l, listed, v + i, count - i);   /* step 3 */
    pthread_mutex_unlock(&q->l.lock);
}

/* pop_batch's steps 1-4 on the main FIFO. Callable from: any thread. */
static unsigned iq_pop_batch(weft__iq *q, weft__node **out, unsigned max)
{
    unsigned n = 0;

    /* Step 1: the ring, lock-free. */
    while (n < max && ring_take(q, &out[n])) {   /* acquire: pairs with the release in ring_put */
        WEFT_TSAN_ACQUIRE(out[n]);
        n++;
    }
    if (n == max || ck_pr_load_uint(&q->l.over_len) == 0)  /* hint; pairs with the store under lock in push_batch */
        return n;

    pthread_mutex_lock(&q->l.lock);
    /* Step 3: the ring again. No push runs while we hold the lock, so an
     * empty ring stays empty and the list's head is the oldest item. */
    while (n < max && ring_take(q, &out[n])) {   /* as in step 1 */
        WEFT_TSAN_ACQUIRE(out[n]);
        n++;
    }
    /* Step 4: the ring was seen empty (or we are full); the list is next. */
    n = ilist_take_locked(&q->l, out, n, max);
    pthread_mutex_unlock(&q->l.lock);
    return n;
}

/* ---- a port's ring ---------------------------------------------------------------- */

static int pring_init(weft__pring *r, unsigned size, const weft_allocator *a)
{
    r->slot = weft__alloc_with(a, (size_t)size * sizeof *r->slot);
    if (r->slot == NULL)
        return WEFT_ENOMEM;
    r->mask = size - 1;
    r->head_seen = 0;
    ck_pr_store_uint(&r->head, 0);   /* unshared yet: publishing the port publishes them */
    ck_pr_store_uint(&r->tail, 0);
    return 0;
}

/* Takes up to max items (oldest first) with one CAS. Callable from: any
 * thread. */
static unsigned pring_take(weft__pring *r, weft__node **out, unsigned max)
{
    unsigned h = ck_pr_load_uint(&r->head);
    for (;;) {
        ck_pr_fence_load();                          /* tail as of after our head */
        unsigned t = ck_pr_load_uint(&r->tail);
        int d = (int)(t - h);                        /* signed: below 0 while the owner takes one back */
        if (d <= 0)                                  /* (weft__pring_pop) and we saw its lowered tail */
            return 0;
        unsigned avail = (unsigned)d;
        if (avail > r->mask + 1)                     /* h is stale (others took and the owner refilled): */
            avail = r->mask + 1;                     /* what we copy is discarded when the CAS fails */
        if (max > WEFT__PRING_TAKE_MAX)
            max = WEFT__PRING_TAKE_MAX;              /* what lets the owner take from the other end */
        unsigned k = avail < max ? avail : max;
        ck_pr_fence_load();                          /* acquire: the slots after the tail that showed them */
        for (unsigned i = 0; i < k; i++)
            out[i] = ck_pr_load_ptr(&r->slot[(h + i) & r->mask]);
        ck_pr_fence_load_atomic();                   /* the copies before the CAS that lets the owner reuse the slots */
        if (ck_pr_cas_uint_value(&r->head, h, h + k, &h)) {
            for (unsigned i = 0; i < k; i++)
                WEFT_TSAN_ACQUIRE(out[i]);
            return k;
        }
    }
}

/* pop_batch's steps 1-4 on a port: the ring is taken a batch at a time. */
static unsigned port_pop_batch(weft__inject_port *p, weft__node **out, unsigned max)
{
    /* Step 1: the ring, lock-free. */
    unsigned n = pring_take(&p->ring, out, max);
    if (n == max || ck_pr_load_uint(&p->l.over_len) == 0)  /* hint; pairs with the store under lock in port_push */
        return n;
    pthread_mutex_lock(&p->l.lock);
    /* Step 3: the ring again; the owner pushes to it no more while the
     * list holds anything (Ports). */
    n += pring_take(&p->ring, out + n, max - n);
    /* Step 4. */
    n = ilist_take_locked(&p->l, out, n, max);
    pthread_mutex_unlock(&p->l.lock);
    return n;
}

/* ---- the queue ------------------------------------------------------------ */

int weft__inject_init(weft__inject *q, unsigned capacity, const weft_allocator *a)
{
    if (capacity < 4 || (capacity & (capacity - 1)) != 0)
        return WEFT_EINVAL;
    ck_ring_buffer_t *slots = weft__alloc_with(a, (size_t)capacity * sizeof *slots);
    if (slots == NULL)
        return WEFT_ENOMEM;
    if (ilist_init(&q->main.l) != 0) {
        weft__free_with(a, slots, (size_t)capacity * sizeof *slots);
        return WEFT_ENOMEM;
    }
    ck_ring_init(&q->main.ring, capacity);
    q->main.slots = slots;
    q->alloc = a;
    q->ports = NULL;   /* unshared yet */
    q->nports = 0;
    return 0;
}

static void port_free(weft__inject *q, weft__inject_port *p)
{
    pthread_mutex_destroy(&p->l.lock);
    weft__free_with(q->alloc, p->ring.slot, (size_t)(p->ring.mask + 1) * sizeof *p->ring.slot);
    weft__free_with(q->alloc, p, sizeof *p);
}

void weft__inject_fini(weft__inject *q)
{
    for (weft__inject_port *p = q->ports, *next; p; p = next) {
        next = p->next;
        port_free(q, p);
    }
    q->ports = NULL;
    q->nports = 0;
    pthread_mutex_destroy(&q->main.l.lock);
    weft__free_with(q->alloc, q->main.slots, (size_t)ck_ring_capacity(&q->main.ring) * sizeof *q->main.slots);
    q->main.slots = NULL;
}

/* Callable from: any thread (not a signal handler: it takes the mutex). */
void weft__inject_push_batch(weft__inject *q, weft__node **v, unsigned count)
{
    iq_push_batch(&q->main, v, count);
}

/* Callable from: any thread (not a signal handler). */
void weft__inject_push(weft__inject *q, weft__node *n)
{
    iq_push_batch(&q->main, &n, 1);
}

/* The port list, read lock-free. */
static weft__inject_port *ports_first(const weft__inject *q)
{
    weft__inject_port *p = ck_pr_load_ptr(&q->ports);   /* pairs with the store fence in port_claim */
    ck_pr_fence_load();                                 /* the port's fields after the pointer (acquire) */
    if (p)
        WEFT_TSAN_ACQUIRE(p);   /* TSAN cannot see ck_pr: the edge from port_claim's release, which
                                   covers the older ports too (published before it, under the lock) */
    return p;
}

/* Which source a pop starts with: a per-thread count, so that workers do
 * not share (and bounce) one. */
static WEFT_TLS unsigned pop_turn;

/* Callable from: any thread. */
unsigned weft__inject_pop_batch(weft__inject *q, weft__node **out, unsigned max)
{
    weft__inject_port *first = ports_first(q);
    if (WEFT_LIKELY(first == NULL))
        return iq_pop_batch(&q->main, out, max);
    /* One source per pop (see "pop_batch with ports"): the main queue
     * first on every other call, else the ports from a moving offset,
     * once round, then the main queue. A port published after our load
     * of the list is left for the next pop. */
    unsigned turn = pop_turn++;
    unsigned n;
    bool main_first = (turn & 1) == 0;
    if (main_first && (n = iq_pop_batch(&q->main, out, max)) != 0)
        return n;
    unsigned np = ck_pr_load_uint(&q->nports);   /* at least the ports up to `first`: nports is stored first (port_claim) */
    weft__inject_port *p = first;
    if (np > 1) {
        for (unsigned skip = (turn >> 1) % np; skip && p->next; skip--)
            p = p->next;
    }
    weft__inject_port *start = p;
    do {
        if (!weft__port_empty(p) && (n = port_pop_batch(p, out, max)) != 0)
            return n;
        p = p->next ? p->next : first;
    } while (p != start);
    return main_first ? 0 : iq_pop_batch(&q->main, out, max);
}

/* ---- ports ------------------------------------------------------------------- */

weft__inject_port *weft__inject_port_claim(weft__inject *q)
{
    pthread_mutex_lock(&q->main.l.lock);
    for (weft__inject_port *p = q->ports; p; p = p->next) {
        if (!p->owned) {
            p->owned = true;   /* under the main lock: the previous owner's pushes happen before ours */
            pthread_mutex_unlock(&q->main.l.lock);
            return p;
        }
    }
    bool full = q->nports >= WEFT__INJECT_PORTS_MAX;   /* under the lock: exact */
    pthread_mutex_unlock(&q->main.l.lock);
    if (full)
        return NULL;
    weft__inject_port *p = weft__alloc_with(q->alloc, sizeof *p);
    if (p == NULL)
        return NULL;
    if (pring_init(&p->ring, ck_ring_capacity(&q->main.ring), q->alloc) != 0) {
        weft__free_with(q->alloc, p, sizeof *p);
        return NULL;
    }
    if (ilist_init(&p->l) != 0) {
        weft__free_with(q->alloc, p->ring.slot, (size_t)(p->ring.mask + 1) * sizeof *p->ring.slot);
        weft__free_with(q->alloc, p, sizeof *p);
        return NULL;
    }
    atomic_init(&p->pushed, 0);   /* before the port is published */
    p->ncache = 0;
    p->owned = true;
    pthread_mutex_lock(&q->main.l.lock);
    if (q->nports >= WEFT__INJECT_PORTS_MAX) {
        /* Others made the last ones meanwhile. */
        pthread_mutex_unlock(&q->main.l.lock);
        port_free(q, p);
        return NULL;
    }
    p->next = q->ports;
    ck_pr_store_uint(&q->nports, q->nports + 1);   /* under lock; before the list grows, so a reader of the list reads at least its length */
    ck_pr_fence_store();                            /* the port filled in, and nports, before it is published */
    WEFT_TSAN_RELEASE(p);                           /* for TSAN, which cannot see the fence: pairs with ports_first */
    ck_pr_store_ptr(&q->ports, p);                  /* release (the fence above); pairs with the load fence in ports_first */
    pthread_mutex_unlock(&q->main.l.lock);
    return p;
}

void weft__inject_port_release(weft__inject *q, weft__inject_port *p)
{
    pthread_mutex_lock(&q->main.l.lock);
    p->owned = false;
    pthread_mutex_unlock(&q->main.l.lock);
}

/* P3 of port_push. Callable from: p's owner only. */
void weft__inject_port_push_slow(weft__inject_port *p, weft__node *n)
{
    pthread_mutex_lock(&p->l.lock);
    unsigned listed = ck_pr_load_uint(&p->l.over_len);   /* under lock: exact */
    if (listed != 0 || !weft__pring_put(&p->ring, n))
        ilist_append_locked(&p->l, listed, &n, 1);
    pthread_mutex_unlock(&p->l.lock);
}

uint64_t weft__inject_ports_pushed(const weft__inject *q)
{
    uint64_t sum = 0;
    for (const weft__inject_port *p = ports_first(q); p; p = p->next)
        sum += atomic_load_explicit(&p->pushed, memory_order_acquire);   /* pairs with the release in port_push */
    return sum;
}

bool weft__inject_ports_empty(const weft__inject *q)
{
    for (const weft__inject_port *p = ports_first(q); p; p = p->next)
        if (!weft__port_empty(p))
            return false;
    return true;
}

/* ---- looks ---------------------------------------------------------------------- */

/* Callable from: any thread. */
unsigned weft__inject_size(const weft__inject *q)
{
    unsigned n = ck_ring_size(&q->main.ring) + ck_pr_load_uint(&q->main.l.over_len);
    for (const weft__inject_port *p = ports_first(q); p; p = p->next) {
        unsigned h = ck_pr_load_uint(&p->ring.head);
        int d = (int)(ck_pr_load_uint(&p->ring.tail) - h);   /* below 0 for a moment: weft__pring_pop */
        n += (d > 0 ? (unsigned)d : 0) + ck_pr_load_uint(&p->l.over_len);
    }
    return n;
}

/* Callable from: any thread. */
weft__inject_stats weft__inject_get_stats(weft__inject *q)
{
    weft__inject_stats s = { 0, 0 };
    ilist_stats(&q->main.l, &s);
    for (weft__inject_port *p = ports_first(q); p; p = p->next)
        ilist_stats(&p->l, &s);
    return s;
}
