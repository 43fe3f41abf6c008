/* Channels between peers on different threads, written from the header:
 * a receive or send that finds no peer and whose thread has nothing else
 * to run waits without giving its worker up for a while (spin_us), and
 * none of that may show. Checked here: ping-pong across workers with
 * element sizes 1, 8 and 24 and capacities 0 and 1, values intact and in
 * order, with spinning on and off, peers as tasks and as plain threads;
 * close ending waiting receivers and senders at any moment of their wait;
 * a rendezvous channel destroyed by either side as soon as its call
 * returns; and a waiting task giving its worker to other work for it (a
 * global task, a pinned task, a fiber woken from another thread, a due
 * timer) with spin_us at 1 s, so that a wait which kept its worker would
 * take every round a second and the test past its timeout. At 0 workers
 * (tasks run in a bound thread's waits) as well as 1, 2 and 8, but for
 * the last case, which is about a worker's spin. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#include "wtest.h"

static weft_sched *sched_with(unsigned workers, unsigned spin_us)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    c.spin_us = spin_us;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    if (workers == 0)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);   /* its tasks run in this thread's waits */
    return s;
}

static void sched_done(weft_sched *s, unsigned workers)
{
    if (workers == 0)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* Pinned to worker `thread` when it exists, else unpinned. */
static void spawn_on(weft_sched *s, unsigned workers, int thread, weft_fn fn, void *arg)
{
    weft_spawn_opts o = { .pinned = thread >= 0 && (unsigned)thread < workers, .thread = thread };
    WT_ASSERT_EQ(weft_spawn_ex(s, fn, arg, &o), WEFT_OK);
}

static void pause_ns(long ns)
{
    struct timespec ts = { 0, ns };
    nanosleep(&ts, NULL);
}

/* ---- ping-pong: sizes, capacities, placements ------------------------------ */

typedef struct pingpong {
    weft_chan *ping, *pong;
    size_t size;
    unsigned rounds;
    atomic_uint bad;
} pingpong;

static void fill(unsigned char *b, size_t n, unsigned v)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(v * 31u + i);
}

static bool holds(const unsigned char *b, size_t n, unsigned v)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(v * 31u + i))
            return false;
    return true;
}

static void pinger(void *arg)
{
    pingpong *p = arg;
    unsigned char b[24];
    for (unsigned i = 0; i < p->rounds; i++) {
        fill(b, p->size, 2 * i);
        if (weft_chan_send(p->ping, b) != WEFT_OK || weft_chan_recv(p->pong, b) != WEFT_OK ||
            !holds(b, p->size, 2 * i + 1))
            atomic_fetch_add(&p->bad, 1);
    }
}

static void ponger(void *arg)
{
    pingpong *p = arg;
    unsigned char b[24];
    for (unsigned i = 0; i < p->rounds; i++) {
        if (weft_chan_recv(p->ping, b) != WEFT_OK || !holds(b, p->size, 2 * i))
            atomic_fetch_add(&p->bad, 1);
        fill(b, p->size, 2 * i + 1);
        if (weft_chan_send(p->pong, b) != WEFT_OK)
            atomic_fetch_add(&p->bad, 1);
    }
}

static void *ponger_thread(void *arg)
{
    ponger(arg);
    return NULL;
}

WT_TEST(chan_handoff, pingpong_sizes_capacities_placements, .timeout = 600)
{
    static const unsigned workers[] = { 0, 1, 2, 8 };
    static const size_t sizes[] = { 1, 8, 24 };
    for (unsigned k = 0; k < 4; k++)
        for (unsigned spin = 0; spin < 2; spin++)
            for (unsigned z = 0; z < 3; z++)
                for (size_t cap = 0; cap < 2; cap++)
                    for (unsigned thread_peer = 0; thread_peer < 2; thread_peer++) {
                        weft_sched *s = sched_with(workers[k], spin ? 50 : WEFT_SPIN_NONE);
                        pingpong p = { .size = sizes[z], .rounds = thread_peer ? 300 : 3000 };
                        WT_ASSERT_EQ(weft_chan_create(&p.ping, p.size, cap), WEFT_OK);
                        WT_ASSERT_EQ(weft_chan_create(&p.pong, p.size, cap), WEFT_OK);
                        pthread_t t;
                        if (thread_peer)
                            WT_ASSERT_EQ(pthread_create(&t, NULL, ponger_thread, &p), 0);
                        else
                            spawn_on(s, workers[k], 1, ponger, &p);
                        spawn_on(s, workers[k], 0, pinger, &p);
                        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);   /* 0 workers: runs both tasks */
                        if (thread_peer)
                            pthread_join(t, NULL);
                        WT_ASSERT(atomic_load(&p.bad) == 0,
                                  "%u bad exchanges: %u workers, size %zu, capacity %zu, %s peer",
                                  atomic_load(&p.bad), workers[k], p.size, cap,
                                  thread_peer ? "thread" : "task");
                        weft_chan_destroy(p.ping);
                        weft_chan_destroy(p.pong);
                        sched_done(s, workers[k]);
                    }
}

