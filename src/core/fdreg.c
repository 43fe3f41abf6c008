/* This file is private to weft: persistent registration: a descriptor a
 * task does I/O on joins its scheduler's epoll set once, edge-triggered
 * for every event, and stays there until weft_fd_forget or weft_fd_close
 * (fdio.c) says it is done. A record per descriptor number counts the
 * readiness edges of each side (read, write) and holds the fiber parked
 * on it, as Go's netpoller does: a call tries its read or write first and
 * parks only on EAGAIN, so a descriptor already ready costs no syscall of
 * weft's, and a wait that parks costs no epoll_ctl.
 *
 * Why counting edges is enough. A call reads side's count (seq) before
 * its read(2). Readiness that comes after that read's EAGAIN queues an
 * edge in the kernel, which some worker's epoll_wait then turns into
 * seq + 1; so a fiber parks only while seq is still what it read, and
 * every wake-up after a later edge is one (a spurious one, from an edge
 * of data the read took already, costs one more EAGAIN, never a lost
 * wake-up). Edges of a side no one waits on just count.
 *
 * Records live in chunks of WEFT__FD_CHUNK, indexed by descriptor number,
 * made at first use and never freed before destroy, so an event naming a
 * record always reads live memory. A record's gen changes at every
 * forget; an event carries the gen it was registered with, and one of an
 * older gen (a descriptor forgotten since, its number maybe reused) is
 * dropped. A descriptor closed behind weft's back (close(2) without
 * weft_fd_close) leaves the kernel's set by itself; if its number is
 * reused, the new descriptor finds a record that says "registered" and a
 * set that does not have it. So a park ends after RECHECK_NS at the
 * latest (the caller's own timeout if sooner), and a timeout re-registers
 * the number (ADD succeeds where it was stale), so the wait and the calls
 * after it work: every wait ends, up to a second late. Hence the header's
 * rule: close registered descriptors with weft_fd_close.
 *
 * Synchronization
 *   chunks[]   made under the table's spin lock, published with release,
 *              read with acquire; freed by destroy.
 *   rec->word  gen << 2 | state (UNREG, BUSY while one thread registers,
 *              REG). Registration: CAS UNREG -> BUSY, epoll ADD, CAS BUSY
 *              -> REG. Forget: CAS to gen + 1 | UNREG (seq_cst), then end
 *              the parked waits: Dekker pair with a parker's seq_cst
 *              store of its waiter then load of word.
 *   side->seq  edges seen: RMW (seq_cst) by the dispatching worker, then
 *              it loads the waiter (seq_cst): Dekker pair with the parker,
 *              which stores its waiter then loads seq. Either the parker
 *              sees the new count and does not sleep, or the dispatcher
 *              sees the parker and wakes it.
 *   side->waiter
 *              the parked fiber's fdwaiter (on its stack), or NULL. Set by
 *              the parker's CAS from NULL (one parker per side: a second
 *              waits the one-shot way); taken by CAS to NULL by exactly
 *              one of: the parker itself (it saw an edge, a forget or the
 *              shutdown first), the dispatcher, the timer (the parker's
 *              own worker), forget, shutdown. The taker writes result,
 *              then weft__ready publishes it to the fiber.
 *   drained, events, stream
 *              hints for skipping a read that would say EAGAIN (see
 *              weft__fd_note_short): relaxed, each true of the seq it
 *              names; a stale one costs a read, never a lost wake-up.
 *   live list  pollers with records, for weft_fd_forget from any thread:
 *              under live_lock.
 *   thread waits  plain threads' waits on a descriptor (io.c): listed
 *              under live_lock, so that a forget of their descriptor
 *              posts their wake handle.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "fdreg.h"
#include "ready.h"
#include "suspend.h"
#include "timer.h"
#include "worker.h"

enum { FD_UNREG = 0, FD_BUSY = 1, FD_REG = 2 };

#define W_STATE(v)      ((v) & 3u)
#define W_GEN(v)        ((v) >> 2)
#define W_MAKE(gen, st) ((((gen) & 0x3fffffffu) << 2) | (st))

/* Events that end a wait on each side. */
#define READ_EVENTS  (WEFT__OS_IN | WEFT__OS_PRI | WEFT__OS_RDHUP | WEFT__OS_HUP | WEFT__OS_ERR)
#define WRITE_EVENTS (WEFT__OS_OUT | WEFT__OS_HUP | WEFT__OS_ERR)

