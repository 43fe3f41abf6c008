/* This file is private to weft: the poller: a scheduler's epoll set, the
 * records of the fd waits registered in it, and how readiness makes
 * exactly the waiting fibers ready, from a parked worker sleeping in
 * epoll_wait (park.c, step 3d) or a busy one looking without sleeping.
 *
 * As Go's netpoller: one idle worker at a time sleeps in epoll_wait
 * instead of its futex (poll_owner), and an eventfd in the set ends that
 * sleep when the worker is given its token (new work, park.c). Other idle
 * workers sleep on their futexes and are chosen first for new work
 * (choose_sleeper), so the sleeper in epoll_wait stays there while work
 * comes and goes. Busy workers look with timeout 0 every global_interval
 * picks (worker.c), and before they spin for work.
 *
 * The set and the eventfd are the OS seam's poller (weft__os_poller,
 * src/os/os.h): this file names epoll for what the Linux one does.
 *
 * Two kinds of registration share the set. This file's own: one-shot,
 * one record per wait (weft_fd_wait_for on a descriptor not registered
 * for good). fdreg.c's: a descriptor registered once, edge-triggered, its
 * record in the table embedded here (fds); bit 63 of an event's data
 * (WEFT__FD_TAG) tells dispatch which kind it is.
 *
 * Synchronization
 *   s->poller, s->bpool
 *              made once under s->io_lock, published with a release
 *              store; read with acquire. Freed by destroy after the
 *              workers have left.
 *   epfd, wakefd  set before the poller is published; read-only after.
 *   s->io_waiters
 *              fd waits registered: RMW by the waiting fiber (before
 *              EPOLL_CTL_ADD, after EPOLL_CTL_DEL). Read relaxed as a
 *              hint by parking and the loop: the fiber that registers a
 *              wait runs on a worker that itself parks or polls later,
 *              and a registration made while another worker sleeps in
 *              epoll_wait is in the set it sleeps on.
 *   w->io_waits
 *              the worker's own fibers in an fd wait: owner only. A bound
 *              thread beside workers with some naps at most 1 ms at a
 *              time and looks at the set itself (worker.c, park_deadline).
 *   s->poll_owner
 *              the worker sleeping in epoll_wait: taken by CAS (seq_cst)
 *              by a parked worker, dropped by it (release). Read by
 *              give_token (park.c) after its seq_cst store of the token:
 *              Dekker pair with the owner's CAS then token load: either
 *              the owner sees the token and does not sleep, or the waker
 *              sees the owner and writes the eventfd.
 *   rec word   gen << 32 | revents << 8 | state, one atomic per record.
 *              The waiter stores PENDING (seq_cst: also the Dekker half
 *              against shutdown's closing flag) after writing rec->fiber;
 *              readiness (any poller), its timer (its own worker) and
 *              shutdown race to end it with a CAS from PENDING of the
 *              same gen (acq_rel: the winner reads rec->fiber, published
 *              by the waiter's store). Only the winner makes the fiber
 *              ready. The gen, also in the event's data, tells a stale
 *              event (its wait ended, the record was reused) from a live
 *              one: records are never freed before destroy, so a stale
 *              event reads a record, never freed memory.
 *   free list, nrecs   under lock (a spin lock: a few stores).
 *   chunks[]   record chunks: stored (release) under lock before any of
 *              their records is handed out, read with acquire by
 *              dispatchers and shutdown, freed by destroy.
 *   closing    set by destroy (seq_cst) before it walks the records
 *              (its own, then fdreg.c's).
 *   rec->fd    the waited descriptor, for weft__poller_forget's walk:
 *              stored (release) by the waiter before PENDING, loaded
 *              (acquire) by the walk after it saw PENDING. A walk that
 *              reads the fd of a later wait in that record (the first
 *              ended, the record reused) has, through that acquire, the
 *              word past the gen it saw: its CAS fails.
 *   fds        fdreg.c's table: see its Synchronization.
 *
 * A fiber's wait (weft__poller_wait):
 *   1. have_fiber (else WEFT_ENOMEM); take a record; rec->fiber = self;
 *      word = gen|PENDING (seq_cst); io_waiters + 1.
 *   2. closing? end it ourselves (CAS to CANCELED): WEFT_ESHUTDOWN. If
 *      shutdown won that CAS it made us ready: suspend to take that.
 *   3. EPOLL_CTL_ADD fd, EPOLLONESHOT, data = index | gen << 32 (a dup of
 *      fd if fd is in the set already: another wait on it). Arm the
 *      timer for the deadline.
 *   4. Suspend. Readiness, the timer or shutdown makes us ready once.
 *   5. Resumed: disarm the timer; EPOLL_CTL_DEL (the fd may be closed:
 *      EBADF is fine, the kernel dropped it then); close the dup;
 *      io_waiters - 1; the word says how it ended; free the record (gen
 *      + 1, state FREE).
 *
 * weft_fd_forget and weft_fd_close end a one-shot wait at once: the
 * kernel says nothing when a watched descriptor is closed (the set holds
 * the open file, or a dup of it), so fdreg.c's forget walks each poller's
 * records (weft__poller_forget) and ends the pending waits on that
 * number as CLOSED: the wait returns WEFT_ECLOSED. A wait that becomes
 * pending after the walk is not one "in progress" at the forget; the
 * straight-line calls (fdio.c) look at the registration word after such
 * a wait as well.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "fdreg.h"
#include "poller.h"
#include "ready.h"
#include "suspend.h"
#include "timer.h"
#include "worker.h"

enum {
    REC_FREE = 0,
    REC_PENDING = 1,
    REC_READY = 2,
    REC_TIMEDOUT = 3,
    REC_CANCELED = 4,
    REC_CLOSED = 5,              /* its descriptor forgotten (weft_fd_forget / _close) */
};

