/* This file is private to weft: the interface of poller.c: the epoll set
 * of fd waits, and parking in it.
 */
#ifndef WEFT_POLLER_H
#define WEFT_POLLER_H

#include "core.h"

typedef struct weft__poller weft__poller;
/* s's poller, made now if it is not yet; NULL: out of memory or of
 * descriptors. Callable from: any thread. */
weft__poller *weft__poller_get(weft_sched *s);
/* A task's fd wait on its fiber: registers fd for events (EPOLL*) until
 * deadline (0 = none) and suspends. Returns the ready events (> 0),
 * WEFT_ETIMEDOUT, WEFT_ESHUTDOWN, WEFT_EINVAL (fd not open),
 * WEFT_ECLOSED (weft__poller_forget), WEFT_ENOMEM, or 0: fd cannot be polled by epoll (a regular file), the
 * caller asks poll(2). Callable from: a fiber on its own worker w. */
int  weft__poller_wait(weft__worker *w, weft__poller *p, int fd, unsigned events,
                       uint64_t deadline, const char *what, const void *obj);
/* Parking in epoll_wait (park.c, step 3d): -1 if w may not (no fd wait
 * registered, or another worker sleeps there), else it slept until
 * readiness, deadline (0 = none), or its token: 1 if fibers of w were
 * made ready, 0 otherwise. Callable from: owner, in the idle set. */
int  weft__poller_sleep(weft__worker *w, uint64_t deadline);
/* Ends the epoll_wait of the worker sleeping there. Callable from: any
 * thread. */
void weft__poller_break(weft_sched *s);
/* A look without sleeping (epoll_wait, timeout 0): readiness found makes
 * its fibers ready. Callable from: owner. */
void weft__poller_poll(weft__worker *w);
/* Every pending wait returns WEFT_ESHUTDOWN; later ones do not wait.
 * Callable from: destroy, once shutdown is set. */
void weft__poller_shutdown(weft_sched *s);
/* Every one-shot wait on fd pending now returns WEFT_ECLOSED (fd was
 * forgotten or closed: weft_fd_forget, weft_fd_close). Callable from: any
 * thread, holding fdreg.c's live list (p stays alive). */
void weft__poller_forget(weft__poller *p, int fd);
/* Frees the poller. Callable from: destroy, after the workers left. */
void weft__poller_fini(weft_sched *s);

/* Are fd waits registered (a hint: relaxed)? Inline: the loop asks it
 * every global_interval picks. */
static inline bool weft__io_waiting(weft_sched *s)
{
    return atomic_load_explicit(&s->io_waiters, memory_order_relaxed) != 0;   /* relaxed: a hint; a wait's own worker parks or polls after registering it */
}

#endif /* WEFT_POLLER_H */