typedef struct fdwaiter {
    weft__fiber *fiber;
    int result;                  /* written by the taker, before weft__ready */
} fdwaiter;

typedef struct fdside {
    _Atomic uint64_t seq;        /* edges seen */
    fdwaiter *_Atomic waiter;    /* the parked fiber, or NULL */
    _Atomic uint64_t drained;    /* seq + 1 at which a read came back short; 0: none */
    atomic_uint events;          /* the last edge's events */
} fdside;

struct weft__fdrec {
    _Atomic uint32_t word;       /* gen << 2 | state */
    atomic_bool stream;          /* a byte stream (set at registration) */
    fdside side[2];
};

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static weft__poller *live_head;  /* under live_lock */
static weft__fd_twait *twait_head;  /* under live_lock */

/* fork(2): live_lock is process-wide, and a thread the child does not have
 * (a scheduler made or destroyed, a weft_fd_close) could hold it at the
 * fork: the child's first scheduler would wait for it for ever. Taken
 * around fork (a leaf: nothing else is locked under it), so the child
 * inherits it free and the list whole; the parent's pollers stay listed
 * in the child, whose threads are gone (weft.h: a child may not use them). */
static void live_fork_prepare(void)
{
    pthread_mutex_lock(&live_lock);
}

static void live_fork_release(void)
{
    pthread_mutex_unlock(&live_lock);
}

__attribute__((constructor)) static void live_fork_register(void)
{
    (void)weft__os_atfork(live_fork_prepare, live_fork_release, live_fork_release);   /* as stall.c's */
}

/* ---- the table ---------------------------------------------------------- */

/* fd's record (made now if make); NULL: fd out of range, or no memory. */
static weft__fdrec *rec_of(weft__poller *p, int fd, bool make)
{
    if (fd < 0 || fd >= WEFT__FD_CHUNK * WEFT__FD_MAX_CHUNKS)
        return NULL;
    weft__fdtab *t = weft__poller_fds(p);
    unsigned c = (unsigned)fd / WEFT__FD_CHUNK;
    weft__fdrec *chunk = atomic_load_explicit(&t->chunks[c], memory_order_acquire);   /* acquire: pairs with the release below */
    if (WEFT_LIKELY(chunk != NULL) || !make)
        return chunk ? &chunk[(unsigned)fd % WEFT__FD_CHUNK] : NULL;
    const weft_allocator *a = &weft__poller_sched(p)->cfg.allocator;
    weft__fdrec *made = weft__calloc_with(a, sizeof(weft__fdrec) * WEFT__FD_CHUNK);
    if (!made)
        return NULL;
    for (unsigned i = 0; i < WEFT__FD_CHUNK; i++) {
        atomic_init(&made[i].word, W_MAKE(0, FD_UNREG));
        atomic_init(&made[i].stream, false);
        for (int s = 0; s < 2; s++) {
            atomic_init(&made[i].side[s].seq, 0);
            atomic_init(&made[i].side[s].waiter, NULL);
            atomic_init(&made[i].side[s].drained, 0);
            atomic_init(&made[i].side[s].events, 0);
        }
    }
    weft__spin_lock(&t->lock);
    chunk = atomic_load_explicit(&t->chunks[c], memory_order_relaxed);   /* under lock */
    if (!chunk) {
        chunk = made;
        made = NULL;
        atomic_store_explicit(&t->chunks[c], chunk, memory_order_release);   /* release: the records' set-up; pairs with the acquire above */
    }
    weft__spin_unlock(&t->lock);
    if (made)   /* another thread made it first */
        weft__free_with(a, made, sizeof(weft__fdrec) * WEFT__FD_CHUNK);
    return &chunk[(unsigned)fd % WEFT__FD_CHUNK];
}

