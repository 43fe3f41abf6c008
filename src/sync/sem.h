/* This file is private to weft: the counting semaphore's second kind of
 * waiter, a record that holds no fiber (for graph tasks that wait for a
 * unit: weft_task_set_semaphore, src/graph/attr.c).
 *
 * A record waiter queues in the same FIFO as the threads and fibers that
 * wait in weft_sem_acquire (sem.c merges the two queues by ticket), so a
 * unit released goes to whichever of them came first. Nothing blocks: a
 * record is called back (grant) once a unit has been handed to it, and it
 * owns that unit from then on (it gives it back with weft_sem_release).
 */
#ifndef WEFT_SEM_H
#define WEFT_SEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

typedef struct weft__sem_rec {
    struct weft__sem_rec *next, *prev;       /* the semaphore's queue, under its lock */
    void (*grant)(struct weft__sem_rec *r);  /* set by the owner: called once a unit is r's */
    bool (*drop)(struct weft__sem_rec *r);   /* set by the owner (or NULL): asked under the
                                                lock just before r would queue; true: r
                                                does not queue (its wait is no longer
                                                wanted: a cancel landed) */
    uint64_t ticket;                         /* its place in the FIFO: the semaphore's */
    bool queued;                             /* on the queue: under the semaphore's lock */
} weft__sem_rec;

typedef enum weft__sem_took {
    WEFT__SEM_TAKEN,    /* a unit is the caller's now */
    WEFT__SEM_QUEUED,   /* r waits: grant hands it a unit, or it is withdrawn */
    WEFT__SEM_DROPPED   /* none was free and r->drop said so: nothing taken, nothing queued */
} weft__sem_took;

/* Takes a unit of s now (TAKEN), or queues r (QUEUED): then r->grant(r)
 * is called, exactly once, from whichever thread releases the unit that
 * is handed to r, after that thread's last access to s, unless r is
 * withdrawn first. r must stay valid and unqueued elsewhere until then.
 * When r would queue, r->drop(r) is asked first, under s's lock, the
 * same lock a withdrawal takes: so a cancel that marks r's owner and
 * then withdraws r either finds r queued or is seen by drop (DROPPED).
 * Callable from: any thread; never blocks. */
weft__sem_took weft__sem_take_or_queue(weft_sem *s, weft__sem_rec *r);

/* Takes r off s's queue if it is still there (true): then no unit is
 * r's and grant will not be called; the waiters behind it keep their
 * order. false: r is not queued (a release handed it a unit, and grant
 * is called or was, or it never queued). Under s's lock, so a release
 * and a withdrawal never both take r. Callable from: any thread; never
 * blocks. */
bool weft__sem_withdraw(weft_sem *s, weft__sem_rec *r);

#ifdef WEFT_TEST_SEAMS   /* only in the library the tests link */
/* Test seam: how many waiters (threads, fibers and records) are queued
 * on s now. Callable from: any thread. */
size_t weft__sem_waiting(weft_sem *s);

/* Tickets drawn on s since weft_sem_init: the number of waiters that
 * have joined its FIFO (threads, fibers and records, timed out or not).
 * A waiter counted here is in line: a later one is served after it. For
 * tests, which wait for it to order their waiters without sleeps.
 * Callable from: any thread. */
uint64_t weft__sem_tickets(weft_sem *s);
#endif

#endif /* WEFT_SEM_H */
