/* Issue 30, scheduler promises, written from the header:
 *   - a spin never hides readiness: with spin_us at 1 s, a task waiting
 *     on a descriptor (weft_fd_wait_for), a child (weft_pid_wait_for) or a
 *     predicate (weft_wait_until) whose wait ends from another thread
 *     goes on while its worker spins, whether the spin is a channel
 *     waiter's in place or the worker loop's own; a spin that hid it
 *     would cost a second a round, 200 s a case, against its timeout;
 *   - weft_sched_destroy with no workers refuses at once, running
 *     nothing, while another thread is bound;
 *   - binding is O(log n) in the threads bound and gives the smallest
 *     free id (3,000 threads bound at once).
 * At 0 workers (tasks run in a bound thread's waits), 1, 2 and 8 (tasks
 * pinned to the last worker, so that they share it; with idle workers
 * beside it one of them may sleep in epoll_wait and see the readiness
 * first: those counts check that nothing breaks, 0 and 1 that nothing
 * hides). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core.h"   /* bind_steps: the binding cases count work, not time */
#include "weft.h"
#include "wtest.h"

static void pause_ns(long ns)
{
    struct timespec ts = { 0, ns };
    nanosleep(&ts, NULL);
}

/* ---- a spin never hides readiness -------------------------------------------- */

enum { ROUNDS = 200, PID_ROUNDS = 100 };   /* whole in release; scaled (rounds_of) */
/* What ends the first task's wait: a pipe's byte, a child's exit, a flag
 * read by a weft_wait_until predicate. */
enum { BY_FD, BY_PID, BY_PRED };

typedef struct spinrig {
    weft_sched *s;
    unsigned workers, by;
    bool chan;                 /* a second task waits on a channel meanwhile */
    int fds[2];                /* BY_FD: the pipe the writer fills */
    int kid[2];                /* BY_PID: the pipe the child waits on */
    atomic_int child;          /* BY_PID: this round's child */
    atomic_uint flag;          /* BY_PRED: the round whose wait may end */
    weft_chan *ch;
    weft_waitgroup wg;         /* the round's tasks */
    atomic_uint armed;         /* rounds whose last task is in its wait */
    atomic_uint ok, bad;
    unsigned round;
} spinrig;

/* Rounds of a case: each is a whole check, so the sanitizer builds run
 * fewer (WEFT_STRESS_SCALE), at least a tenth. */
static unsigned rounds_of(unsigned by)
{
    return by == BY_PID ? (unsigned)wt_scaled(PID_ROUNDS, PID_ROUNDS / 10)
                        : (unsigned)wt_scaled(ROUNDS, ROUNDS / 10);
}

static bool flag_pred(void *arg)
{
    spinrig *r = arg;
    return atomic_load(&r->flag) == r->round + 1;
}

/* Waits for this round's event, then answers the channel waiter. */
static void sr_waiter(void *arg)
{
    spinrig *r = arg;
    bool good = false;
    if (!r->chan)
        atomic_store(&r->armed, r->round + 1);   /* the loop spins next */
    if (r->by == BY_FD) {
        char c;
        good = weft_fd_wait_for(r->fds[0], POLLIN, UINT64_MAX) > 0 && read(r->fds[0], &c, 1) == 1;
    } else if (r->by == BY_PID) {
        int st = -1;
        good = weft_pid_wait_for(atomic_load(&r->child), &st, UINT64_MAX) == WEFT_OK &&
               WIFEXITED(st) && WEXITSTATUS(st) == 7;
    } else {
        good = weft_wait_until(flag_pred, r) == WEFT_OK;
    }
    if (r->chan) {
        uint64_t v = 11;
        good = weft_chan_send(r->ch, &v) == WEFT_OK && good;
    }
    atomic_fetch_add(good ? &r->ok : &r->bad, 1);
    weft_waitgroup_done(&r->wg);
}

/* Runs after sr_waiter blocked, on the same thread: spins in place. */
static void sr_receiver(void *arg)
{
    spinrig *r = arg;
    uint64_t v = 0;
    atomic_store(&r->armed, r->round + 1);
    bool good = weft_chan_recv(r->ch, &v) == WEFT_OK && v == 11;
    atomic_fetch_add(good ? &r->ok : &r->bad, 1);
    weft_waitgroup_done(&r->wg);
}

/* A plain thread: once a round's last task is in its wait, well into
 * it, ends the first task's wait. */