/* ---- close at any moment of a wait ------------------------------------------ */

typedef struct closing {
    weft_chan *ch;
    atomic_int started, rc;
} closing;

static void close_recv(void *arg)
{
    closing *c = arg;
    uint64_t v;
    atomic_store(&c->started, 1);
    atomic_store(&c->rc, weft_chan_recv(c->ch, &v));
}

static void close_send(void *arg)
{
    closing *c = arg;
    uint64_t v = 7;
    atomic_store(&c->started, 1);
    atomic_store(&c->rc, weft_chan_send(c->ch, &v));
}

/* Closes c's channel once its task has started, a moment later. */
static void close_later(closing *c, unsigned i)
{
    while (!atomic_load(&c->started))
        sched_yield();
    if (i % 3)
        pause_ns((long)(i % 7) * 2000);
    weft_chan_close(c->ch);
}

typedef struct closer_arg { closing *c; unsigned i; } closer_arg;

static void *closer_thread(void *arg)
{
    closer_arg *a = arg;
    close_later(a->c, a->i);
    return NULL;
}

WT_TEST(chan_handoff, close_ends_waits_at_any_moment, .timeout = 300)
{
    static const unsigned workers[] = { 0, 1, 2, 8 };
    for (unsigned k = 0; k < 4; k++) {
        weft_sched *s = sched_with(workers[k], 5);   /* short: closes land in both phases */
        for (unsigned i = 0; i < 600; i++) {
            closing c = { .rc = 1 };
            WT_ASSERT_EQ(weft_chan_create(&c.ch, sizeof(uint64_t), 0), WEFT_OK);
            spawn_on(s, workers[k], workers[k] ? (int)(i % workers[k]) : -1,
                     i & 1 ? close_send : close_recv, &c);
            if (workers[k]) {
                close_later(&c, i);
                WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            } else {
                /* 0 workers: this thread runs the task in its wait, and
                 * another closes. */
                closer_arg a = { &c, i };
                pthread_t t;
                WT_ASSERT_EQ(pthread_create(&t, NULL, closer_thread, &a), 0);
                WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                pthread_join(t, NULL);
            }
            WT_ASSERT_EQ(atomic_load(&c.rc), WEFT_ECLOSED);
            weft_chan_destroy(c.ch);
        }
        sched_done(s, workers[k]);
    }
}

/* ---- destroyed as soon as a call returns ------------------------------------ */

/* One element over a fresh rendezvous channel per round; whoever's call
 * returns second in the usual order (the sender when the receiver waited,
 * the receiver when the sender did) destroys the channel at once. */
typedef struct oneshot {
    weft_chan *ch;
    size_t size;
    bool receiver_destroys;
    atomic_uint got;
} oneshot;

static void oneshot_recv(void *arg)
{
    oneshot *o = arg;
    unsigned char b[24];
    if (weft_chan_recv(o->ch, b) == WEFT_OK && holds(b, o->size, 5))
        atomic_fetch_add(&o->got, 1);
    if (o->receiver_destroys)
        weft_chan_destroy(o->ch);
}

static void oneshot_send(oneshot *o)
{
    unsigned char b[24];
    fill(b, o->size, 5);
    WT_ASSERT_EQ(weft_chan_send(o->ch, b), WEFT_OK);
    if (!o->receiver_destroys)
        weft_chan_destroy(o->ch);
}

static void oneshot_send_task(void *arg)
{
    oneshot_send(arg);
}

static void *oneshot_send_thread(void *arg)
{
    oneshot_send(arg);
    return NULL;
}

/* Holds every third popped waiter for 20 us before it reads what it was
 * handed: the window in which the other side may destroy the channel. */
extern void (*weft__chan_popped_pause)(void);
static atomic_uint popped;
static void hold_popped(void)
{
    if (atomic_fetch_add(&popped, 1) % 3 == 0)
        pause_ns(20000);
}

/* Spins that fail halve the learnt budget (worker.c), and on a loaded
 * machine they fail until none is left: waits in place would then not
 * arise by themselves. The seam keeps the budget. */
extern bool weft__spin_keep_budget;