static uint64_t event_data(int fd, uint32_t gen)
{
    return WEFT__FD_TAG | ((uint64_t)(gen & 0x3fffffffu) << 32) | (uint32_t)fd;
}

/* Ends side's parked wait, if any, with result. */
static void side_end(fdside *sd, int result)
{
    fdwaiter *me = atomic_load_explicit(&sd->waiter, memory_order_seq_cst);   /* seq_cst: after the caller's RMW of seq or word (Dekker, see Synchronization) */
    if (me && atomic_compare_exchange_strong_explicit(&sd->waiter, &me, NULL,
                  memory_order_acq_rel, memory_order_relaxed)) {   /* acquire: the parker's me->fiber */
        me->result = result;
        weft__ready(me->fiber);
    }
}

/* ---- finding and registering -------------------------------------------- */

weft__fdrec *weft__fd_find(weft__poller *p, int fd, int side, uint64_t *seq)
{
    weft__fdrec *r = rec_of(p, fd, false);
    if (!r || W_STATE(atomic_load_explicit(&r->word, memory_order_acquire)) != FD_REG)   /* acquire: pairs with the registering CAS */
        return NULL;
    *seq = atomic_load_explicit(&r->side[side].seq, memory_order_acquire);   /* acquire: before the caller's read(2) */
    return r;
}

weft__fdrec *weft__fd_register(weft__poller *p, int fd, int side, uint64_t *seq, int *err)
{
    *err = 0;
#if defined(_WIN32)
    /* WSAPoll has no edge-triggered registration: every wait is one-shot. */
    (void)p, (void)fd, (void)side, (void)seq;
    return NULL;
#endif
    weft__fdrec *r = rec_of(p, fd, true);
    if (!r)
        return NULL;
    uint32_t v = atomic_load_explicit(&r->word, memory_order_acquire);   /* acquire: pairs with the registering CAS */
    if (W_STATE(v) == FD_REG) {
        *seq = atomic_load_explicit(&r->side[side].seq, memory_order_acquire);
        return r;
    }
    if (W_STATE(v) != FD_UNREG || weft__poller_closing(p) ||
        !atomic_compare_exchange_strong_explicit(&r->word, &v, W_MAKE(W_GEN(v), FD_BUSY),
            memory_order_acq_rel, memory_order_relaxed))   /* acq_rel: one registrar at a time */
        return NULL;   /* another thread registers it: the one-shot way this time */
    uint32_t gen = W_GEN(v);
    atomic_store_explicit(&r->stream, weft__os_fd_is_stream(fd), memory_order_relaxed);   /* relaxed: published by the REG CAS */
    /* Read before the ADD: readiness at the ADD queues an edge of its own. */
    *seq = atomic_load_explicit(&r->side[side].seq, memory_order_acquire);
    weft__os_watch wt;
    int e = weft__os_poller_add(weft__poller_os(p), fd, WEFT__OS_EDGE, event_data(fd, gen), &wt);
    uint32_t busy = W_MAKE(gen, FD_BUSY);
    if (e) {
        atomic_compare_exchange_strong_explicit(&r->word, &busy, W_MAKE(gen, FD_UNREG),
            memory_order_release, memory_order_relaxed);   /* fails only if forgotten meanwhile: fine */
        *err = e == EBADF ? WEFT_EINVAL : 0;   /* EPERM (a regular file), EEXIST (a one-shot wait has it), ENOMEM, ENOSPC: the one-shot way */
        return NULL;
    }
    if (!atomic_compare_exchange_strong_explicit(&r->word, &busy, W_MAKE(gen, FD_REG),
            memory_order_acq_rel, memory_order_relaxed)) {   /* release: the registration to finders */
        weft__os_poller_remove(weft__poller_os(p), &wt);   /* forgotten while we registered it */
        return NULL;
    }
    return r;
}

/* ---- drained streams ------------------------------------------------------------ */

