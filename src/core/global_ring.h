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
 * mutex (one lock round trip per push or per batch; see global_ring.c for why
 * not ck_ring's MP enqueue); consumers take from the ring lock-free and
 * take the lock only when the overflow list has items. Order is one FIFO
 * order for all producers, across every ring -> overflow -> ring
 * transition. See global_ring.c for the protocol.
 *
 * Ports. A thread that pushes again and again from outside the workers (a
 * bound thread, a plain thread spawning a frame's jobs) claims a port: a
 * queue of the same shape (ring plus overflow list) with one producer, so
 * that a push is lock-free while the port's overflow list is empty (a
 * slot store and a tail store: no lock, no atomic RMW, and the
 * consumers' index read only when the ring looks full), and consumers
 * take a batch from its ring with one CAS. Consumers take from the main
 * queue and the ports alike; each port is one FIFO of its producer's
 * items. Ports are made on demand and kept (for reuse by other
 * threads once released) until the queue is freed.
 */
#ifndef WEFT_INJECT_H
#define WEFT_INJECT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ck_pr.h>
#include <ck_ring.h>

#include "base.h"
#include "node.h"

/* The overflow list is WEFT__INJECT_LANES intrusive lists, item k of the
 * list on lane k mod LANES, so a pop walks that many chains side by side
 * and prefetches each lane's next item for the pop after it, instead of
 * following one chain of cold records a miss at a time. A power of two;
 * at least the largest batch a worker pops (grab_global: 32). */
#define WEFT__INJECT_LANES 32

/* An overflow list and the lock that guards it: one behind each FIFO
 * (the main queue, every port). private: see the Synchronization block
 * in global_ring.c. */
typedef struct weft__ilist {
    /* over_len is read by every consumer's peek (weft__inject_empty, a
     * spinning worker's every look), the lock is written by every locked
     * push: apart, so that the peeks do not pull the lock's line away
     * from the producer, one cross-core miss per push. */
    _Alignas(WEFT_CACHELINE) unsigned over_len; /* items on the overflow list; written under lock, read by all */
    _Alignas(WEFT_CACHELINE) pthread_mutex_t lock; /* main: serializes producers; both: guards the lanes, the statistics, every write of over_len */
    unsigned push_lane, pop_lane;    /* lane of the next append, of the oldest item; under lock */
    uint64_t spilled;                /* statistics, under lock: items that went to the overflow list */
    uint64_t overflows;              /* statistics, under lock: times the list went from empty to non-empty */
    weft__node *head[WEFT__INJECT_LANES];   /* the overflow list, dealt round-robin over lanes; under lock */
    weft__node *tail[WEFT__INJECT_LANES];   /* under lock */
} weft__ilist;

/* The main FIFO: a ck_ring whose producers take l.lock, and its list. */
typedef struct weft__iq {
    ck_ring_t ring;                  /* SPMC: the one producer holds l.lock; c_head | p_tail | size, mask padded apart by CK */
    ck_ring_buffer_t *slots;         /* capacity slots; read-only after init */
    weft__ilist l;
} weft__iq;

/* A port's ring: one producer (the owner), many consumers, which take a
 * batch with one CAS. Indices count up for ever; slot i % size. */
typedef struct weft__pring {
    _Alignas(WEFT_CACHELINE) unsigned head;   /* the next item to take: consumers CAS it */
    _Alignas(WEFT_CACHELINE) unsigned tail;   /* the next slot to fill: stored by the owner, loaded by consumers */
    unsigned head_seen;              /* owner only: a value head had, so the owner reads head only when the ring looks full */
    _Alignas(WEFT_CACHELINE) unsigned mask;   /* size - 1; read-only after init */
    weft__node **slot;               /* size slots; read-only after init */
} weft__pring;

/* Spare records a port's owner keeps with the port (below). */
#define WEFT__INJECT_PORT_CACHE 64

/* A port: one producer's FIFO (see above). */
typedef struct weft__inject_port {
    weft__pring ring;
    weft__ilist l;
    /* Owner-only storage that goes with the port from owner to owner and
     * that consumers never read: core keeps the owner's spare task
     * records here (extspawn.c), so that they need no allocation of their
     * own and are freed with the port. */
    unsigned ncache;
    void *cache[WEFT__INJECT_PORT_CACHE];
    /* Items ever pushed through this port, by all its owners in turn:
     * the owner adds 1 (relaxed load, release store; no locked
     * instruction) before it publishes each item; read with acquire by
     * anyone (core's idle accounting counts these as spawns). */
    _Alignas(WEFT_CACHELINE) _Atomic uint64_t pushed;
    struct weft__inject_port *next;  /* the queue's list of ports; set before the port is published, then read-only */
    bool owned;                      /* claimed by a thread; under the main queue's lock */
} weft__inject_port;

typedef struct weft__inject {
    weft__iq main;                   /* private: see the Synchronization block in global_ring.c. */
    const weft_allocator *alloc;     /* made slots and ports; read-only after init */
    /* Every port ever made, newest first: published with a store fence
     * and a store under main.lock, read lock-free by consumers (ck_pr);
     * never unlinked before fini. */
    _Alignas(WEFT_CACHELINE) weft__inject_port *ports;
    unsigned nports;                 /* the list's length; as ports */
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
 * changed. Ports get rings of the same capacity. Callable from: any
 * thread, before the queue is shared. */
int weft__inject_init(weft__inject *q, unsigned capacity, const weft_allocator *a);

/* Frees the ring and every port (to the allocator init took). Items still queued are not touched (the queue does not
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
 * overflow list is empty; takes the mutex otherwise. With ports, it takes
 * from one source only, the main queue or a port (in that source's FIFO
 * order), the first non-empty one from a place that moves from call to
 * call: what one call returns is consecutive in one FIFO (for a port,
 * one producer's). Callable from: any thread. */
unsigned weft__inject_pop_batch(weft__inject *q, weft__node **out, unsigned max);

/* Ports a queue makes at most: consumers look at every port, so their
 * number is bounded; a thread that finds none free once there are this
 * many pushes to the main queue (extspawn.c tries again later). */
#define WEFT__INJECT_PORTS_MAX 16

/* A port of q for the calling thread to push through: a released one,
 * else a new one from q's allocator. NULL: out of memory, or
 * WEFT__INJECT_PORTS_MAX ports exist and none is free. Callable from:
 * any thread (takes the mutex). */
weft__inject_port *weft__inject_port_claim(weft__inject *q);

/* Gives p back for another thread to claim. Its queued items stay queued
 * (consumers take them as ever). Callable from: p's owner, which pushes
 * through it no more. */
void weft__inject_port_release(weft__inject *q, weft__inject_port *p);

/* weft__inject_port_push's locked half (P3 in global_ring.c). */
void weft__inject_port_push_slow(weft__inject_port *p, weft__node *n);

/* The most a consumer takes from a port's ring at once (pring_take
 * caps max at it): the owner may take back its newest item while more
 * than this many lie below it (weft__pring_pop). */
#define WEFT__PRING_TAKE_MAX 32u

/* Appends n unless the ring is full. Callable from: the owner only. */
static inline bool weft__pring_put(weft__pring *r, weft__node *n)
{
    unsigned t = ck_pr_load_uint(&r->tail);          /* our own store: no other writer */
    if (WEFT_UNLIKELY(t - r->head_seen > r->mask)) { /* looks full: see how far the consumers are */
        r->head_seen = ck_pr_load_uint(&r->head);    /* a slot below head is free: its CAS came after its copy */
        ck_pr_fence_load_store();                    /* acquire: our slot stores after that head; pairs with the
                                                        fence before the CAS in pring_take (free under TSO) */
        if (t - r->head_seen > r->mask)
            return false;
    }
    ck_pr_store_ptr(&r->slot[t & r->mask], n);
    ck_pr_fence_store();                             /* the slot before the tail that shows it */
    ck_pr_store_uint(&r->tail, t + 1);               /* release (the fence); pairs with the load fence in pring_take */
    return true;
}

/* Appends n through p, behind p's earlier items: lock-free (a slot and a
 * tail store) while p's overflow list is empty and its ring has room,
 * else under p's lock. Counts n in p->pushed first. Never fails, never
 * allocates. Inline: an outside spawn's push. Callable from: p's owner
 * only. */
static inline void weft__inject_port_push(weft__inject_port *p, weft__node *n)
{
    atomic_store_explicit(&p->pushed, atomic_load_explicit(&p->pushed, memory_order_relaxed) + 1,
                          memory_order_release);   /* P1; relaxed load: owner-only writes; release: pairs with the acquire in ports_pushed */
    WEFT_TSAN_RELEASE(n);
    /* P2: over_len 0 means the list is empty until we append (global_ring.c, Ports). */
    if (WEFT_LIKELY(ck_pr_load_uint(&p->l.over_len) == 0) && weft__pring_put(&p->ring, n))   /* release: publishes n; pairs with the acquire in pring_take */
        return;
    weft__inject_port_push_slow(p, n);   /* P3 */
}

/* Appends n through p as weft__inject_port_push does, but only while
 * that takes no lock: p's overflow list empty and its ring with room
 * (P1 and P2); false, having done nothing, otherwise. A full port is
 * its consumers' backlog: a bound thread then runs the task itself
 * (spawn_bound.c, "Spawns of a bound thread beside workers"). Callable from:
 * p's owner only. */
static inline bool weft__inject_port_try_push(weft__inject_port *p, weft__node *n)
{
    weft__pring *r = &p->ring;
    if (WEFT_UNLIKELY(ck_pr_load_uint(&p->l.over_len) != 0))   /* only the owner makes it non-zero: 0 stays 0 */
        return false;
    unsigned t = ck_pr_load_uint(&r->tail);                     /* our own store */
    if (WEFT_UNLIKELY(t - r->head_seen > r->mask)) {
        r->head_seen = ck_pr_load_uint(&r->head);               /* as in weft__pring_put, */
        ck_pr_fence_load_store();                               /* with its acquire: the put below may skip its own */
        if (t - r->head_seen > r->mask)
            return false;
    }
    weft__inject_port_push(p, n);   /* P1, then P2's put, which finds the room seen above (head only grows) */
    return true;
}

/* Takes back up to max (<= the ring's size) of the owner's newest items
 * (the last pushed) into out, newest first, leaving at least keep (>=
 * WEFT__PRING_TAKE_MAX) below them; their count, 0 if that many are not
 * there. The owner lowers tail, fences (StoreLoad) and reads head: a
 * consumer that read the old tail read its head before that, so it takes
 * at most WEFT__PRING_TAKE_MAX items from there, all below ours; one that
 * reads the lowered tail stops below it. Too close: tail goes back up (a
 * consumer may have taken some of them meanwhile: they are the
 * consumer's), and consumers that saw the lowered tail under a head
 * already past it took nothing (pring_take's signed test). Callable
 * from: the owner only. */
static inline unsigned weft__pring_pop(weft__pring *r, unsigned keep, weft__node **out, unsigned max)
{
    unsigned t = ck_pr_load_uint(&r->tail);          /* our own store */
    int room = (int)(t - r->head_seen) - (int)keep;  /* head_seen <= head: at most this many */
    if (room <= 0)
        return 0;
    unsigned k = (unsigned)room < max ? (unsigned)room : max;
    ck_pr_store_uint(&r->tail, t - k);
    ck_pr_fence_store_load();                        /* the lowered tail before our head load; pairs with
                                                        the load fence between a consumer's head and tail loads */
    unsigned h = ck_pr_load_uint(&r->head);
    r->head_seen = h;
    if ((int)(t - k - h) < (int)keep) {
        ck_pr_store_uint(&r->tail, t);               /* not ours to take: put the tail back */
        return 0;
    }
    for (unsigned i = 0; i < k; i++)
        out[i] = ck_pr_load_ptr(&r->slot[(t - 1 - i) & r->mask]);   /* our own stores: no consumer copies them */
    return k;
}

/* weft__pring_pop on p's ring, while p's overflow list is empty (the
 * ring's items are then p's newest). Callable from: p's owner only. */
static inline unsigned weft__inject_port_pop(weft__inject_port *p, unsigned keep, weft__node **out, unsigned max)
{
    if (ck_pr_load_uint(&p->l.over_len) != 0)   /* only the owner makes it non-zero */
        return 0;
    return weft__pring_pop(&p->ring, keep, out, max);
}

/* The sum of every port's `pushed`: acquire loads, each port's count only
 * grows. Callable from: any thread. */
uint64_t weft__inject_ports_pushed(const weft__inject *q);

/* Is the main FIFO, is a port empty? See weft__inject_empty. */
static inline bool weft__iq_empty(const weft__iq *iq)
{
    return ck_pr_load_uint(&iq->l.over_len) == 0 &&   /* pairs with the store under lock in push_batch */
           ck_ring_size(&iq->ring) == 0;              /* CK loads c_head, then p_tail */
}

static inline bool weft__port_empty(const weft__inject_port *p)
{
    if (ck_pr_load_uint(&p->l.over_len) != 0)   /* pairs with the store under lock in port_push */
        return false;
    unsigned h = ck_pr_load_uint(&p->ring.head);  /* head, then tail, as CK's size does */
    return ck_pr_load_uint(&p->ring.tail) == h;   /* pairs with the tail store in port_push */
}

/* weft__inject_empty's look at the ports (out of line: it walks a list). */
bool weft__inject_ports_empty(const weft__inject *q);

/* true if nothing is queued. May be stale; never wrong about a push that
 * completed before a sequentially consistent fence the caller executed
 * before this call (the idle protocol's recheck). Inline: asked
 * whenever a worker weighs other work. Callable from: any thread. */
static inline bool weft__inject_empty(const weft__inject *q)
{
    if (!weft__iq_empty(&q->main))
        return false;
    if (WEFT_LIKELY(ck_pr_load_ptr(&q->ports) == NULL))   /* a port made before the caller's fence is seen: its publication precedes its first push */
        return true;
    return weft__inject_ports_empty(q);
}

/* Items queued (ring plus overflow list); approximate while other threads
 * work on the queue. Callable from: any thread. */
unsigned weft__inject_size(const weft__inject *q);

/* Overflow statistics since init; a snapshot taken under the lock.
 * Callable from: any thread (not on a hot path: it takes the lock). */
weft__inject_stats weft__inject_get_stats(weft__inject *q);

#endif /* WEFT_INJECT_H */