#define REC_STATE(v)   ((unsigned)((v) & 0xff))
#define REC_EVENTS(v)  ((unsigned)(((v) >> 8) & 0xffffff))
#define REC_GEN(v)     ((uint32_t)((v) >> 32))
#define REC_WORD(gen, ev, st) (((uint64_t)(gen) << 32) | ((uint64_t)(ev) << 8) | (uint64_t)(st))

#define CHUNK_RECS 256
#define MAX_CHUNKS 4096          /* 2^20 waits at once per scheduler */
#define EVENTS_MAX 64            /* events taken per wait */

typedef struct pollrec {
    _Atomic uint64_t word;
    weft__fiber *fiber;          /* the waiter; written before PENDING */
    atomic_int fd;               /* the descriptor waited on; written before PENDING */
    uint32_t index;
    struct pollrec *next_free;   /* under lock */
} pollrec;

struct weft__poller {
    weft__os_poller os;
    weft_sched *s;
    atomic_bool closing;
    weft__spin lock;
    pollrec *free;               /* under lock */
    atomic_uint nchunks;         /* written under lock (release) */
    pollrec *_Atomic chunks[MAX_CHUNKS];
    weft__fdtab fds;             /* persistent registrations (fdreg.c) */
};

weft__fdtab *weft__poller_fds(weft__poller *p) { return &p->fds; }
weft__os_poller *weft__poller_os(weft__poller *p) { return &p->os; }
weft_sched *weft__poller_sched(weft__poller *p) { return p->s; }
bool weft__poller_closing(weft__poller *p)
{
    return atomic_load_explicit(&p->closing, memory_order_seq_cst);   /* seq_cst: the loading half of each Dekker pair with shutdown */
}

/* ---- life cycle ----------------------------------------------------------- */

weft__poller *weft__poller_get(weft_sched *s)
{
    weft__poller *p = atomic_load_explicit(&s->poller, memory_order_acquire);   /* acquire: pairs with the release below */
    if (WEFT_LIKELY(p != NULL))
        return p;
    pthread_mutex_lock(&s->io_lock);
    p = atomic_load_explicit(&s->poller, memory_order_relaxed);   /* under io_lock */
    if (!p) {
        p = weft__calloc_with(&s->cfg.allocator, sizeof *p);
        if (p) {
            p->s = s;
            /* Made during destroy: its waits do not wait (shutdown is
             * set before weft__poller_shutdown takes io_lock). */
            atomic_init(&p->closing, atomic_load(&s->shutdown));   /* seq_cst: pairs with destroy's store */
            weft__spin_init(&p->lock);
            weft__spin_init(&p->fds.lock);
            if (weft__os_poller_open(&p->os) != 0) {
                weft__free_with(&s->cfg.allocator, p, sizeof *p);
                p = NULL;
            } else {
                weft__fd_live(p, true);
                atomic_store_explicit(&s->poller, p, memory_order_release);   /* release: publishes the set-up; pairs with the acquire above */
            }
        }
    }
    pthread_mutex_unlock(&s->io_lock);
    return p;
}

