/* This file is private to weft: channels, bounded FIFO queues of
 * fixed-size elements between tasks and threads.
 *
 * One allocation per channel: the header and the ring buffer behind it,
 * the header aligned so that its first 64 bytes (lock, queues, count,
 * the hand-off slot) are one cache line. Capacity 0 is a rendezvous: a
 * send completes only when a receiver takes the element. Blocked peers
 * exchange elements directly (the waker copies into or out of the
 * blocked side's buffer while it holds the waiter claimed), so a woken
 * receiver returns without touching the channel again. A receiver woken
 * by a sender on its own worker runs next (weft__wake_next), so a
 * ping-pong pair stays on one core; the scheduler bounds that by
 * lifo_budget.
 *
 * Waiting in place. A receive or send with no deadline that must wait,
 * finds its queue empty and the slot FREE, on a thread whose host says
 * it has nothing else to run (weft__may_spin: a worker with no other
 * ready fiber or task), spins on `slot` (weft__spin_while) instead of
 * suspending. Its peer, on another core, then hands over through the
 * channel's first line alone: it pops the spinner without reading it,
 * puts the element into (or takes it from) slot_buf and stores the
 * slot's new state. Across two workers that is a transfer of the line
 * each way, where a suspension costs a waiter on the blocked stack, the
 * fiber, the inbox line and the resumption.
 *
 * Synchronization
 *   Everything below is under lock unless it says otherwise.
 *   buf, head, count   the ring: count elements from head.
 *   closed             set once by close.
 *   sendq, recvq       blocked senders (data = their element) and
 *                      receivers (data = where the element goes). A
 *                      receiver waits only while count == 0, a sender
 *                      only while count == cap, so at most one of the
 *                      queues holds PENDING waiters at a time.
 *   chan_waiter.result written by whoever claims the waiter, before it
 *                      releases it (the waiter reads it after NOTIFIED).
 *   slot               FREE, or RECV / SEND: the head of recvq / sendq
 *                      spins on it (set under the lock by the spinner,
 *                      which queued itself alone); then FILLED / TAKEN
 *                      / CLOSED, stored with release under the lock by
 *                      whoever popped the spinner; then FREE again,
 *                      stored with release by the spinner (under the
 *                      lock if it gave up first, else without it: nobody
 *                      else writes a slot that is not FREE, RECV or
 *                      SEND). The spinner reads it with acquire, without
 *                      the lock; lock holders read it with acquire too,
 *                      as a FREE may come from an unlocked store.
 *   slot_buf           the spinning sender's element (written by it
 *                      before SEND), or the spinning receiver's (written
 *                      by the sender before FILLED), for elements of up
 *                      to 8 bytes; larger ones go straight between the
 *                      peer's frame and the spinner's (data), which lives
 *                      while it spins.
 *
 * Protocol
 *   send: closed -> ECLOSED. slot RECV: pop the spinner, fill, FILLED.
 *         A receiver waiting: claim it, copy the element into its
 *         buffer, unlock, release it (run next). Room in the ring:
 *         append. Else queue with data = element and wait (in place, or
 *         blocked); result says OK (taken) or ECLOSED.
 *   recv: ring not empty: take the head; if a sender waits (and the
 *         channel is open), take its element into the ring (slot SEND:
 *         pop it, TAKEN; else claim and release it) and the ring stays
 *         full, FIFO holds. Ring empty and a sender waits (rendezvous):
 *         copy from it the same way. Closed: ECLOSED. Else queue and
 *         wait; result says OK (filled) or ECLOSED.
 *   close: set closed, pop a spinner with CLOSED and claim every queued
 *         receiver and sender, all under one hold of the lock; unlock;
 *         release them with ECLOSED. closed keeps new waiters out, and
 *         recv no longer takes from blocked senders: a send blocked at
 *         close fails, it is not delivered later.
 *   A spinner that gives up (its host found other work, or spin_us
 *         passed) locks; still RECV / SEND: it sets FREE and blocks as
 *         usual, still first in its queue; popped meanwhile: it takes
 *         its result as if it had seen it spinning.
 *   No call touches the channel after releasing a peer (the release
 *   comes after the unlock), and a popped spinner's last touch is its
 *   FREE store, which destroy waits for: whoever takes the last element,
 *   sees ECLOSED, or has its rendezvous send return may destroy the
 *   channel at once.
 *   A waiter that times out is skipped by claim (its CAS lost) and
 *   unlinks itself; exactly one of "element exchanged" and "timed out"
 *   happens. Timed waits never spin.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backoff.h"
#include "spin.h"
#include "wait.h"

/* The hand-off slot: a receiver or sender that blocks first in an empty
 * queue, on a thread that has nothing else to run, spins on `slot`
 * instead of suspending (weft__spin_while), and its peer hands over
 * through the channel's first line. */