static void *sr_ender(void *arg)
{
    spinrig *r = arg;
    unsigned rounds = rounds_of(r->by);
    for (unsigned i = 0; i < rounds; i++) {
        while (atomic_load(&r->armed) != i + 1)
            sched_yield();
        pause_ns(20000);
        if (r->by == BY_FD)
            WT_ASSERT_EQ(write(r->fds[1], "x", 1), 1);
        else if (r->by == BY_PID)
            WT_ASSERT_EQ(write(r->kid[1], "x", 1), 1);
        else
            atomic_store(&r->flag, i + 1);
    }
    return NULL;
}

static void spawn_last(spinrig *r, weft_fn fn)
{
    weft_spawn_opts o = { .pinned = r->workers > 0, .thread = (int)r->workers - 1 };
    WT_ASSERT_EQ(weft_spawn_ex(r->s, fn, r, &o), WEFT_OK);
}

static void spin_case(unsigned by, bool chan)
{
    static const char *const names[] = { "fd", "pid", "predicate" };
    static const unsigned counts[] = { 0, 1, 2, 8 };
    for (unsigned wi = 0; wi < sizeof counts / sizeof counts[0]; wi++) {
        unsigned workers = counts[wi];
        spinrig r = { .workers = workers, .by = by, .chan = chan };
        weft_config c;
        weft_config_init(&c);
        c.workers = wt_workers(workers);
        c.spin_us = 1000000;
        WT_ASSERT_EQ(weft_sched_create(&r.s, &c), WEFT_OK);
        if (workers == 0)
            WT_ASSERT_EQ(weft_sched_bind(r.s), WEFT_OK);   /* its waits run the tasks */
        WT_ASSERT_EQ(pipe2(r.fds, O_CLOEXEC | O_NONBLOCK), 0);
        WT_ASSERT_EQ(pipe2(r.kid, O_CLOEXEC), 0);
        pthread_t ender;
        WT_ASSERT_EQ(pthread_create(&ender, NULL, sr_ender, &r), 0);
        unsigned rounds = rounds_of(by);
        for (unsigned i = 0; i < rounds; i++) {
            r.round = i;
            if (by == BY_PID) {
                int pid = fork();
                WT_ASSERT(pid >= 0);
                if (pid == 0) {
                    char ch;
                    _exit(read(r.kid[0], &ch, 1) == 1 ? 7 : 1);
                }
                atomic_store(&r.child, pid);
            }
            if (chan)
                WT_ASSERT_EQ(weft_chan_create(&r.ch, sizeof(uint64_t), 0), WEFT_OK);
            weft_waitgroup_init(&r.wg, chan ? 2 : 1);
            spawn_last(&r, sr_waiter);   /* blocks first: the receiver comes after it */
            if (chan)
                spawn_last(&r, sr_receiver);
            WT_ASSERT_EQ(weft_waitgroup_wait(&r.wg), WEFT_OK);   /* a plain wait, or the bound thread's loop */
            weft_waitgroup_destroy(&r.wg);
            if (chan)
                weft_chan_destroy(r.ch);
        }
        WT_ASSERT_EQ(pthread_join(ender, NULL), 0);
        unsigned want = rounds * (chan ? 2 : 1);
        WT_ASSERT(atomic_load(&r.ok) == want && atomic_load(&r.bad) == 0,
                  "%s, %u workers, %s: %u of %u waits ended well", names[by], workers,
                  chan ? "channel spin" : "loop spin", atomic_load(&r.ok), want);
        if (workers == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(r.s), WEFT_OK);
        close(r.fds[0]);
        close(r.fds[1]);
        close(r.kid[0]);
        close(r.kid[1]);
    }
}

WT_TEST(promise_sched, fd_readiness_ends_a_channel_spin, .timeout = 60)
{
    spin_case(BY_FD, true);
}

WT_TEST(promise_sched, child_exit_ends_a_channel_spin, .timeout = 60)
{
    spin_case(BY_PID, true);
}

WT_TEST(promise_sched, fd_readiness_ends_the_loop_spin, .timeout = 60)
{
    spin_case(BY_FD, false);
}

WT_TEST(promise_sched, child_exit_ends_the_loop_spin, .timeout = 60)
{
    spin_case(BY_PID, false);
}

WT_TEST(promise_sched, a_predicate_ends_the_loop_spin, .timeout = 60)
{
    spin_case(BY_PRED, false);
}

/* A bound thread beside workers whose own task waits on a descriptor
 * while every worker is busy with one long task: nobody else looks at
 * the epoll set (a busy worker looks between tasks), so the bound
 * thread's wait must look itself, between naps, instead of sleeping
 * until woken. The worker's task ends only once the fd task has run:
 * a thread that slept on would hang (the case's timeout). */
typedef struct busyrig {
    int fds[2];
    atomic_uint busy, armed, done;
    weft_waitgroup wg;
} busyrig;