void weft__poller_fini(weft_sched *s)
{
    weft__poller *p = atomic_load_explicit(&s->poller, memory_order_acquire);   /* acquire: pairs with the release in get */
    if (!p)
        return;
    weft__fd_live(p, false);
    weft__fd_fini(p);
    weft__os_poller_close(&p->os);
    unsigned n = atomic_load_explicit(&p->nchunks, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        weft__free_with(&s->cfg.allocator, atomic_load_explicit(&p->chunks[i], memory_order_relaxed),
                        sizeof(pollrec) * CHUNK_RECS);
    weft__free_with(&s->cfg.allocator, p, sizeof *p);
    atomic_store_explicit(&s->poller, NULL, memory_order_relaxed);   /* destroy: nobody else runs */
}

/* ---- records -------------------------------------------------------------- */

static pollrec *rec_at(weft__poller *p, uint32_t index)
{
    pollrec *c = atomic_load_explicit(&p->chunks[index / CHUNK_RECS], memory_order_acquire);   /* acquire: pairs with the release in rec_alloc */
    return c ? &c[index % CHUNK_RECS] : NULL;
}

/* A free record, state FREE; NULL: out of memory. Callable from: any thread. */
static pollrec *rec_alloc(weft__poller *p)
{
    weft__spin_lock(&p->lock);
    pollrec *r = p->free;
    if (r) {
        p->free = r->next_free;
        weft__spin_unlock(&p->lock);
        return r;
    }
    unsigned n = atomic_load_explicit(&p->nchunks, memory_order_relaxed);   /* under lock */
    weft__spin_unlock(&p->lock);
    if (n == MAX_CHUNKS)
        return NULL;
    /* Allocate outside the spin lock, then publish under it (another
     * thread may have grown the table meanwhile: then this chunk joins
     * it too, if room is left). */
    pollrec *c = weft__calloc_with(&p->s->cfg.allocator, sizeof(pollrec) * CHUNK_RECS);
    if (!c)
        return NULL;
    weft__spin_lock(&p->lock);
    n = atomic_load_explicit(&p->nchunks, memory_order_relaxed);   /* under lock */
    if (n == MAX_CHUNKS) {
        weft__spin_unlock(&p->lock);
        weft__free_with(&p->s->cfg.allocator, c, sizeof(pollrec) * CHUNK_RECS);
        return NULL;
    }
    for (unsigned i = 0; i < CHUNK_RECS; i++) {
        c[i].index = n * CHUNK_RECS + i;
        atomic_init(&c[i].word, REC_WORD(1, 0, REC_FREE));
    }
    for (unsigned i = CHUNK_RECS - 1; i > 0; i--) {
        c[i].next_free = p->free;
        p->free = &c[i];
    }
    atomic_store_explicit(&p->chunks[n], c, memory_order_release);      /* release: the records' set-up before their use; pairs with rec_at */
    atomic_store_explicit(&p->nchunks, n + 1, memory_order_release);   /* release: pairs with shutdown's and fini's acquire */
    weft__spin_unlock(&p->lock);
    return &c[0];
}

/* Back to the free list with the next gen: events of its old wait are
 * stale from now on. 31 bits of gen: bit 63 of an event's data marks a
 * persistent registration's (fdreg.c). Callable from: the waiter, after it resumed. */
static void rec_free(weft__poller *p, pollrec *r)
{
    uint64_t v = atomic_load_explicit(&r->word, memory_order_relaxed);   /* relaxed: only the waiter writes a finished record */
    atomic_store_explicit(&r->word, REC_WORD((REC_GEN(v) + 1) & 0x7fffffffu, 0, REC_FREE), memory_order_relaxed);   /* relaxed: a racer's CAS expects PENDING of the old gen and fails either way */
    weft__spin_lock(&p->lock);
    r->next_free = p->free;
    p->free = r;
    weft__spin_unlock(&p->lock);
}

/* Ends the wait of record r (gen) as `to` if it is still pending: true
 * for the winner, which then makes the fiber ready. */
static bool rec_end(pollrec *r, uint32_t gen, unsigned events, unsigned to)
{
    uint64_t expect = REC_WORD(gen, 0, REC_PENDING);
    if (!atomic_compare_exchange_strong_explicit(&r->word, &expect, REC_WORD(gen, events, to),
            memory_order_acq_rel, memory_order_relaxed))   /* acq_rel: acquire the waiter's rec->fiber (its seq_cst store of PENDING); release our events to it */
        return false;
    weft__ready(r->fiber);
    return true;
}

/* ---- dispatch --------------------------------------------------------------- */

/* Makes the fibers of n events ready. Callable from: any worker (w's
 * own fibers go on its ready FIFO). */
static void dispatch(weft__poller *p, const weft__os_event *evs, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t d = evs[i].data;
        if (d & WEFT__FD_TAG) {   /* a persistent registration (fdreg.c) */
            weft__fd_event(p, d, evs[i].events);
            continue;
        }
        pollrec *r = rec_at(p, (uint32_t)d);
        if (r)
            rec_end(r, (uint32_t)(d >> 32), evs[i].events & 0xffffff, REC_READY);
    }
}