WT_TEST(chan_handoff, destroyed_as_soon_as_a_call_returns, .timeout = 300)
{
    weft__chan_popped_pause = hold_popped;
    weft__spin_keep_budget = true;
    static const unsigned workers[] = { 0, 1, 2, 8 };
    for (unsigned k = 0; k < 4; k++) {
        weft_sched *s = sched_with(workers[k], 50);
        for (unsigned i = 0; i < 3000; i++) {
            oneshot o = { .size = i % 3 ? 8 : 24, .receiver_destroys = (i & 1) != 0 };
            WT_ASSERT_EQ(weft_chan_create(&o.ch, o.size, 0), WEFT_OK);
            bool receiver_first = (i & 2) != 0;
            bool sender_is_thread = (i & 4) != 0;
            if (receiver_first)
                spawn_on(s, workers[k], 1, oneshot_recv, &o);
            pthread_t t;
            if (sender_is_thread)
                WT_ASSERT_EQ(pthread_create(&t, NULL, oneshot_send_thread, &o), 0);
            else
                spawn_on(s, workers[k], 0, oneshot_send_task, &o);
            if (!receiver_first)
                spawn_on(s, workers[k], 1, oneshot_recv, &o);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);   /* 0 workers: runs the tasks */
            if (sender_is_thread)
                pthread_join(t, NULL);
            WT_ASSERT_EQ(atomic_load(&o.got), 1);
        }
        sched_done(s, workers[k]);
    }
    weft__chan_popped_pause = NULL;
    weft__spin_keep_budget = false;
    WT_ASSERT(atomic_load(&popped) > 0, "no waiter was handed over while it waited in place");
}

/* ---- a waiting task gives its worker to other work --------------------------- */

/* spin_us is 1 s: a waiting task that held on to its worker while the
 * task that would answer it sat queued for that worker would cost a
 * second a round: 50-200 s a case, past the test's timeout. */
enum { BY_GLOBAL, BY_PINNED, BY_INBOX, BY_TIMER };

typedef struct giveway {
    weft_sched *s;
    unsigned workers, how;
    weft_chan *ch;
    weft_event woken;
    atomic_int waiting;
    atomic_uint got, lost, finished;
} giveway;

static void gw_answer(void *arg)
{
    giveway *g = arg;
    uint64_t v = 11;
    WT_ASSERT_EQ(weft_chan_send(g->ch, &v), WEFT_OK);
    if (g->how == BY_GLOBAL || g->how == BY_PINNED)
        atomic_fetch_add(&g->finished, 1);
}

static void gw_sleeper(void *arg)
{
    giveway *g = arg;
    if (g->how == BY_TIMER)
        WT_ASSERT_EQ(weft_sleep(200000), WEFT_OK);
    else
        WT_ASSERT_EQ(weft_event_wait(&g->woken), WEFT_OK);
    gw_answer(g);
    atomic_fetch_add(&g->finished, 1);
}

static void gw_waiter(void *arg)
{
    giveway *g = arg;
    uint64_t v = 0;
    atomic_store(&g->waiting, 1);
    if (weft_chan_recv(g->ch, &v) == WEFT_OK && v == 11)
        atomic_fetch_add(&g->got, 1);
    else
        atomic_fetch_add(&g->lost, 1);
    atomic_fetch_add(&g->finished, 1);
}

WT_TEST(chan_handoff, a_waiting_task_gives_its_worker_to_other_work, .timeout = 120)
{
    static const char *const names[] = { "global task", "pinned task", "fiber woken", "due timer" };
    unsigned rounds = (unsigned)wt_scaled(200, 50);   /* a worker held would cost 50 s a case: past the timeout */
    for (unsigned how = BY_GLOBAL; how <= BY_TIMER; how++)
        for (unsigned workers = 1; workers <= 2; workers++) {
            giveway g = { .s = sched_with(workers, 1000000), .workers = workers, .how = how };
            int last = (int)workers - 1;
            for (unsigned i = 0; i < rounds; i++) {
                WT_ASSERT_EQ(weft_chan_create(&g.ch, sizeof(uint64_t), 0), WEFT_OK);
                weft_event_init(&g.woken, false, false);
                atomic_store(&g.waiting, 0);
                if (how == BY_INBOX || how == BY_TIMER)
                    spawn_on(g.s, workers, last, gw_sleeper, &g);   /* blocks first, on the same worker */
                spawn_on(g.s, workers, last, gw_waiter, &g);
                while (!atomic_load(&g.waiting))
                    ;
                pause_ns(20000);   /* well into its wait */
                if (how == BY_GLOBAL) {
                    WT_ASSERT_EQ(weft_spawn(g.s, gw_answer, &g), WEFT_OK);   /* 2 workers: either may take it */
                } else if (how == BY_PINNED) {
                    spawn_on(g.s, workers, last, gw_answer, &g);
                } else if (how == BY_INBOX) {
                    weft_event_signal(&g.woken);
                }
                /* Not weft_sched_wait_idle: it returns when a worker parks,
                 * after its spin_us of spinning. */
                while (atomic_load(&g.got) + atomic_load(&g.lost) < i + 1)
                    sched_yield();
                while (atomic_load(&g.finished) < 2 * (i + 1))   /* waiter and answerer */
                    sched_yield();
                weft_chan_destroy(g.ch);
                weft_event_destroy(&g.woken);
            }
            WT_ASSERT(atomic_load(&g.got) == rounds, "%s, %u workers: %u of %u received", names[how],
                      workers, atomic_load(&g.got), rounds);
            WT_ASSERT_EQ(weft_sched_destroy(g.s), WEFT_OK);
        }
}
