/* This file is private to weft: the interface of fdreg.c: descriptors
 * registered for good in a scheduler's poller (edge-triggered), a record
 * per descriptor, and parking a fiber on one side of it.
 */
#ifndef WEFT_FDREG_H
#define WEFT_FDREG_H

#include "core.h"
#include "poller.h"

#define WEFT__FD_CHUNK      256
#define WEFT__FD_MAX_CHUNKS 4096    /* descriptors below 2^20 have records */
#define WEFT__FD_TAG        (UINT64_C(1) << 63)   /* in an event's data: a record's */

/* The two sides of a descriptor a fiber can wait on. */
enum { WEFT__FD_READ = 0, WEFT__FD_WRITE = 1 };

typedef struct weft__fdrec weft__fdrec;

/* A poller's records, embedded in it: chunks made at first use. */
typedef struct weft__fdtab {
    weft__spin lock;                                   /* chunk growth */
    weft__fdrec *_Atomic chunks[WEFT__FD_MAX_CHUNKS];   /* release-published */
    struct weft__poller *next_live;                    /* under the live list's lock */
} weft__fdtab;

/* What fdreg.c needs of a poller (poller.c). */
weft__fdtab *weft__poller_fds(weft__poller *p);
weft__os_poller *weft__poller_os(weft__poller *p);
weft_sched *weft__poller_sched(weft__poller *p);
bool weft__poller_closing(weft__poller *p);   /* seq_cst load */

/* fd's record in p if fd is registered there now, with *seq the count of
 * side's readiness edges so far; NULL if it is not (nothing done).
 * Callable from: any thread. */
weft__fdrec *weft__fd_find(weft__poller *p, int fd, int side, uint64_t *seq);
/* Registers fd in p for good (edge-triggered) and returns its record,
 * *seq as for weft__fd_find, read before the registration (so readiness
 * at that moment counts as an edge after it). NULL and *err: WEFT_EINVAL
 * (fd not open), or 0: no record now (fd out of range, a regular file,
 * another thread registering it, fd in the set by a one-shot wait, out of
 * memory or watches): the caller waits the one-shot way. Callable from:
 * any thread. */
weft__fdrec *weft__fd_register(weft__poller *p, int fd, int side, uint64_t *seq, int *err);
/* Parks the current fiber of w until side of r sees an edge after seq,
 * deadline (0 = none) passes, the descriptor is forgotten or the poller
 * shuts down. Returns the edge's events (> 0), 0 (an edge came already:
 * try again, nothing waited), WEFT_ETIMEDOUT, WEFT_ECLOSED (forgotten),
 * WEFT_EAGAIN (shutting down: look once, do not wait), WEFT_EBUSY
 * (another fiber waits on that side: wait the one-shot way), or
 * WEFT_ENOMEM. Callable from: a fiber on its own worker w. */
int weft__fd_park(weft__worker *w, weft__poller *p, weft__fdrec *r, int side, uint64_t seq,
                  uint64_t deadline, const char *what, int fd);
/* A read of r's read side, begun after the edge count was seq, came back
 * short: noted for a byte stream (weft__fd_drained). Callable from: any
 * thread. */
void weft__fd_note_short(weft__fdrec *r, uint64_t seq);
/* Did a read begun at edge count seq come back short, with no edge since:
 * would a read now say EAGAIN? Callable from: any thread. */
bool weft__fd_drained(weft__fdrec *r, uint64_t seq);
/* r's registration word (its generation and state): a forget changes it,
 * so a waiter that saw one value and then sees another knows fd was
 * forgotten (or closed) meanwhile. Callable from: any thread. */
uint32_t weft__fd_word(weft__fdrec *r);
/* An event of a record (data has WEFT__FD_TAG): counts the edge and makes
 * the parked fibers of its sides ready. Callable from: any worker. */
void weft__fd_event(weft__poller *p, uint64_t data, unsigned events);
/* Ends fd's registration in every poller: its waits return WEFT_ECLOSED.
 * Callable from: any thread. */
void weft__fd_forget_all(int fd);
/* A plain thread's wait on fd (io.c, weft__fd_thread_wait), listed while
 * it waits so that weft__fd_forget_all(fd) ends it at once: it posts
 * wake, which the thread's poll watches beside fd. */
typedef struct weft__fd_twait {
    int fd, wake;
    struct weft__fd_twait *next;   /* under the list's lock */
} weft__fd_twait;
/* Lists / unlists tw. Callable from: any thread (tw's own). */
void weft__fd_twait_add(weft__fd_twait *tw);
void weft__fd_twait_remove(weft__fd_twait *tw);
/* Wakes the thread sleeping in each live poller, so that its next round
 * sees a socket closed meanwhile (Windows: WSAPoll does not). Callable
 * from: any thread. */
void weft__fd_wake_all(void);
/* Every parked wait returns WEFT_EAGAIN (closing is set). Callable from:
 * destroy. */
void weft__fd_shutdown(weft__poller *p);
/* Joins p to / takes it from the list weft__fd_forget_all walks.
 * Callable from: poller.c (get, fini). */
void weft__fd_live(weft__poller *p, bool add);
/* Frees p's records. Callable from: destroy, after the workers left. */
void weft__fd_fini(weft__poller *p);

#endif /* WEFT_FDREG_H */