int weft__poller_sleep(weft__worker *w, uint64_t deadline)
{
    weft_sched *s = w->s;
    if (!weft__io_waiting(s))
        return -1;
    weft__poller *p = atomic_load_explicit(&s->poller, memory_order_acquire);   /* acquire: pairs with the release in get */
    if (!p)
        return -1;
    weft__worker *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&s->poll_owner, &none, w,
            memory_order_seq_cst, memory_order_relaxed))   /* seq_cst: before the token load below; pairs with give_token */
        return -1;   /* another worker sleeps there */
    int r = 0;
    if (!atomic_load_explicit(&w->token, memory_order_seq_cst)) {   /* seq_cst: Dekker with give_token's store, then owner load */
        weft__os_event evs[EVENTS_MAX];
        int n = weft__os_poller_wait(&p->os, evs, EVENTS_MAX, deadline);   /* consumes a break */
        dispatch(p, evs, n);
        r = w->ready_head != NULL;   /* nothing was ready when w parked */
    }
    atomic_store_explicit(&s->poll_owner, NULL, memory_order_release);   /* release: a later owner's CAS reads it */
    return r;
}

void weft__poller_break(weft_sched *s)
{
    weft__poller *p = atomic_load_explicit(&s->poller, memory_order_acquire);   /* acquire: pairs with the release in get */
    if (!p)
        return;
    weft__os_poller_wake(&p->os);
}

void weft__poller_poll(weft__worker *w)
{
    weft__poller *p = atomic_load_explicit(&w->s->poller, memory_order_acquire);   /* acquire: pairs with the release in get */
    if (!p)
        return;
    weft__os_event evs[EVENTS_MAX];
    int n = weft__os_poller_look(&p->os, evs, EVENTS_MAX);   /* leaves a break to the owner */
    if (n > 0)
        dispatch(p, evs, n);
}

/* ---- shutdown, forget ------------------------------------------------------ */

/* Ends every pending wait of p (fd -1) or those on fd, as `to`. */
static void rec_end_all(weft__poller *p, int fd, unsigned to)
{
    unsigned n = atomic_load_explicit(&p->nchunks, memory_order_acquire);   /* acquire: pairs with the release in rec_alloc */
    for (unsigned c = 0; c < n; c++) {
        pollrec *chunk = atomic_load_explicit(&p->chunks[c], memory_order_acquire);   /* acquire: as above */
        for (unsigned i = 0; i < CHUNK_RECS; i++) {
            uint64_t v = atomic_load_explicit(&chunk[i].word, memory_order_seq_cst);   /* seq_cst: the other half of shutdown's Dekker pair */
            if (REC_STATE(v) != REC_PENDING)
                continue;
            if (fd >= 0 && atomic_load_explicit(&chunk[i].fd, memory_order_acquire) != fd)   /* acquire: see rec->fd in Synchronization */
                continue;
            rec_end(&chunk[i], REC_GEN(v), 0, to);
        }
    }
}

void weft__poller_shutdown(weft_sched *s)
{
    pthread_mutex_lock(&s->io_lock);   /* a poller made from now on starts closing (weft__poller_get) */
    weft__poller *p = atomic_load_explicit(&s->poller, memory_order_relaxed);   /* under io_lock */
    pthread_mutex_unlock(&s->io_lock);
    if (!p)
        return;
    atomic_store_explicit(&p->closing, true, memory_order_seq_cst);   /* seq_cst: before the loads of the words; Dekker with the waiter's PENDING store then closing load */
    rec_end_all(p, -1, REC_CANCELED);
    weft__fd_shutdown(p);
}

/* A walk of every record: a few loads per record, records of one-shot
 * waits only (a scheduler whose waits all park on registrations has
 * none), and no lock a waiter takes. */
void weft__poller_forget(weft__poller *p, int fd)
{
    rec_end_all(p, fd, REC_CLOSED);
}

/* ---- a fiber's wait ------------------------------------------------------------ */

