/* This file is private to weft: the per-worker work-stealing deque.
 *
 * A bounded Chase-Lev deque of weft__node pointers (Chase and Lev 2005,
 * with the fences of Lê, Pop, Cohen and Zappa Nardelli 2013), on ck_pr
 * atomics only. The owner pushes and pops at the bottom, newest first, so
 * fork-join stays depth-first; any thread steals one item at the top,
 * oldest first. It never grows: a full push returns false and the owner
 * moves its oldest half to the global ring (weft__deque_pop_oldest), or,
 * a bound thread of a scheduler with no workers, to its spill array
 * (spawn_bound.c).
 *
 * "Owner" is the one thread that pushes and pops; everything marked
 * "owner" must only ever be called from that thread.
 */
#ifndef WEFT_DEQUE_H
#define WEFT_DEQUE_H

#include <stdbool.h>
#include <stdint.h>

#include <ck_pr.h>

#include "base.h"
#include "node.h"

typedef struct weft__deque {
    /* private: see the Synchronization block in deque.c. */
    _Alignas(WEFT_CACHELINE) uint64_t top;  /* thieves' end: CAS only, only grows */
    _Alignas(WEFT_CACHELINE) uint64_t bottom; /* owner's end: owner writes, all read */
    _Alignas(WEFT_CACHELINE) weft__node **buf; /* read-only after init */
    uint64_t mask;                           /* capacity - 1; read-only after init */
    const weft_allocator *alloc;             /* made buf; read-only after init */
} weft__deque;

/* capacity: a power of two >= 2, else WEFT_EINVAL; WEFT_ENOMEM if the
 * buffer cannot be allocated from a (NULL: the process-wide allocator;
 * else it must outlive the deque) and nothing changed. The deque holds
 * exactly capacity items.
 * Callable from: any thread, before the deque is shared. */
int weft__deque_init(weft__deque *d, unsigned capacity, const weft_allocator *a);

/* Frees the buffer (to the allocator init took). Items still queued are not touched (the deque does
 * not own them). Callable from: any thread, once no thread uses the deque. */
void weft__deque_fini(weft__deque *d);

/* weft__deque_push and weft__deque_pop, the owner's fast paths, are
 * defined inline at the end of this header. */

/* Takes the oldest item; NULL if empty or lost a race (to another thief or
 * the owner: the caller may retry or move to another victim).
 * Callable from: any thread, the owner included. */
weft__node *weft__deque_steal(weft__deque *d);

/* Takes up to max of the oldest items, oldest first into out, with one CAS
 * on top (retried if a thief moves top); returns how many.
 * Callable from: owner worker only (see deque.c: a batch take is safe only
 * because the owner is not popping at the same time). */
unsigned weft__deque_pop_oldest(weft__deque *d, weft__node **out, unsigned max);

/* Swaps the newest item with the one k places above the oldest (k taken
 * modulo the count), so that the next pop takes it. Callable from: owner,
 * and only while no thief exists (a one-worker scheduler). */
void weft__deque_swap_newest(weft__deque *d, uint64_t k);

/* Items queued: approximate from other threads, exact for the owner when
 * no steal is in flight. Inline: the worker loop and a suspending fiber
 * ask it whenever they weigh other work. Callable from: any thread. */
static inline unsigned weft__deque_size(const weft__deque *d)
{
    uint64_t t = ck_pr_load_64(&d->top);
    ck_pr_fence_load();                      /* top before bottom: a newer bottom with an older top only overestimates */
    uint64_t b = ck_pr_load_64(&d->bottom);
    int64_t s = (int64_t)(b - t);
    if (s <= 0)
        return 0;
    return (uint64_t)s > d->mask ? (unsigned)(d->mask + 1) : (unsigned)s;
}

/* ---- owner fast paths, inline: they are most of a spawn and a join. ---- */

/* Adds n at the bottom. false if the deque is full (nothing changed);
 * may report full while a steal is freeing a slot, never the reverse.
 * Callable from: owner worker. */
static inline bool weft__deque_push(weft__deque *d, weft__node *n)
{
    uint64_t b = ck_pr_load_64(&d->bottom);  /* owner's own field */
    uint64_t t = ck_pr_load_64(&d->top);
    ck_pr_fence_load_store();                /* acquire: top before slot store; pairs with load_atomic fence before the CAS in steal */
    if (WEFT_UNLIKELY(b - t > d->mask)) {
        /* Outside pop, top <= bottom: top past bottom (a huge unsigned
         * size) is a broken deque, which would report "full" forever.
         * Checked here, off the path of a push that fits. */
        if ((int64_t)(b - t) < 0)
            weft__panic("deque_push: top %llu passed bottom %llu",
                        (unsigned long long)t, (unsigned long long)b);
        return false;                        /* full; a stale t only makes it look fuller */
    }
    ck_pr_store_ptr(&d->buf[b & d->mask], n);
    WEFT_TSAN_RELEASE(n);
    ck_pr_fence_store();                     /* release: slot and record before bottom; pairs with load fence in steal */
    ck_pr_store_64(&d->bottom, b + 1);       /* publishes n to thieves */
    return true;
}