/* A short read of a byte stream (a pipe, a SOCK_STREAM socket) took all
 * there was: the kernel's read stops early only at an empty queue. What
 * arrives after it queues an edge, so until the edge count moves past the
 * count read before that read, another read would only say EAGAIN: a call
 * may park at once. Not once an edge brought POLLHUP, POLLRDHUP or
 * POLLERR (the writer gone: the next read returns 0 or the error at once,
 * and no edge will come to say so; an edge after the snapshot moves the
 * count, so one of those already seen is in the events read here: the
 * acquire load of seq before the read synchronises with the dispatcher's
 * RMW that followed its store of events), nor after one with POLLPRI
 * (TCP's urgent mark stops a read early with data behind it), nor for
 * other descriptors (a datagram socket's short read is one datagram of
 * many). drained holds seq + 1; relaxed otherwise: a note is true of the
 * seq it names whoever wrote it, and a note missed only costs the read. */
void weft__fd_note_short(weft__fdrec *r, uint64_t seq)
{
    fdside *sd = &r->side[WEFT__FD_READ];
    if (atomic_load_explicit(&r->stream, memory_order_relaxed) &&
        !(atomic_load_explicit(&sd->events, memory_order_relaxed) &
          (WEFT__OS_PRI | WEFT__OS_HUP | WEFT__OS_RDHUP | WEFT__OS_ERR)))
        atomic_store_explicit(&sd->drained, seq + 1, memory_order_relaxed);
}

uint32_t weft__fd_word(weft__fdrec *r)
{
    return atomic_load_explicit(&r->word, memory_order_seq_cst);   /* seq_cst: after the caller's wait, against forget's CAS */
}

bool weft__fd_drained(weft__fdrec *r, uint64_t seq)
{
    return atomic_load_explicit(&r->side[WEFT__FD_READ].drained, memory_order_relaxed) == seq + 1;
}

/* ---- parking ---------------------------------------------------------------- */

typedef struct fd_timer {
    weft__timer timer;
    fdside *side;
    fdwaiter *me;
} fd_timer;

/* Runs on the parker's own worker. */
static void fd_timeout(weft__timer *t)
{
    fd_timer *ft = WEFT_CONTAINER_OF(t, fd_timer, timer);
    fdwaiter *me = ft->me;
    if (atomic_compare_exchange_strong_explicit(&ft->side->waiter, &me, NULL,
            memory_order_relaxed, memory_order_relaxed)) {   /* relaxed: me is this worker's own */
        me->result = WEFT_ETIMEDOUT;
        weft__ready(me->fiber);
    }
}

/* After a timeout: a stale registration (fd closed behind weft's back,
 * its number reused) never sees an edge, and registering the number again
 * succeeds only then (EEXIST otherwise). Undone if fd was forgotten
 * meanwhile, so that no registration of an old gen stays in the set. */
static void revalidate(weft__poller *p, weft__fdrec *r, int fd, uint32_t word)
{
    if (atomic_load_explicit(&r->word, memory_order_acquire) != word)
        return;
    weft__os_watch wt;
    if (weft__os_poller_add(weft__poller_os(p), fd, WEFT__OS_EDGE, event_data(fd, W_GEN(word)), &wt) == 0 &&
        atomic_load_explicit(&r->word, memory_order_seq_cst) != word)   /* seq_cst: after the ADD, against forget's CAS */
        weft__os_poller_remove(weft__poller_os(p), &wt);
}

#define RECHECK_NS 1000000000ull   /* a second: see weft__fd_park */

