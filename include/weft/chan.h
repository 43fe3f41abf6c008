/*
 * weft/chan.h: Channels: bounded FIFOs between tasks and threads.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_CHAN_H
#define WEFT_PUBLIC_CHAN_H

#include "defs.h"

WEFT_BEGIN_DECLS

/* Channel: a bounded FIFO of elements of elem_size bytes, copied in and
 * out. capacity 0 = rendezvous (a send completes when a receiver takes
 * the element). Elements from one sender arrive in the order sent. After
 * close, sends fail with WEFT_ECLOSED (also those blocked at the time:
 * their element is not delivered) and receives drain what is buffered,
 * then fail with WEFT_ECLOSED; closing twice does nothing. try_ forms
 * return WEFT_EAGAIN instead of blocking. A receiver woken by a sender on
 * its own worker runs next (so a ping-pong pair stays on one core), at
 * most lifo_budget times in a row. A task whose send or receive must wait
 * while its worker has nothing else to run waits in place for up to
 * spin_us (the worker takes other work as soon as it shows up), so a
 * peer on another worker hands over in about a cache-line transfer.
 * A sender whose rendezvous send returned, or a receiver that took the
 * last element or saw ECLOSED, may destroy the channel at once when
 * nobody else uses it (its peer may still be returning). create makes one allocation (header and
 * buffer); EINVAL if elem_size * capacity overflows. */
typedef struct weft_chan weft_chan;
WEFT_API int  weft_chan_create(weft_chan **out, size_t elem_size, size_t capacity);
WEFT_API int  weft_chan_send(weft_chan *ch, const void *elem);      /* ECLOSED */
WEFT_API int  weft_chan_recv(weft_chan *ch, void *elem);            /* ECLOSED when drained */
WEFT_API int  weft_chan_try_send(weft_chan *ch, const void *elem);  /* EAGAIN */
WEFT_API int  weft_chan_try_recv(weft_chan *ch, void *elem);        /* EAGAIN */
WEFT_API int  weft_chan_send_for(weft_chan *ch, const void *elem, uint64_t timeout_ns);
WEFT_API int  weft_chan_recv_for(weft_chan *ch, void *elem, uint64_t timeout_ns);
WEFT_API void weft_chan_close(weft_chan *ch);
WEFT_API void weft_chan_destroy(weft_chan *ch);  /* nobody may be blocked on it */

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_CHAN_H */
