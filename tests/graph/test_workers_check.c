/* Correctness at 1, 2 and 8 workers (issue 33: what the Windows build
 * shows under Wine, where timings say nothing): fibers switching through
 * a channel ping-pong, a spawn-heavy fib whose every call waits for its
 * spawned child, and a graph whose tasks block on each other (consumers
 * waiting on a channel that producers added after them fill, and a task
 * waiting on an event that a later task signals). Results are checked;
 * nothing is timed. Portable C: built on every platform. */
#include <stdatomic.h>
#include <stdint.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"

/* ---- fibers switching: a ping-pong of two tasks over two channels ------------ */

#define ROUNDS 2000

typedef struct {
    weft_chan *ping, *pong;
    atomic_long sum;
} pingpong;

static void pinger(void *arg)
{
    pingpong *p = arg;
    for (long i = 0; i < ROUNDS; i++) {
        long back = -1;
        WT_ASSERT_EQ(weft_chan_send(p->ping, &i), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_recv(p->pong, &back), WEFT_OK);
        WT_ASSERT_EQ(back, i * 2);
        atomic_fetch_add(&p->sum, back);
    }
}

static void ponger(void *arg)
{
    pingpong *p = arg;
    for (long i = 0; i < ROUNDS; i++) {
        long v = -1;
        WT_ASSERT_EQ(weft_chan_recv(p->ping, &v), WEFT_OK);
        WT_ASSERT_EQ(v, i);
        v *= 2;
        WT_ASSERT_EQ(weft_chan_send(p->pong, &v), WEFT_OK);
    }
}

WT_TEST(workers_check, channel_pingpong, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        pingpong p = { .sum = 0 };
        WT_ASSERT_EQ(weft_chan_create(&p.ping, sizeof(long), 0), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_create(&p.pong, sizeof(long), 0), WEFT_OK);
        for (int k = 0; k < 4; k++) {   /* four pairs at once */
            WT_ASSERT_EQ(weft_spawn(s, ponger, &p), WEFT_OK);
            WT_ASSERT_EQ(weft_spawn(s, pinger, &p), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        }
        WT_ASSERT_EQ(atomic_load(&p.sum), 4L * ROUNDS * (ROUNDS - 1));
        weft_chan_destroy(p.ping);
        weft_chan_destroy(p.pong);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- a spawn-heavy fib: every call spawns one child and waits for it ---------- */

typedef struct {
    weft_sched *s;
    int n;
    uint64_t out;
    weft_waitgroup *done;
} fib_call;

static uint64_t fib_seq(int n)
{
    return n < 2 ? (uint64_t)n : fib_seq(n - 1) + fib_seq(n - 2);
}

static void fib_task(void *arg)
{
    fib_call *c = arg;
    if (c->n < 2) {
        c->out = (uint64_t)c->n;
    } else {
        weft_waitgroup wg;
        weft_waitgroup_init(&wg, 1);
        fib_call child = { c->s, c->n - 1, 0, &wg };
        WT_ASSERT_EQ(weft_spawn(c->s, fib_task, &child), WEFT_OK);
        fib_call self = { c->s, c->n - 2, 0, NULL };
        fib_task(&self);
        WT_ASSERT_EQ(weft_waitgroup_wait(&wg), WEFT_OK);   /* blocks while the child runs */
        weft_waitgroup_destroy(&wg);
        c->out = child.out + self.out;
    }
    if (c->done)
        weft_waitgroup_done(c->done);
}

WT_TEST(workers_check, spawn_heavy_fib, .timeout = 300)
{
    uint64_t scaled = wt_scaled(20, 14);
    int n = scaled > 20 ? 20 : (int)scaled;
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        weft_waitgroup wg;
        weft_waitgroup_init(&wg, 1);
        fib_call top = { s, n, 0, &wg };
        WT_ASSERT_EQ(weft_spawn(s, fib_task, &top), WEFT_OK);
        WT_ASSERT_EQ(weft_waitgroup_wait(&wg), WEFT_OK);
        weft_waitgroup_destroy(&wg);
        WT_ASSERT(top.out == fib_seq(n), "workers %u: fib(%d) = %llu", w, n, (unsigned long long)top.out);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- a graph whose tasks block on each other ------------------------------------ */

#define PAIRS 32

typedef struct {
    weft_chan *ch;
    weft_event ev;
    atomic_long got;
    atomic_int signalled_first;
} blockers;

static void consumer(void *arg)
{
    blockers *b = arg;
    long v = 0;
    WT_ASSERT_EQ(weft_chan_recv(b->ch, &v), WEFT_OK);   /* a producer added later fills it */
    atomic_fetch_add(&b->got, v);
}

static void producer(void *arg)
{
    blockers *b = arg;
    static atomic_long next;
    long v = atomic_fetch_add(&next, 1) % PAIRS + 1;
    WT_ASSERT_EQ(weft_chan_send(b->ch, &v), WEFT_OK);
}

static void event_waiter(void *arg)
{
    blockers *b = arg;
    WT_ASSERT_EQ(weft_event_wait(&b->ev), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&b->signalled_first), 1);
}

static void event_signaller(void *arg)
{
    blockers *b = arg;
    atomic_store(&b->signalled_first, 1);
    weft_event_signal(&b->ev);
}

WT_TEST(workers_check, graph_with_blocking_tasks, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int run = 0; run < 3; run++) {
            blockers b = { .got = 0, .signalled_first = 0 };
            WT_ASSERT_EQ(weft_chan_create(&b.ch, sizeof(long), 0), WEFT_OK);
            weft_event_init(&b.ev, true, false);
            weft_graph *g = NULL;
            weft_task *t = NULL;
            WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
            /* Waiters first, with no edges: on one worker they start and
             * block before any producer or the signaller runs. */
            WT_ASSERT_EQ(weft_graph_add_task(g, event_waiter, &b, &t), WEFT_OK);
            for (int i = 0; i < PAIRS; i++)
                WT_ASSERT_EQ(weft_graph_add_task(g, consumer, &b, &t), WEFT_OK);
            for (int i = 0; i < PAIRS; i++)
                WT_ASSERT_EQ(weft_graph_add_task(g, producer, &b, &t), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_add_task(g, event_signaller, &b, &t), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            WT_ASSERT(atomic_load(&b.got) == (long)PAIRS * (PAIRS + 1) / 2,
                      "workers %u: the consumers got %ld", w, atomic_load(&b.got));
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            weft_event_destroy(&b.ev);
            weft_chan_destroy(b.ch);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}