int weft__fd_park(weft__worker *w, weft__poller *p, weft__fdrec *r, int side, uint64_t seq,
                  uint64_t deadline, const char *what, int fd)
{
    fdside *sd = &r->side[side];
    uint32_t word = atomic_load_explicit(&r->word, memory_order_acquire);
    if (W_STATE(word) != FD_REG)
        return WEFT_ECLOSED;   /* forgotten since the caller found it */
    if (atomic_load_explicit(&sd->seq, memory_order_acquire) != seq)
        return 0;
    if (!weft__have_fiber(w))
        return weft__no_fiber(w);
    fdwaiter me = { .fiber = w->cur, .result = 0 };
    fdwaiter *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&sd->waiter, &none, &me,
            memory_order_seq_cst, memory_order_relaxed))   /* seq_cst: publishes me (release), and before the loads below (Dekker) */
        return WEFT_EBUSY;
    weft_sched *s = w->s;
    atomic_fetch_add_explicit(&s->io_waiters, 1, memory_order_relaxed);   /* relaxed: a hint (poller.c) */
    w->io_waits++;
    int early = 1;   /* 1: park; else end it ourselves with this */
    /* A record can go stale behind our back (fd closed with close(2), its
     * number reused: epoll dropped the registration and no edge comes), and
     * nothing tells us: a park without a deadline of its own, or with a
     * farther one, looks again after RECHECK_NS (revalidate below), so that
     * every wait ends. An idle descriptor costs one wake-up a RECHECK_NS. */
    uint64_t until = weft__now_ns() + RECHECK_NS;
    bool own = deadline && deadline <= until;   /* the caller's deadline comes first */
    fd_timer tm = { .timer = { .deadline = own ? deadline : until, .fire = fd_timeout }, .side = sd, .me = &me };
    bool armed = false;
    if (atomic_load_explicit(&sd->seq, memory_order_seq_cst) != seq)   /* seq_cst: Dekker with the dispatcher */
        early = 0;
    else if (atomic_load_explicit(&r->word, memory_order_seq_cst) != word)   /* seq_cst: Dekker with forget */
        early = WEFT_ECLOSED;
    else if (weft__poller_closing(p))   /* seq_cst inside: Dekker with shutdown */
        early = WEFT_EAGAIN;
    else if (!(armed = weft__timer_arm(w, &tm.timer)))
        early = WEFT_ENOMEM;
    int result = early;
    fdwaiter *mine = &me;
    if (early != 1 && atomic_compare_exchange_strong_explicit(&sd->waiter, &mine, NULL,
                          memory_order_relaxed, memory_order_relaxed))   /* relaxed: only decides the race */
        goto out;
    if (early == 1 && WEFT_UNLIKELY(weft__hooks(w)))
        weft__hook_note(w, what, (const void *)(intptr_t)fd, deadline);
    /* Parked, or taken by someone who makes us ready: suspend to take that. */
    weft__suspend(w);
    if (armed)
        weft__timer_disarm(w, &tm.timer);
    result = me.result;
    if (result == WEFT_ETIMEDOUT) {
        revalidate(p, r, fd, word);
        if (!own)
            result = 0;   /* the recheck, not the caller's timeout: look again */
    }
out:
    atomic_fetch_sub_explicit(&s->io_waiters, 1, memory_order_relaxed);   /* relaxed: a hint */
    w->io_waits--;
    return result;
}

/* ---- events, forget, shutdown ---------------------------------------------- */

void weft__fd_event(weft__poller *p, uint64_t data, unsigned events)
{
    int fd = (int)(uint32_t)data;
    uint32_t gen = (uint32_t)(data >> 32) & 0x3fffffffu;
    weft__fdrec *r = rec_of(p, fd, false);
    if (!r)
        return;
    uint32_t v = atomic_load_explicit(&r->word, memory_order_acquire);
    if (W_GEN(v) != gen || W_STATE(v) == FD_UNREG)
        return;   /* forgotten since: the number may name another descriptor now */
    int ev = (int)(events & 0xffffu);
    if (events & READ_EVENTS) {
        atomic_store_explicit(&r->side[WEFT__FD_READ].events, events, memory_order_relaxed);   /* relaxed: a hint for weft__fd_drained */
        atomic_fetch_add_explicit(&r->side[WEFT__FD_READ].seq, 1, memory_order_seq_cst);   /* seq_cst: before the waiter load (Dekker) */
        side_end(&r->side[WEFT__FD_READ], ev);
    }
    if (events & WRITE_EVENTS) {
        atomic_fetch_add_explicit(&r->side[WEFT__FD_WRITE].seq, 1, memory_order_seq_cst);   /* seq_cst: as above */
        side_end(&r->side[WEFT__FD_WRITE], ev);
    }
}

