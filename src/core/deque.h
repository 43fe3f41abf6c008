/* This file is private to weft: the per-worker work-stealing deque.
 *
 * A bounded Chase-Lev deque of weft__node pointers (Chase and Lev 2005,
 * with the fences of Lê, Pop, Cohen and Zappa Nardelli 2013), on ck_pr
 * atomics only. The owner pushes and pops at the bottom, newest first, so
 * fork-join stays depth-first; any thread steals one item at the top,
 * oldest first. It never grows: a full push returns false and the owner
 * moves its oldest half to the global ring (weft__deque_pop_oldest).
 *
 * "Owner" is the one thread that pushes and pops; everything marked
 * "owner" must only ever be called from that thread.
 */
#ifndef WEFT_DEQUE_H
#define WEFT_DEQUE_H

#include <stdbool.h>
#include <stdint.h>

#include "base.h"
#include "node.h"

typedef struct weft__deque {
    /* private: see the Synchronization block in deque.c. */
    _Alignas(WEFT_CACHELINE) uint64_t top;  /* thieves' end: CAS only, only grows */
    _Alignas(WEFT_CACHELINE) uint64_t bottom; /* owner's end: owner writes, all read */
    _Alignas(WEFT_CACHELINE) weft__node **buf; /* read-only after init */
    uint64_t mask;                           /* capacity - 1; read-only after init */
} weft__deque;

/* capacity: a power of two >= 2, else WEFT_EINVAL; WEFT_ENOMEM if the
 * buffer cannot be allocated (nothing changed). The deque holds exactly
 * capacity items.
 * Callable from: any thread, before the deque is shared. */
int weft__deque_init(weft__deque *d, unsigned capacity);

/* Frees the buffer. Items still queued are not touched (the deque does
 * not own them). Callable from: any thread, once no thread uses the deque. */
void weft__deque_fini(weft__deque *d);

/* Adds n at the bottom. false if the deque is full (nothing changed);
 * may report full while a steal is freeing a slot, never the reverse.
 * Callable from: owner worker. */
bool weft__deque_push(weft__deque *d, weft__node *n);

/* Takes the newest item; NULL if empty (or a thief won the last item).
 * Callable from: owner worker. */
weft__node *weft__deque_pop(weft__deque *d);

/* Takes the oldest item; NULL if empty or lost a race (to another thief or
 * the owner: the caller may retry or move to another victim).
 * Callable from: any thread, the owner included. */
weft__node *weft__deque_steal(weft__deque *d);

/* Takes up to max of the oldest items, oldest first into out, with one CAS
 * on top (retried if a thief moves top); returns how many.
 * Callable from: owner worker only (see deque.c: a batch take is safe only
 * because the owner is not popping at the same time). */
unsigned weft__deque_pop_oldest(weft__deque *d, weft__node **out, unsigned max);

/* Items queued: approximate from other threads, exact for the owner when
 * no steal is in flight. Callable from: any thread. */
unsigned weft__deque_size(const weft__deque *d);

#endif /* WEFT_DEQUE_H */