enum {
    SLOT_FREE = 0,   /* nobody spins on it */
    SLOT_RECV,       /* recvq's head spins, waiting for an element */
    SLOT_FILLED,     /*   it was popped and given one */
    SLOT_SEND,       /* sendq's head spins; its element is in the slot */
    SLOT_TAKEN,      /*   it was popped and its element taken */
    SLOT_CLOSED,     /* either was popped by close */
};

/* The first 64 bytes are all that a hand-off between blocked peers
 * touches; the allocation is aligned so that they are one cache line. */
struct weft_chan {
    weft__spin lock;
    _Atomic unsigned char slot;
    bool closed;
    size_t elem_size;
    size_t count;
    weft__waitq sendq, recvq;
    unsigned char slot_buf[8];   /* the spinner's element, when it fits */
    size_t cap, head;
    void *mem;                   /* what weft__alloc returned */
    size_t alloc_size;
    unsigned char buf[];
};

#define CHAN_LINE 64

#ifdef WEFT_TEST_SEAMS
void (*weft__chan_popped_pause)(void);
#endif

/* spin_end's "nobody came": not a weft result (those are 0 or negative). */
#define SPIN_NOBODY 1

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
    size_t bytes = offsetof(weft_chan, buf) + CHAN_LINE - 1;
    if (capacity && elem_size > (SIZE_MAX - bytes) / capacity)
        return WEFT_EINVAL;
    bytes += elem_size * capacity;
    void *mem = weft__alloc(bytes);
    if (!mem)
        return WEFT_ENOMEM;
    weft_chan *ch = (weft_chan *)(((uintptr_t)mem + CHAN_LINE - 1) & ~(uintptr_t)(CHAN_LINE - 1));
    weft__spin_init(&ch->lock);
    atomic_init(&ch->slot, SLOT_FREE);
    ch->closed = false;
    ch->elem_size = elem_size;
    ch->cap = capacity;
    ch->head = ch->count = 0;
    ch->sendq = (weft__waitq){ 0 };
    ch->recvq = (weft__waitq){ 0 };
    ch->mem = mem;
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
    /* A spinner popped by the last send, receive or close may still be
     * on its way out (reading the slot, then storing FREE): the peer's
     * call has returned, so its caller may destroy the channel now, and
     * this waits the few instructions until the spinner is gone. */
    weft__backoff b = WEFT__BACKOFF_INIT;
    while (atomic_load_explicit(&ch->slot, memory_order_acquire) != SLOT_FREE)   /* acquire: pairs with spin_end's release store */
        weft__backoff_step(&b);   /* past the pauses, the spinner's thread is preempted */
    weft__free(ch->mem, ch->alloc_size);
}

/* ---- the hand-off slot -------------------------------------------------- */

/* Where a spinner's element is: the slot when it fits, else its own
 * frame (w->data, alive while it spins). */
static inline void *slot_elem(weft_chan *ch, weft__waiter *w)
{
    return ch->elem_size <= sizeof ch->slot_buf ? (void *)ch->slot_buf : (void *)w->data;
}

/* Is q's head the spinner (slot in state `spinning`)? Lock held. Acquire:
 * a FREE stored by a spinner on its way out, without the lock, comes
 * after its last read of slot_buf. */
static inline bool spinner_heads(weft_chan *ch, unsigned spinning)
{
    return atomic_load_explicit(&ch->slot, memory_order_acquire) == spinning;
}

/* Takes the spinner off q's head, without reading it when it is alone
 * (its line stays with its thread), and ends its spin with `how`
 * (FILLED, TAKEN, CLOSED), the caller's last write to what the spinner
 * reads. Lock held. */
static inline void pop_spinner(weft_chan *ch, weft__waitq *q, unsigned how)
{
    weft__waiter *w = q->head;
    if (w == q->tail) {
        q->head = q->tail = NULL;
    } else {
        q->head = w->next;
        w->next->prev = NULL;
    }
    atomic_store_explicit(&ch->slot, (unsigned char)how, memory_order_release);   /* release: publishes the element; pairs with the spinner's acquire load */
}

/* The spinner's side, after weft__spin_while: v is what it last read.
 * Returns the wait's result, or SPIN_NOBODY (lock held, slot FREE again, the
 * waiter still queued) when nobody came and it must block as usual.
 * When it was popped, it does not touch its waiter again (its links are
 * stale) and leaves the slot FREE, with a release store that needs no
 * lock: nobody else writes the slot until it is FREE. */