/* Ends fd's registration in p; its parked waits return WEFT_ECLOSED. */
static void forget(weft__poller *p, int fd)
{
    weft__fdrec *r = rec_of(p, fd, false);
    if (!r)
        return;
    uint32_t v = atomic_load_explicit(&r->word, memory_order_relaxed);
    do {
        if (W_STATE(v) == FD_UNREG)
            return;
    } while (!atomic_compare_exchange_weak_explicit(&r->word, &v, W_MAKE(W_GEN(v) + 1, FD_UNREG),
                 memory_order_seq_cst, memory_order_relaxed));   /* seq_cst: before the waiter loads (Dekker with the parker) */
    atomic_store_explicit(&r->side[WEFT__FD_READ].drained, 0, memory_order_relaxed);   /* relaxed: a hint, see weft__fd_drained */
    if (W_STATE(v) == FD_REG) {   /* BUSY: the registrar removes its own */
        weft__os_watch wt = { fd, -1 };
        weft__os_poller_remove(weft__poller_os(p), &wt);
    }
    side_end(&r->side[WEFT__FD_READ], WEFT_ECLOSED);
    side_end(&r->side[WEFT__FD_WRITE], WEFT_ECLOSED);
}

void weft__fd_forget_all(int fd)
{
    pthread_mutex_lock(&live_lock);
    for (weft__poller *p = live_head; p; p = weft__poller_fds(p)->next_live) {
        forget(p, fd);
        weft__poller_forget(p, fd);   /* one-shot waits on fd too (poller.c) */
    }
    for (weft__fd_twait *tw = twait_head; tw; tw = tw->next)
        if (tw->fd == fd)
            weft__os_wake_post(tw->wake);   /* its poll ends WOKEN: the call says ECLOSED */
    pthread_mutex_unlock(&live_lock);
}

void weft__fd_twait_add(weft__fd_twait *tw)
{
    pthread_mutex_lock(&live_lock);
    tw->next = twait_head;
    twait_head = tw;
    pthread_mutex_unlock(&live_lock);
}

void weft__fd_twait_remove(weft__fd_twait *tw)
{
    pthread_mutex_lock(&live_lock);
    weft__fd_twait **pp = &twait_head;
    while (*pp && *pp != tw)
        pp = &(*pp)->next;
    if (*pp)
        *pp = tw->next;
    pthread_mutex_unlock(&live_lock);
}

void weft__fd_wake_all(void)
{
    pthread_mutex_lock(&live_lock);
    for (weft__poller *p = live_head; p; p = weft__poller_fds(p)->next_live)
        weft__os_poller_wake(weft__poller_os(p));
    pthread_mutex_unlock(&live_lock);
}

void weft__fd_live(weft__poller *p, bool add)
{
    pthread_mutex_lock(&live_lock);
    weft__poller **pp = &live_head;
    while (*pp && *pp != p)
        pp = &weft__poller_fds(*pp)->next_live;
    if (add && !*pp) {
        weft__poller_fds(p)->next_live = live_head;
        live_head = p;
    } else if (!add && *pp) {
        *pp = weft__poller_fds(p)->next_live;
    }
    pthread_mutex_unlock(&live_lock);
}

void weft__fd_shutdown(weft__poller *p)
{
    weft__fdtab *t = weft__poller_fds(p);
    for (unsigned c = 0; c < WEFT__FD_MAX_CHUNKS; c++) {
        weft__fdrec *chunk = atomic_load_explicit(&t->chunks[c], memory_order_acquire);   /* acquire: pairs with rec_of's release */
        for (unsigned i = 0; chunk && i < WEFT__FD_CHUNK; i++) {
            side_end(&chunk[i].side[WEFT__FD_READ], WEFT_EAGAIN);
            side_end(&chunk[i].side[WEFT__FD_WRITE], WEFT_EAGAIN);
        }
    }
}

void weft__fd_fini(weft__poller *p)
{
    weft__fdtab *t = weft__poller_fds(p);
    const weft_allocator *a = &weft__poller_sched(p)->cfg.allocator;
    for (unsigned c = 0; c < WEFT__FD_MAX_CHUNKS; c++) {
        weft__fdrec *chunk = atomic_load_explicit(&t->chunks[c], memory_order_relaxed);   /* destroy: nobody else runs */
        if (chunk)
            weft__free_with(a, chunk, sizeof(weft__fdrec) * WEFT__FD_CHUNK);
    }
}
