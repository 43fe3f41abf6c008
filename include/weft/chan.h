/*
 * weft/chan.h: Channels: bounded FIFOs between tasks and threads.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_CHAN_H
#define WEFT_PUBLIC_CHAN_H

#include "defs.h"
#include "errors.h"

WEFT_BEGIN_DECLS

/** @file
 * A channel is a bounded FIFO of fixed-size elements, copied in and out,
 * between tasks and threads (capacity 0: a rendezvous). A task that must
 * wait suspends its fiber while its worker runs other work; a bound
 * thread runs tasks meanwhile; any other thread sleeps. Elements from one
 * sender arrive in the order sent. Closing fails the senders and lets the
 * receivers drain what is buffered.
 *
 * See docs/reference/chan.md for the close rules, the hand-off to a
 * receiver on the same worker (lifo_budget), waiting in place (spin_us),
 * and when a sender or receiver may destroy the channel. Timeouts and
 * WEFT_ENOMEM follow docs/reference/sync.md. */

/** A channel; made by weft_chan_create, freed by weft_chan_destroy. */
typedef struct weft_chan weft_chan;

/** Makes a channel of elements of elem_size bytes holding up to capacity
 * of them (0: a send completes when a receiver takes the element), in one
 * allocation. Returns WEFT_OK, WEFT_EINVAL (out NULL, or elem_size *
 * capacity overflows) or WEFT_ENOMEM; `*out` is NULL on failure.
 * Callable from: any thread. */
WEFT_API int  weft_chan_create(weft_chan **out, size_t elem_size, size_t capacity);

/** Sends a copy of elem if that needs no wait. Returns WEFT_OK,
 * WEFT_EAGAIN (full, or no receiver waiting on a rendezvous channel),
 * WEFT_ECLOSED, or WEFT_EINVAL (ch NULL, or elem NULL with elem_size > 0).
 * Callable from: any thread. */
WEFT_API int  weft_chan_try_send(weft_chan *ch, const void *elem);
/** Sends a copy of elem, waiting for room (on a rendezvous channel: for
 * a receiver to take it). Returns WEFT_OK, WEFT_ECLOSED (closed before
 * or while it waited; the element is not delivered), WEFT_ENOMEM (a
 * task's worker had no fiber to go on with) or WEFT_EINVAL as try_send.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_chan_send(weft_chan *ch, const void *elem);
/** As weft_chan_send, for at most timeout_ns (relative, monotonic; 0 only
 * polls); WEFT_ETIMEDOUT when it passes, the element not delivered.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_chan_send_for(weft_chan *ch, const void *elem, uint64_t timeout_ns);

/** Receives the oldest element into elem if that needs no wait. Returns
 * WEFT_OK, WEFT_EAGAIN (nothing to take), WEFT_ECLOSED (closed and
 * drained), or WEFT_EINVAL (ch NULL, or elem NULL with elem_size > 0).
 * Callable from: any thread. */
WEFT_API int  weft_chan_try_recv(weft_chan *ch, void *elem);
/** Receives the oldest element into elem, waiting for one. Returns
 * WEFT_OK, WEFT_ECLOSED (closed and drained), WEFT_ENOMEM (a task's
 * worker had no fiber to go on with) or WEFT_EINVAL as try_recv.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_chan_recv(weft_chan *ch, void *elem);
/** As weft_chan_recv, for at most timeout_ns (relative, monotonic; 0 only
 * polls); WEFT_ETIMEDOUT when it passes, elem untouched.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_chan_recv_for(weft_chan *ch, void *elem, uint64_t timeout_ns);

/** Closes ch: sends fail with WEFT_ECLOSED from now on (also those
 * waiting), receives drain the buffer, then fail with WEFT_ECLOSED.
 * Closing twice, or ch NULL, does nothing. Callable from: any thread. */
WEFT_API void weft_chan_close(weft_chan *ch);
/** Frees ch (NULL: nothing). Nobody may be blocked on it (that aborts
 * with a message naming ch); see the reference for destroying right
 * after a call returned. Callable from: any thread. */
WEFT_API void weft_chan_destroy(weft_chan *ch);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_CHAN_H */