typedef struct fd_timer {
    weft__timer timer;
    pollrec *rec;
    uint32_t gen;
} fd_timer;

/* Runs on the waiter's own worker. */
static void fd_timeout(weft__timer *t)
{
    fd_timer *ft = WEFT_CONTAINER_OF(t, fd_timer, timer);
    rec_end(ft->rec, ft->gen, 0, REC_TIMEDOUT);
}

/* Ends r's wait ourselves, before suspending (a failed registration,
 * or shutdown seen first): true if we did; false if shutdown ended it
 * first and has made us ready, so we must suspend to take that. */
static bool rec_end_self(pollrec *r, uint32_t gen)
{
    uint64_t expect = REC_WORD(gen, 0, REC_PENDING);
    return atomic_compare_exchange_strong_explicit(&r->word, &expect, REC_WORD(gen, 0, REC_CANCELED),
               memory_order_relaxed, memory_order_relaxed);   /* relaxed: only decides the race with shutdown's CAS */
}

int weft__poller_wait(weft__worker *w, weft__poller *p, int fd, unsigned events,
                      uint64_t deadline, const char *what, const void *obj)
{
    weft_sched *s = w->s;
    if (!weft__have_fiber(w))
        return weft__no_fiber(w);
    pollrec *r = rec_alloc(p);
    if (!r)
        return weft__no_fiber(w);   /* out of memory: as good as no fiber */
    r->fiber = w->cur;
    atomic_store_explicit(&r->fd, fd, memory_order_release);   /* release: pairs with the walk's acquire (Synchronization) */
    uint32_t gen = REC_GEN(atomic_load_explicit(&r->word, memory_order_relaxed));   /* relaxed: a free record is ours */
    atomic_store_explicit(&r->word, REC_WORD(gen, 0, REC_PENDING), memory_order_seq_cst);   /* seq_cst: publishes rec->fiber (release), and before the closing load (Dekker with shutdown) */
    atomic_fetch_add_explicit(&s->io_waiters, 1, memory_order_relaxed);   /* relaxed: a hint (see Synchronization) */
    w->io_waits++;   /* owner only: a bound thread beside workers looks at the set itself (worker.c) */
    weft__os_watch watch = { -1, -1 };
    int failed = 1;   /* 1: none; else what to return if we end the wait ourselves */
    fd_timer tm = { .timer = { .deadline = deadline, .fire = fd_timeout }, .rec = r, .gen = gen };
    bool armed = false;
    if (atomic_load_explicit(&p->closing, memory_order_seq_cst)) {   /* seq_cst: see the store above */
        failed = WEFT_EAGAIN;   /* the caller looks once instead */
    } else {
        int e = weft__os_poller_add(&p->os, fd, events,
                                    (uint64_t)r->index | ((uint64_t)gen << 32), &watch);
        if (e)
            failed = e == EPERM ? 0 : (e == EBADF || e == EINVAL) ? WEFT_EINVAL : WEFT_ENOMEM;   /* EPERM: a regular file, always ready */
        else if (deadline && !(armed = weft__timer_arm(w, &tm.timer)))
            failed = WEFT_ENOMEM;   /* the timer heap could not grow */
    }
    if (failed != 1 && rec_end_self(r, gen))
        goto finish;
    if (failed != 1)
        failed = 1;   /* shutdown ended it first and made us ready: take that */
    else if (WEFT_UNLIKELY(weft__hooks(w)))
        weft__hook_note(w, what, obj, deadline);
    weft__suspend(w);
    if (armed)
        weft__timer_disarm(w, &tm.timer);
finish:
    weft__os_poller_remove(&p->os, &watch);   /* fd may be closed by now: fine */
    atomic_fetch_sub_explicit(&s->io_waiters, 1, memory_order_relaxed);   /* relaxed: a hint */
    w->io_waits--;
    uint64_t v = atomic_load_explicit(&r->word, memory_order_acquire);   /* acquire: pairs with the winner's acq_rel CAS */
    rec_free(p, r);
    switch (REC_STATE(v)) {
    case REC_READY:
        return (int)REC_EVENTS(v);
    case REC_TIMEDOUT:
        return WEFT_ETIMEDOUT;
    case REC_CANCELED:
        return failed != 1 ? failed : WEFT_ESHUTDOWN;
    case REC_CLOSED:
        return WEFT_ECLOSED;
    default:
        weft__panic("poller_wait: fd %d resumed in state %u", fd, REC_STATE(v));
    }
}
