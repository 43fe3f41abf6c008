/* This file is private to weft: the global ring (the "inject" queue).
 *
 * Where work goes when it does not start on a worker's own deque: submits
 * from outside the pool, fibers woken by another thread, the YIELD hint,
 * and the oldest half of a worker's full deque. Many producers, many
 * consumers; consumers take batches.
 *
 * A bounded ck_ring in front, plus an intrusive overflow list behind it so
 * a push never fails and never allocates (dealt over lanes, so that
 * draining it is not one long chain of cache misses). Producers are serialized by a
 * mutex (one lock round trip per push or per batch; see inject.c for why
 * not ck_ring's MP enqueue); consumers take from the ring lock-free and
 * take the lock only when the overflow list has items. Order is one FIFO
 * order for all producers, across every ring -> overflow -> ring
 * transition. See inject.c for the protocol.
 */
#ifndef WEFT_INJECT_H
#define WEFT_INJECT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ck_ring.h>

#include "base.h"
#include "node.h"

/* The overflow list is WEFT__INJECT_LANES intrusive lists, item k of the
 * list on lane k mod LANES, so a pop walks that many chains side by side
 * and prefetches each lane's next item for the pop after it, instead of
 * following one chain of cold records a miss at a time. A power of two;
 * at least the largest batch a worker pops (grab_global: 32). */
#define WEFT__INJECT_LANES 32

typedef struct weft__inject {
    /* private: see the Synchronization block in inject.c. */
    ck_ring_t ring;                  /* SPMC: producer under lock; c_head | p_tail | size, mask padded apart by CK */
    ck_ring_buffer_t *slots;         /* capacity slots; read-only after init */
    const weft_allocator *alloc;     /* made slots; read-only after init */
    _Alignas(WEFT_CACHELINE) unsigned over_len; /* items on the overflow list; written under lock, read by all */
    pthread_mutex_t lock;            /* serializes producers; guards the lanes, the statistics, every write of over_len */
    unsigned push_lane, pop_lane;    /* lane of the next append, of the oldest item; under lock */
    uint64_t spilled;                /* statistics, under lock: items that went to the overflow list */
    uint64_t overflows;              /* statistics, under lock: times the list went from empty to non-empty */
    weft__node *head[WEFT__INJECT_LANES];   /* the overflow list, dealt round-robin over lanes; under lock */
    weft__node *tail[WEFT__INJECT_LANES];   /* under lock */
} weft__inject;

/* Overflow statistics (for metrics and tests). */
typedef struct weft__inject_stats {
    uint64_t spilled;                /* items that went to the overflow list */
    uint64_t overflows;              /* times the list went from empty to non-empty */
} weft__inject_stats;

/* capacity: ring slots, a power of two >= 4, else WEFT_EINVAL. ck_ring
 * keeps one slot free, so capacity - 1 items fit before pushes spill to the
 * overflow list. WEFT_ENOMEM if the ring cannot be allocated from a (NULL:
 * the process-wide allocator; else it must outlive the queue) and nothing
 * changed. Callable from: any thread, before the queue is shared. */
int weft__inject_init(weft__inject *q, unsigned capacity, const weft_allocator *a);

/* Frees the ring (to the allocator init took). Items still queued are not touched (the queue does not
 * own them). Callable from: any thread, once no thread uses the queue. */
void weft__inject_fini(weft__inject *q);

/* Appends n. Never fails, never allocates; takes the mutex (may sleep
 * briefly behind another producer). Callable from: any thread, not from a
 * signal handler. */
void weft__inject_push(weft__inject *q, weft__node *n);

/* Appends v[0..count) in that order, as one step: no other producer's
 * item lands between them. One lock round trip for the batch. Callable
 * from: any thread, not from a signal handler. */
void weft__inject_push_batch(weft__inject *q, weft__node **v, unsigned count);

/* Takes up to max of the oldest items into out, oldest first; returns how
 * many (0: empty, or only pushes still in flight). Lock-free while the
 * overflow list is empty; takes the mutex otherwise. Callable from: any
 * thread. */
unsigned weft__inject_pop_batch(weft__inject *q, weft__node **out, unsigned max);

/* true if nothing is queued. May be stale; never wrong about a push that
 * completed before a sequentially consistent fence the caller executed
 * before this call (the idle protocol's recheck). Inline: asked
 * whenever a worker weighs other work. Callable from: any thread. */
static inline bool weft__inject_empty(const weft__inject *q)
{
    return ck_pr_load_uint(&q->over_len) == 0 &&   /* pairs with the store under lock in push_batch */
           ck_ring_size(&q->ring) == 0;            /* CK loads c_head, then p_tail */
}

/* Items queued (ring plus overflow list); approximate while other threads
 * work on the queue. Callable from: any thread. */
unsigned weft__inject_size(const weft__inject *q);

/* Overflow statistics since init; a snapshot taken under the lock.
 * Callable from: any thread (not on a hot path: it takes the lock). */
weft__inject_stats weft__inject_get_stats(weft__inject *q);

#endif /* WEFT_INJECT_H */
