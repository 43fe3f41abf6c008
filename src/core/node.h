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
 */
#ifndef WEFT_NODE_H
#define WEFT_NODE_H

typedef struct weft__node { struct weft__node *next; } weft__node;  /* intrusive link; first member of every queued record */

#endif /* WEFT_NODE_H */
