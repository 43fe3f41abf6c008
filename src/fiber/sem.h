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
#include <stdint.h>

#include "weft.h"

typedef struct weft__sem_rec {
    struct weft__sem_rec *next;              /* the semaphore's queue, under its lock */
    void (*grant)(struct weft__sem_rec *r);  /* set by the owner: called once a unit is r's */
    uint64_t ticket;                         /* its place in the FIFO: the semaphore's */
} weft__sem_rec;

/* Takes a unit of s now (true), or queues r (false): then r->grant(r) is
 * called, exactly once, from whichever thread releases the unit that is
 * handed to r, after that thread's last access to s. r must stay valid
 * and unqueued elsewhere until then; a queued record cannot be taken
 * back. Callable from: any thread; never blocks. */
bool weft__sem_take_or_queue(weft_sem *s, weft__sem_rec *r);

/* Tickets drawn on s since weft_sem_init: the number of waiters that
 * have joined its FIFO (threads, fibers and records, timed out or not).
 * A waiter counted here is in line: a later one is served after it. For
 * tests, which wait for it to order their waiters without sleeps.
 * Callable from: any thread. */
uint64_t weft__sem_tickets(weft_sem *s);

#endif /* WEFT_SEM_H */