static inline __attribute__((always_inline))
int spin_end(weft_chan *ch, unsigned spinning, unsigned v, void *elem)
{
    if (v == spinning) {
        weft__spin_lock(&ch->lock);
        v = atomic_load_explicit(&ch->slot, memory_order_relaxed);   /* relaxed: under the lock, which orders the popper's writes */
        if (v == spinning) {
            atomic_store_explicit(&ch->slot, SLOT_FREE, memory_order_relaxed);   /* relaxed: under the lock */
            return SPIN_NOBODY;
        }
        weft__spin_unlock(&ch->lock);   /* popped meanwhile: nothing of the channel read below but the slot */
    }
#ifdef WEFT_TEST_SEAMS
    if (WEFT_UNLIKELY(weft__chan_popped_pause != NULL))
        weft__chan_popped_pause();
#endif
    if (v == SLOT_FILLED && elem && ch->elem_size <= sizeof ch->slot_buf)
        copy(elem, ch->slot_buf, ch->elem_size);
    atomic_store_explicit(&ch->slot, SLOT_FREE, memory_order_release);   /* release: our reads of slot_buf come first; pairs with spinner_heads */
    return v == SLOT_CLOSED ? WEFT_ECLOSED : WEFT_OK;
}

/* Blocks the caller on q (lock held) until a peer or close wakes it, or
 * the deadline. Returns the result the peer left, or WEFT_ETIMEDOUT.
 * A wait with no deadline that is alone in its queue, on a thread with
 * nothing else to run, spins on the slot first (spinning = SLOT_RECV or
 * SLOT_SEND; a sender's element goes into the slot when it fits).
 * Inlined into send and recv: in a ping-pong every call blocks. */
static inline __attribute__((always_inline))
int chan_block(weft_chan *ch, weft__waitq *q, const char *what, uintptr_t data,
               uint64_t timeout_ns, unsigned spinning)
{
    chan_waiter cw;
    weft__waiter_init(&cw.w, ch, what, weft__deadline(timeout_ns));
    cw.w.data = data;
    cw.result = WEFT_OK;
    bool alone = weft__waitq_empty(q);
    weft__waitq_push(q, &cw.w);
    if (timeout_ns == WEFT__FOREVER && alone && weft__may_spin() &&
        atomic_load_explicit(&ch->slot, memory_order_acquire) == SLOT_FREE) {   /* acquire: as in spinner_heads */
        if (spinning == SLOT_SEND && ch->elem_size <= sizeof ch->slot_buf)
            copy(ch->slot_buf, (const void *)data, ch->elem_size);
        atomic_store_explicit(&ch->slot, (unsigned char)spinning, memory_order_relaxed);   /* relaxed: under the lock */
        weft__spin_unlock(&ch->lock);
        unsigned v = weft__spin_while(&ch->slot, spinning);
        int rc = spin_end(ch, spinning, v, spinning == SLOT_RECV ? (void *)data : NULL);
        if (rc != SPIN_NOBODY)
            return rc;
        /* Nobody came: block as usual, still first in the queue. */
    }
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
    if (!weft__waitq_empty(&ch->recvq) && spinner_heads(ch, SLOT_RECV)) {
        copy(slot_elem(ch, ch->recvq.head), elem, ch->elem_size);
        pop_spinner(ch, &ch->recvq, SLOT_FILLED);
        weft__spin_unlock(&ch->lock);
        return WEFT_OK;
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
    return chan_block(ch, &ch->sendq, "channel send", (uintptr_t)elem, timeout_ns, SLOT_SEND);
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
        if (!ch->closed && !weft__waitq_empty(&ch->sendq) && spinner_heads(ch, SLOT_SEND)) {
            copy(slot(ch, ch->count), slot_elem(ch, ch->sendq.head), ch->elem_size);
            ch->count++;
            pop_spinner(ch, &ch->sendq, SLOT_TAKEN);
            weft__spin_unlock(&ch->lock);
            return WEFT_OK;
        }
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
    if (!ch->closed && !weft__waitq_empty(&ch->sendq) && spinner_heads(ch, SLOT_SEND)) {
        copy(elem, slot_elem(ch, ch->sendq.head), ch->elem_size);
        pop_spinner(ch, &ch->sendq, SLOT_TAKEN);
        weft__spin_unlock(&ch->lock);
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
    return chan_block(ch, &ch->recvq, "channel receive", (uintptr_t)elem, timeout_ns, SLOT_RECV);
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
    if (spinner_heads(ch, SLOT_RECV))
        pop_spinner(ch, &ch->recvq, SLOT_CLOSED);
    else if (spinner_heads(ch, SLOT_SEND))
        pop_spinner(ch, &ch->sendq, SLOT_CLOSED);
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