static void br_busy(void *arg)
{
    busyrig *b = arg;
    unsigned want = atomic_load(&b->done) + 1;
    atomic_fetch_add(&b->busy, 1);
    while (atomic_load(&b->done) < want)
        sched_yield();   /* holds its worker until the fd task has run */
    weft_waitgroup_done(&b->wg);
}

static void br_fd(void *arg)
{
    busyrig *b = arg;
    char c;
    atomic_fetch_add(&b->armed, 1);
    WT_ASSERT(weft_fd_wait_for(b->fds[0], POLLIN, UINT64_MAX) > 0);
    WT_ASSERT_EQ(read(b->fds[0], &c, 1), 1);
    atomic_fetch_add(&b->done, 1);
    weft_waitgroup_done(&b->wg);
}

static void *br_writer(void *arg)
{
    busyrig *b = arg;
    for (unsigned i = 0; i < 20; i++) {
        while (atomic_load(&b->armed) != i + 1)
            sched_yield();
        pause_ns(20000);
        WT_ASSERT_EQ(write(b->fds[1], "x", 1), 1);
    }
    return NULL;
}

WT_TEST(promise_sched, a_bound_threads_fd_wait_is_seen_while_every_worker_is_busy, .timeout = 60)
{
    static const unsigned spins[] = { WEFT_SPIN_NONE, 50 };
    for (unsigned k = 0; k < 2; k++)
        for (unsigned workers = 1; workers <= 2; workers++) {
            busyrig b = { 0 };
            weft_config c;
            weft_config_init(&c);
            c.workers = wt_workers(workers);
            c.spin_us = spins[k];
            weft_sched *s = NULL;
            WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
            WT_ASSERT_EQ(pipe2(b.fds, O_CLOEXEC | O_NONBLOCK), 0);
            pthread_t wr;
            WT_ASSERT_EQ(pthread_create(&wr, NULL, br_writer, &b), 0);
            for (unsigned i = 0; i < 20; i++) {
                weft_waitgroup_init(&b.wg, 1 + workers);
                for (unsigned j = 0; j < workers; j++) {   /* every worker busy */
                    weft_spawn_opts o = { .pinned = true, .thread = (int)j };
                    WT_ASSERT_EQ(weft_spawn_ex(s, br_busy, &b, &o), WEFT_OK);
                }
                while (atomic_load(&b.busy) != (i + 1) * workers)
                    sched_yield();
                weft_spawn_opts me = { .pinned = true, .thread = weft_thread_id() };
                WT_ASSERT_EQ(weft_spawn_ex(s, br_fd, &b, &me), WEFT_OK);
                WT_ASSERT_EQ(weft_waitgroup_wait(&b.wg), WEFT_OK);   /* runs br_fd here */
                weft_waitgroup_destroy(&b.wg);
            }
            WT_ASSERT_EQ(pthread_join(wr, NULL), 0);
            WT_ASSERT_EQ(atomic_load(&b.done), 20u);
            weft_sched_unbind();
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
            close(b.fds[0]);
            close(b.fds[1]);
        }
}

/* ---- destroy at 0 workers refuses at once ------------------------------------ */

/* A thread bound to s that stays bound, in its own code, until told to
 * unbind: destroy must refuse at once, running nothing; a destroy that
 * waited for it to unbind would wait for ever (the case's timeout). */
typedef struct bound_peer {
    weft_sched *s;
    atomic_int id;             /* its weft_thread_id once bound, else -1 */
    atomic_bool leave;
    atomic_uint ran;           /* tasks queued by the test that ran */
    atomic_int ran_on;         /* weft_thread_id of the thread that ran one */
} bound_peer;

static void *bp_thread(void *arg)
{
    bound_peer *p = arg;
    WT_ASSERT_EQ(weft_sched_bind(p->s), WEFT_OK);
    atomic_store(&p->id, weft_thread_id());
    while (!atomic_load(&p->leave))
        sched_yield();
    weft_sched_unbind();   /* runs what is queued, and pinned here */
    return NULL;
}

static void bp_task(void *arg)
{
    bound_peer *p = arg;
    atomic_store(&p->ran_on, weft_thread_id());
    atomic_fetch_add(&p->ran, 1);
}

