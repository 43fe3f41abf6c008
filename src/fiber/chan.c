/* This file is private to weft: channels, bounded FIFO queues of
 * fixed-size elements between tasks and threads.
 *
 * One allocation per channel: the header and the ring buffer behind it.
 * Capacity 0 is a rendezvous: a send completes only when a receiver takes
 * the element straight from the sender's frame. Blocked peers exchange
 * elements directly (the waker copies into or out of the blocked side's
 * buffer while it holds the waiter claimed), so a woken receiver returns
 * without touching the channel again. A receiver woken by a sender on its
 * own worker runs next (weft__wake_next), so a ping-pong pair
 * stays on one core; the scheduler bounds that by lifo_budget.
 *
 * Synchronization
 *   Everything below is under lock; nothing is read without it.
 *   buf, head, count   the ring: count elements from head.
 *   closed             set once by close.
 *   sendq, recvq       blocked senders (data = their element) and
 *                      receivers (data = where the element goes). A
 *                      receiver waits only while count == 0, a sender
 *                      only while count == cap, so at most one of the
 *                      queues holds PENDING waiters at a time.
 *   chan_waiter.result written by whoever claims the waiter, before it
 *                      releases it (the waiter reads it after NOTIFIED).
 *
 * Protocol
 *   send: closed -> ECLOSED. A receiver waiting: claim it, copy the
 *         element into its buffer, unlock, release it (run next).
 *         Room in the ring: append. Else queue with data = element and
 *         block; result says OK (taken) or ECLOSED.
 *   recv: ring not empty: take the head; if a sender waits (and the
 *         channel is open), claim it and append its element (the ring
 *         stays full, FIFO holds). Ring empty and a sender waits
 *         (rendezvous): copy from it. Closed: ECLOSED. Else queue and
 *         block; result says OK (filled) or ECLOSED.
 *   close: set closed and claim every queued receiver and sender, all
 *         under one hold of the lock; unlock; release them with ECLOSED.
 *         closed keeps new waiters out, and recv no longer takes from
 *         blocked senders: a send blocked at close fails, it is not
 *         delivered later.
 *   No call touches the channel after releasing a peer (the release
 *   comes after the unlock), so whoever takes the last element or sees
 *   ECLOSED may destroy it at once.
 *   A waiter that times out is skipped by claim (its CAS lost) and
 *   unlinks itself; exactly one of "element exchanged" and "timed out"
 *   happens.
 */
#include <stdatomic.h>
#include <string.h>

#include "spin.h"
#include "wait.h"

struct weft_chan {
    weft__spin lock;
    bool closed;
    size_t elem_size;
    size_t cap;
    size_t head, count;
    weft__waitq sendq, recvq;
    size_t alloc_size;
    unsigned char buf[];
};

typedef struct chan_waiter {
    weft__waiter w;
    int result;
} chan_waiter;

static inline chan_waiter *cw_of(weft__waiter *w)
{
    return WEFT_CONTAINER_OF(w, chan_waiter, w);
}

/* Elements of the common small sizes are copied inline; a pointer's
 * size and an int's, the most common, are tested first (two compares
 * beat the switch's jump table). */
static inline void copy(void *dst, const void *src, size_t n)
{
    if (WEFT_LIKELY(n == sizeof(void *))) {
        memcpy(dst, src, sizeof(void *));
        return;
    }
    if (n == sizeof(int)) {
        memcpy(dst, src, sizeof(int));
        return;
    }
    switch (n) {
    case 0: return;
    case 1: memcpy(dst, src, 1); return;
    case 2: memcpy(dst, src, 2); return;
    case 4: memcpy(dst, src, 4); return;
    case 8: memcpy(dst, src, 8); return;
    case 16: memcpy(dst, src, 16); return;
    default: memcpy(dst, src, n); return;
    }
}

static inline unsigned char *slot(weft_chan *ch, size_t i)
{
    size_t k = ch->head + i;
    if (k >= ch->cap)
        k -= ch->cap;
    return ch->buf + k * ch->elem_size;
}

int weft_chan_create(weft_chan **out, size_t elem_size, size_t capacity)
{
    if (!out)
        return WEFT_EINVAL;
    *out = NULL;
    size_t bytes = sizeof(weft_chan);
    if (capacity && elem_size > (SIZE_MAX - bytes) / capacity)
        return WEFT_EINVAL;
    bytes += elem_size * capacity;
    weft_chan *ch = weft__alloc(bytes);
    if (!ch)
        return WEFT_ENOMEM;
    weft__spin_init(&ch->lock);
    ch->closed = false;
    ch->elem_size = elem_size;
    ch->cap = capacity;
    ch->head = ch->count = 0;
    ch->sendq = (weft__waitq){ 0 };
    ch->recvq = (weft__waitq){ 0 };
    ch->alloc_size = bytes;
    *out = ch;
    return WEFT_OK;
}

void weft_chan_destroy(weft_chan *ch)
{
    if (!ch)
        return;
    weft__spin_lock(&ch->lock);
    bool waiting = !weft__waitq_empty(&ch->sendq) || !weft__waitq_empty(&ch->recvq);
    weft__spin_unlock(&ch->lock);
    if (WEFT_UNLIKELY(waiting))
        weft__panic("chan_destroy: channel %p destroyed while tasks or threads are blocked on it",
                    (void *)ch);
    weft__free(ch, ch->alloc_size);
}

/* Blocks the caller on q (lock held) until a peer or close wakes it, or
 * the deadline. Returns the result the peer left, or WEFT_ETIMEDOUT.
 * Inlined into send and recv: in a ping-pong every call blocks. */
