/* This file is private to weft: the intrusive link of every queued record.
 *
 * A task record, a ready fiber, anything that travels through a deque or
 * the global ring starts with a weft__node; the queues store and return
 * weft__node pointers and the owner recovers its record with
 * WEFT_CONTAINER_OF (or a cast, the node being the first member).
 *
 * The deque never touches `next`. The global ring uses it only while the
 * record sits on its overflow list; once a pop returns the record, `next`
 * is the caller's again.
 *
 * Bit 0 of `next` marks a hook record (WEFT__NODE_HOOK): not a weft__task
 * but a record of the layer above core (src/graph's nodes today) whose
 * first member is this link and which core runs by calling the
 * process-wide hook (weft__set_record_hook, core_api.h) with the record's
 * address, reading nothing else in it. The bit is the layer above's: it
 * sets it before the record is first queued, and core only tests it (to
 * run the hook) and keeps it (the global ring through its overflow list).
 * A task record's `next` has the bit clear.
 */
#ifndef WEFT_NODE_H
#define WEFT_NODE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct weft__node { struct weft__node *next; } weft__node;  /* intrusive link; first member of every queued record */

#define WEFT__NODE_HOOK ((uintptr_t)1)

static inline bool weft__node_is_hook(const weft__node *n)
{
    return ((uintptr_t)n->next & WEFT__NODE_HOOK) != 0;
}

/* The link itself, without the mark. */
static inline weft__node *weft__node_next(const weft__node *n)
{
    return (weft__node *)((uintptr_t)n->next & ~WEFT__NODE_HOOK);
}

/* Sets the link, keeping n's mark. */
static inline void weft__node_set_next(weft__node *n, weft__node *next)
{
    n->next = (weft__node *)(((uintptr_t)n->next & WEFT__NODE_HOOK) | (uintptr_t)next);
}

#endif /* WEFT_NODE_H */