static void destroy_refused_case(bool pinned)
{
    bound_peer p = { .id = -1, .ran_on = -2 };
    weft_config c;
    weft_config_init(&c);
    c.workers = WEFT_WORKERS_NONE;
    WT_ASSERT_EQ(weft_sched_create(&p.s, &c), WEFT_OK);
    pthread_t t;
    WT_ASSERT_EQ(pthread_create(&t, NULL, bp_thread, &p), 0);
    while (atomic_load(&p.id) < 0)
        sched_yield();
    weft_spawn_opts o = { .pinned = pinned, .thread = atomic_load(&p.id) };
    WT_ASSERT_EQ(weft_spawn_ex(p.s, bp_task, &p, &o), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(p.s), WEFT_EBUSY);   /* from a plain thread, at once */
    WT_ASSERT(atomic_load(&p.ran) == 0, "the refused destroy ran %u queued tasks", atomic_load(&p.ran));
    WT_ASSERT_EQ(weft_sched_current(), NULL);   /* not left bound */
    /* Still usable: another task queued, and the bound thread runs both
     * at its unbind. */
    WT_ASSERT_EQ(weft_spawn_ex(p.s, bp_task, &p, &o), WEFT_OK);
    atomic_store(&p.leave, true);
    WT_ASSERT_EQ(pthread_join(t, NULL), 0);
    WT_ASSERT_EQ(atomic_load(&p.ran), 2u);
    WT_ASSERT_EQ(atomic_load(&p.ran_on), atomic_load(&p.id));
    WT_ASSERT_EQ(weft_sched_destroy(p.s), WEFT_OK);
}

WT_TEST(promise_sched, destroy_at_0_workers_refuses_at_once_a_task_pinned_to_a_bound_thread, .timeout = 60)
{
    destroy_refused_case(true);
}

WT_TEST(promise_sched, destroy_at_0_workers_refuses_at_once_running_nothing, .timeout = 60)
{
    destroy_refused_case(false);
}

/* The same destroy with no other thread bound runs what is queued, on
 * the calling thread, and returns OK (the header's single-threaded
 * mode): the refusal above is no blanket one. */
WT_TEST(promise_sched, destroy_at_0_workers_runs_the_queue_when_nobody_else_is_bound, .timeout = 60)
{
    bound_peer p = { .id = -1, .ran_on = -2 };
    weft_config c;
    weft_config_init(&c);
    c.workers = WEFT_WORKERS_NONE;
    WT_ASSERT_EQ(weft_sched_create(&p.s, &c), WEFT_OK);
    for (int i = 0; i < 3; i++)
        WT_ASSERT_EQ(weft_spawn(p.s, bp_task, &p), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(p.s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&p.ran), 3u);
    WT_ASSERT_EQ(atomic_load(&p.ran_on), 0);   /* the caller, bound for the while: the first id */
}

/* ---- binding: thousands of threads, the smallest free id, counted cost -------- */

/* weft_sched_bind gives a bound thread the smallest free id >= workers
 * (weft_thread_id: "ids of unbound threads are reused") and sets no limit
 * on how many threads are bound: 3,000 threads bound at once, ids
 * checked, some unbound out of order, their ids handed out again
 * smallest first, pins reaching threads by id throughout. Cost is
 * counted, not timed: the scheduler's bind_steps (slots and heap levels
 * visited by binds and unbinds, an internal counter) must stay within a
 * log factor per bind; the scan of every bound thread per candidate id
 * that it replaced visited about 4.5e9 for these 3,000 binds. */

#ifndef NTHREADS
#define NTHREADS 3000
#endif

typedef struct peer {
    weft_sched *s;
    pthread_t t;
    atomic_int id;             /* weft_thread_id once bound; -1 before */
    sem_t leave;               /* posted: unbind (a sleep meanwhile: thousands wait) */
    atomic_uint pinned_ran;
} peer;

static void *peer_main(void *arg)
{
    peer *p = arg;
    WT_ASSERT_EQ(weft_sched_bind(p->s), WEFT_OK);
    atomic_store(&p->id, weft_thread_id());
    while (sem_wait(&p->leave) != 0)
        ;
    weft_sched_unbind();   /* runs what is pinned here first */
    return NULL;
}

static void pinned_task(void *arg)
{
    peer *p = arg;
    WT_ASSERT_EQ(weft_thread_id(), atomic_load(&p->id));
    atomic_fetch_add(&p->pinned_ran, 1);
}

/* Starts p bound and returns its id. Small stacks: thousands of them. */
static int start_peer(weft_sched *s, peer *p)
{
    p->s = s;
    atomic_store(&p->id, -1);
    WT_ASSERT_EQ(sem_init(&p->leave, 0, 0), 0);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    WT_ASSERT_EQ(pthread_create(&p->t, &a, peer_main, p), 0);
    pthread_attr_destroy(&a);
    int id;
    while ((id = atomic_load(&p->id)) < 0)
        sched_yield();
    return id;
}