static inline __attribute__((always_inline))
int chan_block(weft_chan *ch, weft__waitq *q, const char *what, uintptr_t data,
               uint64_t timeout_ns)
{
    chan_waiter cw;
    weft__waiter_init(&cw.w, ch, what, weft__deadline(timeout_ns));
    cw.w.data = data;
    cw.result = WEFT_OK;
    weft__waitq_push(q, &cw.w);
    int rc = weft__wait(q, &cw.w, weft__spin_lock_fn, weft__spin_unlock_fn, &ch->lock);
    return rc == WEFT_OK ? cw.result : rc;
}

/* timeout_ns: 0 = do not block (fail with `busy`); WEFT__FOREVER = no
 * deadline. Inlined into each entry point, where both are constants: the
 * blocking send and receive then test neither, and build a waiter with no
 * deadline without looking at the clock. */
static inline __attribute__((always_inline))
int chan_send(weft_chan *ch, const void *elem, uint64_t timeout_ns, int busy)
{
    if (WEFT_UNLIKELY(!ch || (!elem && ch->elem_size)))
        return WEFT_EINVAL;
    weft__spin_lock(&ch->lock);
    if (ch->closed) {
        weft__spin_unlock(&ch->lock);
        return WEFT_ECLOSED;
    }
    weft__waiter *r = weft__waitq_empty(&ch->recvq) ? NULL : weft__waitq_claim(&ch->recvq);
    if (r) {
        copy((void *)r->data, elem, ch->elem_size);
        cw_of(r)->result = WEFT_OK;
        weft__spin_unlock(&ch->lock);
        weft__wake_next(r);
        return WEFT_OK;
    }
    if (ch->count < ch->cap) {
        copy(slot(ch, ch->count), elem, ch->elem_size);
        ch->count++;
        weft__spin_unlock(&ch->lock);
        return WEFT_OK;
    }
    if (timeout_ns == 0) {
        weft__spin_unlock(&ch->lock);
        return busy;
    }
    return chan_block(ch, &ch->sendq, "channel send", (uintptr_t)elem, timeout_ns);
}

static inline __attribute__((always_inline))
int chan_recv(weft_chan *ch, void *elem, uint64_t timeout_ns, int busy)
{
    if (WEFT_UNLIKELY(!ch || (!elem && ch->elem_size)))
        return WEFT_EINVAL;
    weft__spin_lock(&ch->lock);
    if (ch->count) {
        copy(elem, slot(ch, 0), ch->elem_size);
        ch->head = ch->head + 1 == ch->cap ? 0 : ch->head + 1;
        ch->count--;
        weft__waiter *s = ch->closed || weft__waitq_empty(&ch->sendq) ? NULL : weft__waitq_claim(&ch->sendq);
        if (s) {
            copy(slot(ch, ch->count), (const void *)s->data, ch->elem_size);
            ch->count++;
            cw_of(s)->result = WEFT_OK;
        }
        weft__spin_unlock(&ch->lock);
        weft__wake(s);
        return WEFT_OK;
    }
    weft__waiter *s = ch->closed || weft__waitq_empty(&ch->sendq) ? NULL : weft__waitq_claim(&ch->sendq);
    if (s) {
        copy(elem, (const void *)s->data, ch->elem_size);
        cw_of(s)->result = WEFT_OK;
        weft__spin_unlock(&ch->lock);
        weft__wake(s);
        return WEFT_OK;
    }
    if (ch->closed) {
        weft__spin_unlock(&ch->lock);
        return WEFT_ECLOSED;
    }
    if (timeout_ns == 0) {
        weft__spin_unlock(&ch->lock);
        return busy;
    }
    return chan_block(ch, &ch->recvq, "channel receive", (uintptr_t)elem, timeout_ns);
}

int weft_chan_send(weft_chan *ch, const void *elem)
{
    return chan_send(ch, elem, WEFT__FOREVER, WEFT_OK);
}

int weft_chan_try_send(weft_chan *ch, const void *elem)
{
    return chan_send(ch, elem, 0, WEFT_EAGAIN);
}

int weft_chan_send_for(weft_chan *ch, const void *elem, uint64_t timeout_ns)
{
    return chan_send(ch, elem, timeout_ns, WEFT_ETIMEDOUT);
}

int weft_chan_recv(weft_chan *ch, void *elem)
{
    return chan_recv(ch, elem, WEFT__FOREVER, WEFT_OK);
}

int weft_chan_try_recv(weft_chan *ch, void *elem)
{
    return chan_recv(ch, elem, 0, WEFT_EAGAIN);
}

int weft_chan_recv_for(weft_chan *ch, void *elem, uint64_t timeout_ns)
{
    return chan_recv(ch, elem, timeout_ns, WEFT_ETIMEDOUT);
}

void weft_chan_close(weft_chan *ch)
{
    if (!ch)
        return;
    weft__spin_lock(&ch->lock);
    if (ch->closed) {
        weft__spin_unlock(&ch->lock);
        return;
    }
    ch->closed = true;
    weft__waiter *r = weft__waitq_claim_all(&ch->recvq, NULL);
    weft__waiter *s = weft__waitq_claim_all(&ch->sendq, NULL);
    weft__spin_unlock(&ch->lock);
    for (weft__waiter *w = r; w; w = w->next)   /* still claimed: ours to write */
        cw_of(w)->result = WEFT_ECLOSED;
    for (weft__waiter *w = s; w; w = w->next)
        cw_of(w)->result = WEFT_ECLOSED;
    weft__wake_list(r);
    weft__wake_list(s);
}