/* Adds up to k of v[] at the bottom, v[0] first (so v[0] is popped
 * last), as k pushes with one bottom store; returns how many fit.
 * Callable from: owner worker. */
static inline unsigned weft__deque_push_many(weft__deque *d, weft__node *const *v, unsigned k)
{
    uint64_t b = ck_pr_load_64(&d->bottom);  /* owner's own field */
    uint64_t t = ck_pr_load_64(&d->top);
    ck_pr_fence_load_store();                /* acquire: top before the slot stores; as in push */
    uint64_t room = d->mask + 1 - (b - t);   /* a stale t only makes it look fuller */
    if ((int64_t)(b - t) < 0 || b - t > d->mask)
        return 0;
    if (k > room)
        k = (unsigned)room;
    for (unsigned i = 0; i < k; i++) {
        ck_pr_store_ptr(&d->buf[(b + i) & d->mask], v[i]);
        WEFT_TSAN_RELEASE(v[i]);
    }
    ck_pr_fence_store();                     /* release: slots and records before bottom; pairs with load fence in steal */
    ck_pr_store_64(&d->bottom, b + k);       /* publishes them to thieves */
    return k;
}

/* weft__deque_pop's claim, from bottom b (already loaded). */
static inline weft__node *weft__deque_pop_from(weft__deque *d, uint64_t b)
{
    b--;
#if defined(__x86_64__)
    /* x86: a locked exchange is the store and the StoreLoad fence in one,
     * and cheaper than a store followed by mfence. */
    ck_pr_fas_64(&d->bottom, b);             /* claim slot b; full barrier: pairs with thief_fence in steal */
#else
    ck_pr_store_64(&d->bottom, b);           /* claim slot b; seen by thieves after the fence below */
    /* StoreLoad: the bottom store must be visible to every thief before we
     * read top. Without it the store can wait in our store buffer: with two
     * items at t and t+1 we read top == t and take slot t+1 without a CAS;
     * meanwhile one thief takes t (top = t+1) and a second reads top = t+1
     * and the old bottom t+2 and takes slot t+1 too. With the fence, a thief
     * that reads a top newer than the one we read here reads bottom after
     * our store, sees b, and finds nothing past it. The last item (t == b)
     * is the only one both sides may claim; the CAS on top decides it. */
    ck_pr_fence_store_load();                /* StoreLoad: bottom store before top load; pairs with thief_fence in steal */
#endif
    uint64_t t = ck_pr_load_64(&d->top);
    int64_t left = (int64_t)(b - t);

    if (left < 0) {                          /* a thief took the last item before we claimed it */
        ck_pr_store_64(&d->bottom, b + 1);   /* restore: bottom == top, empty */
        return NULL;
    }
    weft__node *n = ck_pr_load_ptr(&d->buf[b & d->mask]);
    if (left > 0) {                          /* more than one item: slot b is ours alone */
        WEFT_TSAN_ACQUIRE(n);
        return n;
    }
    /* The last item: race the thieves with the same CAS they use. */
    bool won = ck_pr_cas_64(&d->top, t, t + 1); /* full barrier; pairs with the CAS in steal */
    ck_pr_store_64(&d->bottom, b + 1);       /* bottom == top == t + 1 either way: empty */
    if (!won)
        return NULL;
    WEFT_TSAN_ACQUIRE(n);
    return n;
}

/* Takes the newest item; NULL if empty (or a thief won the last item).
 * Callable from: owner worker. */
static inline weft__node *weft__deque_pop(weft__deque *d)
{
    uint64_t b = ck_pr_load_64(&d->bottom);  /* owner's own field */
    /* Fast empty check, no fence: top only grows and never passes bottom
     * outside pop, so a (possibly stale) top equal to bottom means empty. */
    if (ck_pr_load_64(&d->top) == b)
        return NULL;
    return weft__deque_pop_from(d, b);
}

/* weft__deque_pop for a caller that expects an item (a join popping the
 * child it just spawned): no early look at top, three instructions less
 * when there is an item; an empty deque costs the fence and the restore.
 * Callable from: owner worker. */
static inline weft__node *weft__deque_pop_expected(weft__deque *d)
{
    return weft__deque_pop_from(d, ck_pr_load_64(&d->bottom));   /* owner's own field */
}


#endif /* WEFT_DEQUE_H */