static void stop_peer(peer *p)
{
    WT_ASSERT_EQ(sem_post(&p->leave), 0);
    WT_ASSERT_EQ(pthread_join(p->t, NULL), 0);
    sem_destroy(&p->leave);
}

static uint64_t steps(weft_sched *s)
{
    pthread_mutex_lock(&s->bound_lock);
#ifdef OLD_CODE
    uint64_t n = 0;
#else
    uint64_t n = s->bind_steps;
#endif
    pthread_mutex_unlock(&s->bound_lock);
    return n;
}

static void pin_to(weft_sched *s, peer *p)
{
    weft_spawn_opts o = { .pinned = true, .thread = atomic_load(&p->id) };
    WT_ASSERT_EQ(weft_spawn_ex(s, pinned_task, p, &o), WEFT_OK);
}

static void many_binds(unsigned workers)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    peer *ps = calloc(NTHREADS, sizeof *ps);
    WT_ASSERT(ps != NULL);
    /* 1. One at a time: ids workers, workers + 1, ... */
    for (unsigned i = 0; i < NTHREADS; i++)
        WT_ASSERT_EQ(start_peer(s, &ps[i]), (int)(workers + i));
    /* 2. Every third unbinds, newest first, each with a task pinned to
     *    it (its unbind runs it). */
    unsigned ops = NTHREADS, freed = 0;
    for (unsigned i = NTHREADS; i-- > 0;) {
        if (i % 3 != 1)
            continue;
        pin_to(s, &ps[i]);
        stop_peer(&ps[i]);
        WT_ASSERT_EQ(atomic_load(&ps[i].pinned_ran), 1u);
        ops++;
        freed++;
    }
    /* 3. New binds take the freed ids, smallest first, then the next
     *    never given. */
    peer *fresh = calloc(freed + 1, sizeof *fresh);
    WT_ASSERT(fresh != NULL);
    for (unsigned k = 0; k <= freed; k++) {
        int want = k < freed ? (int)(workers + 1 + 3 * k) : (int)(workers + NTHREADS);
        WT_ASSERT_EQ(start_peer(s, &fresh[k]), want);
        ops++;
    }
    /* 4. Cost: a log factor per bind or unbind, with a wide margin
     *    (log2 3000 < 12). */
    uint64_t n = steps(s);
    WT_ASSERT(n <= (uint64_t)ops * 32, "%llu steps for %u binds and unbinds",
              (unsigned long long)n, ops);
    /* 5. A pin reaches the new holder of a reused id, which runs it as
     *    it unbinds. (Pinned just before: with no workers an unbind
     *    waits for every queued task, those pinned to threads that are
     *    not in weft included.) */
    for (unsigned k = 0; k <= freed; k++) {
        pin_to(s, &fresh[k]);
        stop_peer(&fresh[k]);
        WT_ASSERT_EQ(atomic_load(&fresh[k].pinned_ran), 1u);
    }
    for (unsigned i = 0; i < NTHREADS; i++)
        if (i % 3 != 1)
            stop_peer(&ps[i]);
    free(fresh);
    free(ps);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(promise_sched, thousands_bound_smallest_free_id_log_cost_0_workers, .timeout = 300)
{
    many_binds(0);
}

WT_TEST(promise_sched, thousands_bound_smallest_free_id_log_cost_2_and_8_workers, .timeout = 300)
{
    many_binds(2);
    many_binds(8);
}

/* Ids after every thread has unbound: the first bind gets id `workers`
 * again, and a pin to an id that no thread holds any more is refused. */
WT_TEST(promise_sched, ids_restart_and_stale_pins_refused, .timeout = 60)
{
    for (unsigned workers = 0; workers <= 8; workers += 4) {
        weft_config c;
        weft_config_init(&c);
        c.workers = wt_workers(workers);
        weft_sched *s = NULL;
        WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
        peer a = { 0 }, b = { 0 };
        WT_ASSERT_EQ(start_peer(s, &a), (int)workers);
        WT_ASSERT_EQ(start_peer(s, &b), (int)workers + 1);
        stop_peer(&a);
        stop_peer(&b);
        weft_spawn_opts o = { .pinned = true, .thread = (int)workers + 1 };
        WT_ASSERT_EQ(weft_spawn_ex(s, pinned_task, &b, &o), WEFT_EINVAL);
        o.thread = (int)workers + 7;   /* never given */
        WT_ASSERT_EQ(weft_spawn_ex(s, pinned_task, &b, &o), WEFT_EINVAL);
        peer d = { 0 };
        WT_ASSERT_EQ(start_peer(s, &d), (int)workers);
        stop_peer(&d);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}
