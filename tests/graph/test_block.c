/* Block anywhere: tasks that block on each other in a valid order always
 * finish, whatever weft holds for later (the next root of a graph, a
 * continuation, the rest of a parallel loop, the LIFO slot, a nested
 * run). Written from the header alone: every case is a dependency
 * pattern a user may write, run from a task, a bound thread and a plain
 * thread at 0, 1, 2 and 8 workers (8 oversubscribes the 2 cores). A
 * regression hangs: the short timeouts let the watchdog print the stall
 * report and fail the test fast.
 *
 * Also here: the number of fibers stays bounded by what the work needs
 * (a storm of yields, recursive waits at 0 workers, FIFO-spawned
 * recursion), and a task's stack overflow on a worker is reported. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "weft.h"
#include "wtest.h"

/* ---- where a scenario runs ------------------------------------------------ */

enum where { IN_TASK, BOUND, PLAIN };

typedef int (*scenario_fn)(weft_sched *s, void *arg);   /* 0 or a failing line */

struct in_task {
    scenario_fn fn;
    void *arg;
    weft_sched *s;
    int rc;
    weft_event done;
};

static void in_task_entry(void *p)
{
    struct in_task *t = p;
    t->rc = t->fn(t->s, t->arg);
    weft_event_signal(&t->done);
}

/* Runs fn on a scheduler of `workers` workers, from where. Returns fn's
 * result, or -1 if the combination is not meaningful (tasks need a
 * worker or a bound thread; a plain thread cannot wait with 0 workers). */
static int run_at(unsigned workers, enum where where, scenario_fn fn, void *arg)
{
    if (workers == 0 && where != BOUND)
        return -1;
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    int rc;
    if (where == BOUND) {
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        rc = fn(s, arg);
        weft_sched_unbind();
    } else if (where == PLAIN) {
        rc = fn(s, arg);
    } else {
        struct in_task t = { .fn = fn, .arg = arg, .s = s, .rc = -2 };
        weft_event_init(&t.done, true, false);
        WT_ASSERT_EQ(weft_spawn(s, in_task_entry, &t), WEFT_OK);
        WT_ASSERT_EQ(weft_event_wait(&t.done), WEFT_OK);
        weft_event_destroy(&t.done);
        rc = t.rc;
    }
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    return rc;
}

static const unsigned counts[] = { 0, 1, 2, 8 };
static const char *const where_name[] = { "task", "bound thread", "plain thread" };

/* fn at every worker count, from every kind of caller. */
static void run_everywhere(scenario_fn fn, void *arg, const char *what)
{
    for (unsigned i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        for (int where = IN_TASK; where <= PLAIN; where++) {
            int rc = run_at(counts[i], (enum where)where, fn, arg);
            WT_ASSERT(rc <= 0, "%s: failed at line %d (%u workers, from a %s)", what, rc,
                      counts[i], where_name[where]);
        }
    }
}

#define CHECK(cond) do { if (!(cond)) return __LINE__; } while (0)

/* ---- graphs --------------------------------------------------------------- */

/* Two tasks with no edge: a consumer receiving on a rendezvous channel and
 * a producer sending to it. The consumer is added first (the first root),
 * so it is the one whose visit comes before the producer's. */
struct pair { weft_chan *ch; int got; };

static void consumer(void *p)
{
    struct pair *x = p;
    int v = 0;
    if (weft_chan_recv(x->ch, &v) == WEFT_OK)
        x->got = v;
}

static void producer(void *p)
{
    struct pair *x = p;
    int v = 42;
    weft_chan_send(x->ch, &v);
}

static int graph_rendezvous(weft_sched *s, void *unused)
{
    (void)unused;
    struct pair x = { 0 };
    CHECK(weft_chan_create(&x.ch, sizeof(int), 0) == WEFT_OK);
    weft_graph *g;
    CHECK(weft_graph_create(&g) == WEFT_OK);
    CHECK(weft_graph_add(g, consumer, &x) != NULL);
    CHECK(weft_graph_add(g, producer, &x) != NULL);
    for (int run = 0; run < 3; run++) {
        x.got = 0;
        CHECK(weft_graph_run(s, g) == WEFT_OK);
        CHECK(weft_graph_wait(g) == WEFT_OK);
        CHECK(x.got == 42);
    }
    weft_graph_destroy(g);
    weft_chan_destroy(x.ch);
    return 0;
}

WT_TEST(block, graph_roots_rendezvous_on_a_channel, .timeout = 60)
{
    run_everywhere(graph_rendezvous, NULL, "consumer and producer roots");
}

/* n independent tasks; task i waits on an event that task i + 1 signals
 * (the last one waits on nothing). Only an order that starts the tasks
 * from the end can finish it, whatever order weft visits roots in. */
#define NCHAIN 100
struct evchain { weft_event ev[NCHAIN]; struct evtask { struct evchain *c; int i; } t[NCHAIN]; atomic_int ran; };

static void evchain_task(void *p)
{
    struct evtask *t = p;
    if (t->i + 1 < NCHAIN)
        weft_event_wait(&t->c->ev[t->i]);
    if (t->i > 0)
        weft_event_signal(&t->c->ev[t->i - 1]);
    atomic_fetch_add(&t->c->ran, 1);
}

static int graph_event_chain(weft_sched *s, void *unused)
{
    (void)unused;
    struct evchain *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    weft_graph *g;
    CHECK(weft_graph_create(&g) == WEFT_OK);
    for (int i = 0; i < NCHAIN; i++) {
        weft_event_init(&c->ev[i], false, false);
        c->t[i] = (struct evtask){ c, i };
        CHECK(weft_graph_add(g, evchain_task, &c->t[i]) != NULL);
    }
    CHECK(weft_graph_run(s, g) == WEFT_OK);
    CHECK(weft_graph_wait(g) == WEFT_OK);
    CHECK(atomic_load(&c->ran) == NCHAIN);
    weft_graph_destroy(g);
    for (int i = 0; i < NCHAIN; i++)
        weft_event_destroy(&c->ev[i]);
    free(c);
    return 0;
}

WT_TEST(block, graph_roots_wait_on_the_next_root, .timeout = 60)
{
    run_everywhere(graph_event_chain, NULL, "root i waits for root i + 1");
}

/* A rendezvous of n: each task counts itself in and waits until all n
 * have; the last one in opens the gate. It finishes only if all n are in
 * flight at once, so nothing may hold one of them back behind another. */
struct gate { atomic_int in; int n; weft_event open; };

static void gate_init(struct gate *g, int n)
{
    atomic_init(&g->in, 0);
    g->n = n;
    weft_event_init(&g->open, true, false);
}

static void gate_pass(struct gate *g)
{
    if (atomic_fetch_add(&g->in, 1) + 1 == g->n)
        weft_event_signal(&g->open);
    else
        weft_event_wait(&g->open);
}

static void gate_task(void *p)
{
    gate_pass(p);
}

static int graph_all_in_flight(weft_sched *s, void *unused)
{
    (void)unused;
    struct gate gt;
    gate_init(&gt, 100);
    weft_graph *g;
    CHECK(weft_graph_create(&g) == WEFT_OK);
    weft_task *join = weft_graph_add(g, NULL, NULL);
    CHECK(join != NULL);
    for (int i = 0; i < 100; i++) {
        weft_task *t = weft_graph_add(g, gate_task, &gt);
        CHECK(t != NULL);
        CHECK(weft_task_precede(t, join) == WEFT_OK);
    }
    CHECK(weft_graph_run(s, g) == WEFT_OK);
    CHECK(weft_graph_wait(g) == WEFT_OK);
    CHECK(atomic_load(&gt.in) == 100);
    weft_graph_destroy(g);
    weft_event_destroy(&gt.open);
    return 0;
}

WT_TEST(block, graph_roots_all_in_flight_at_once, .timeout = 60)
{
    run_everywhere(graph_all_in_flight, NULL, "100 roots in one rendezvous");
}

/* Successors that become ready together: a fans out to b and c; b (the
 * one visited next on a's fiber) waits for c. And a chain a -> b whose b
 * waits on an independent task d. */
struct fan { weft_event c_ran, d_ran; atomic_int ran; };

static void fan_b(void *p) { struct fan *f = p; weft_event_wait(&f->c_ran); atomic_fetch_add(&f->ran, 1); }
static void fan_c(void *p) { struct fan *f = p; weft_event_signal(&f->c_ran); atomic_fetch_add(&f->ran, 1); }
static void fan_e(void *p) { struct fan *f = p; weft_event_wait(&f->d_ran); atomic_fetch_add(&f->ran, 1); }
static void fan_d(void *p) { struct fan *f = p; weft_event_signal(&f->d_ran); atomic_fetch_add(&f->ran, 1); }
static void fan_a(void *p) { struct fan *f = p; atomic_fetch_add(&f->ran, 1); }

static int graph_successors_block(weft_sched *s, void *unused)
{
    (void)unused;
    struct fan f;
    weft_event_init(&f.c_ran, true, false);
    weft_event_init(&f.d_ran, true, false);
    atomic_init(&f.ran, 0);
    weft_graph *g;
    CHECK(weft_graph_create(&g) == WEFT_OK);
    weft_task *a = weft_graph_add(g, fan_a, &f);
    weft_task *b = weft_graph_add(g, fan_b, &f);
    weft_task *c = weft_graph_add(g, fan_c, &f);
    weft_task *a2 = weft_graph_add(g, fan_a, &f);
    weft_task *e = weft_graph_add(g, fan_e, &f);
    weft_task *d = weft_graph_add(g, fan_d, &f);
    CHECK(a && b && c && a2 && e && d);
    CHECK(weft_task_precede(a, b) == WEFT_OK);
    CHECK(weft_task_precede(a, c) == WEFT_OK);
    CHECK(weft_task_precede(a2, e) == WEFT_OK);
    (void)d;   /* a root of its own */
    CHECK(weft_graph_run(s, g) == WEFT_OK);
    CHECK(weft_graph_wait(g) == WEFT_OK);
    CHECK(atomic_load(&f.ran) == 6);
    weft_graph_destroy(g);
    weft_event_destroy(&f.c_ran);
    weft_event_destroy(&f.d_ran);
    return 0;
}

WT_TEST(block, graph_successors_wait_on_each_other, .timeout = 60)
{
    run_everywhere(graph_successors_block, NULL, "successors waiting on siblings");
}

/* A nested run: outer tasks A and B; A runs an inner graph {X, Y} and
 * waits for it. X waits for B, B waits for Y: the only order is Y, B, X. */
struct nest { weft_sched *s; weft_graph *inner; weft_event b_ran, y_ran; atomic_int ran; int inner_rc; };

static void nest_x(void *p) { struct nest *n = p; weft_event_wait(&n->b_ran); atomic_fetch_add(&n->ran, 1); }
static void nest_y(void *p) { struct nest *n = p; weft_event_signal(&n->y_ran); atomic_fetch_add(&n->ran, 1); }
static void nest_b(void *p) { struct nest *n = p; weft_event_wait(&n->y_ran); weft_event_signal(&n->b_ran); atomic_fetch_add(&n->ran, 1); }
static void nest_a(void *p)
{
    struct nest *n = p;
    n->inner_rc = weft_graph_run(n->s, n->inner);
    if (n->inner_rc == WEFT_OK)
        n->inner_rc = weft_graph_wait(n->inner);
    atomic_fetch_add(&n->ran, 1);
}

static int graph_nested(weft_sched *s, void *unused)
{
    (void)unused;
    struct nest n = { .s = s, .inner_rc = -100 };
    weft_event_init(&n.b_ran, true, false);
    weft_event_init(&n.y_ran, true, false);
    atomic_init(&n.ran, 0);
    weft_graph *g;
    CHECK(weft_graph_create(&g) == WEFT_OK);
    CHECK(weft_graph_create(&n.inner) == WEFT_OK);
    CHECK(weft_graph_add(n.inner, nest_x, &n) != NULL);
    CHECK(weft_graph_add(n.inner, nest_y, &n) != NULL);
    CHECK(weft_graph_add(g, nest_a, &n) != NULL);
    CHECK(weft_graph_add(g, nest_b, &n) != NULL);
    CHECK(weft_graph_run(s, g) == WEFT_OK);
    CHECK(weft_graph_wait(g) == WEFT_OK);
    CHECK(n.inner_rc == WEFT_OK);
    CHECK(atomic_load(&n.ran) == 4);
    weft_graph_destroy(g);
    weft_graph_destroy(n.inner);
    weft_event_destroy(&n.b_ran);
    weft_event_destroy(&n.y_ran);
    return 0;
}

WT_TEST(block, nested_graph_tasks_wait_on_outer_tasks, .timeout = 60)
{
    run_everywhere(graph_nested, NULL, "nested run");
}

/* ---- parallel loops --------------------------------------------------------- */

static void gate_body(size_t b, size_t e, void *p)
{
    for (size_t i = b; i < e; i++)
        gate_pass(p);
}

static void gate_reduce(size_t b, size_t e, void *partial, void *p)
{
    for (size_t i = b; i < e; i++) {
        gate_pass(p);
        *(long *)partial += (long)i;
    }
}

static void add_long(void *into, const void *from, void *arg)
{
    (void)arg;
    *(long *)into += *(const long *)from;
}

/* [0, 2) with grain 1 where chunk 0 waits for chunk 1, then 64 chunks
 * that must all be in flight at once. */
static int loops_all_in_flight(weft_sched *s, void *unused)
{
    (void)unused;
    static const size_t sizes[] = { 2, 64 };
    for (unsigned k = 0; k < 2; k++) {
        size_t n = sizes[k];
        struct gate gt;
        gate_init(&gt, (int)n);
        CHECK(weft_parallel_for(s, 0, n, 1, gate_body, &gt) == WEFT_OK);
        CHECK(atomic_load(&gt.in) == (int)n);
        weft_event_destroy(&gt.open);

        gate_init(&gt, (int)n);
        long sum = -1, zero = 0;
        CHECK(weft_parallel_reduce(s, 0, n, 1, &sum, sizeof sum, &zero, gate_reduce,
                                   add_long, &gt) == WEFT_OK);
        CHECK(sum == (long)(n * (n - 1) / 2));
        weft_event_destroy(&gt.open);
    }
    return 0;
}

WT_TEST(block, parallel_chunks_wait_on_later_chunks, .timeout = 60)
{
    run_everywhere(loops_all_in_flight, NULL, "parallel_for/reduce chunks in one rendezvous");
}

/* ---- the LIFO slot and plain spawns ----------------------------------------- */

struct lifo { weft_sched *s; struct gate gt; weft_waitgroup left; };

static void lifo_child(void *p)
{
    struct lifo *l = p;
    gate_pass(&l->gt);
    weft_waitgroup_done(&l->left);   /* out of the gate's event: it may go */
}

/* A task puts two children in its LIFO slot (the second displaces the
 * first) and then all three meet. */
static int lifo_slot_blocks(weft_sched *s, void *unused)
{
    (void)unused;
    if (weft_thread_worker_index() < 0 && weft_sched_workers(s) != 0)
        return 0;   /* the slot is a worker's: meaningful from a task */
    struct lifo l = { .s = s };
    gate_init(&l.gt, 3);
    weft_waitgroup_init(&l.left, 2);
    CHECK(weft_spawn_hint(s, lifo_child, &l, WEFT_HINT_NEXT) == WEFT_OK);
    CHECK(weft_spawn_hint(s, lifo_child, &l, WEFT_HINT_NEXT) == WEFT_OK);
    gate_pass(&l.gt);
    CHECK(atomic_load(&l.gt.in) == 3);
    /* A child woken by the gate may still be inside its wait on the
     * event: destroy it only once both have left. */
    CHECK(weft_waitgroup_wait(&l.left) == WEFT_OK);
    weft_waitgroup_destroy(&l.left);
    weft_event_destroy(&l.gt.open);
    return 0;
}

WT_TEST(block, lifo_slot_children_and_their_parent_meet, .timeout = 60)
{
    run_everywhere(lifo_slot_blocks, NULL, "LIFO slot rendezvous");
}

/* wait_until runs the waiter's own queued children inline: a child that
 * blocks there on a sibling suspends the waiter's fiber with it, and the
 * sibling still runs. (A child that waits for something its parent does
 * only after the wait returns would hang: the header says so; a parent
 * that must do that waits with a wait group, as below.) */
struct kids { struct gate gt; atomic_int done; weft_waitgroup wg; weft_event later; };

static void kid(void *p)
{
    struct kids *k = p;
    gate_pass(&k->gt);
    atomic_fetch_add(&k->done, 1);
}

static void kid_waits_for_parent(void *p)
{
    struct kids *k = p;
    weft_event_wait(&k->later);
    weft_waitgroup_done(&k->wg);
}

static bool kids_done(void *p)
{
    return atomic_load(&((struct kids *)p)->done) == 3;
}

static int wait_until_children_block(weft_sched *s, void *unused)
{
    (void)unused;
    if (weft_thread_worker_index() < 0 && weft_sched_workers(s) != 0)
        return 0;   /* beside workers a bound or plain thread only polls */
    struct kids k;
    gate_init(&k.gt, 3);
    atomic_init(&k.done, 0);
    for (int i = 0; i < 3; i++)
        CHECK(weft_spawn(s, kid, &k) == WEFT_OK);
    CHECK(weft_wait_until(kids_done, &k) == WEFT_OK);
    CHECK(atomic_load(&k.gt.in) == 3);
    weft_event_destroy(&k.gt.open);

    weft_waitgroup_init(&k.wg, 1);
    weft_event_init(&k.later, true, false);
    CHECK(weft_spawn(s, kid_waits_for_parent, &k) == WEFT_OK);
    weft_event_signal(&k.later);   /* after the spawn, before the wait */
    CHECK(weft_waitgroup_wait(&k.wg) == WEFT_OK);
    weft_waitgroup_destroy(&k.wg);
    weft_event_destroy(&k.later);
    return 0;
}

WT_TEST(block, wait_until_inline_children_block_on_siblings, .timeout = 60)
{
    run_everywhere(wait_until_children_block, NULL, "wait_until's inline children");
}

/* Sleeping graph roots overlap: 64 roots each sleep, in naps of 1 ms,
 * until all 64 have come in, counting how many sleep at once; all of them
 * must have been asleep together (none waited for another to wake). A
 * count, not a time: one fixed sleep of 20 ms each passed only while the
 * 64 started within 20 ms, which a loaded machine does not promise. A
 * root that sleeps on after SLEEPER_NAPS naps stops: had sleepers kept
 * others from starting, the peak stays below 64 and the test fails
 * instead of hanging. */
#define SLEEPER_NAPS 30000   /* 30 s at least: the 64 starting is not timed */
struct sleepers { atomic_int now, peak; };

static void sleeper(void *p)
{
    struct sleepers *z = p;
    int v = atomic_fetch_add(&z->now, 1) + 1;
    int peak = atomic_load(&z->peak);
    while (v > peak && !atomic_compare_exchange_weak(&z->peak, &peak, v))
        ;
    for (int nap = 0; nap < SLEEPER_NAPS && atomic_load(&z->peak) < 64; nap++)
        weft_sleep(1000 * 1000);
    atomic_fetch_sub(&z->now, 1);
}

static int graph_sleepers(weft_sched *s, void *unused)
{
    (void)unused;
    struct sleepers z;
    atomic_init(&z.now, 0);
    atomic_init(&z.peak, 0);
    weft_graph *g;
    CHECK(weft_graph_create(&g) == WEFT_OK);
    for (int i = 0; i < 64; i++)
        CHECK(weft_graph_add(g, sleeper, &z) != NULL);
    CHECK(weft_graph_run(s, g) == WEFT_OK);
    CHECK(weft_graph_wait(g) == WEFT_OK);
    weft_graph_destroy(g);
    return atomic_load(&z.peak) == 64 ? 0 : __LINE__;
}

WT_TEST(block, sleeping_graph_roots_all_sleep_at_once, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2)
        WT_ASSERT_EQ(run_at(w, PLAIN, graph_sleepers, NULL), 0);
    WT_ASSERT_EQ(run_at(0, BOUND, graph_sleepers, NULL), 0);
}

/* ---- fibers bounded by the work --------------------------------------------- */

static uint64_t fibers_created(weft_sched *s)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < weft_sched_workers(s); i++) {
        weft_worker_stats st;
        if (weft_sched_stats(s, i, &st) == WEFT_OK)
            n += st.fibers_created;
    }
    return n;
}

static void yield_once(void *p)
{
    weft_yield();
    atomic_fetch_add((atomic_int *)p, 1);
}

/* 40,000 tasks that each yield once: fibers are resumed before new tasks
 * start once they run short, so the storm needs a bounded number. */
WT_TEST(fibers, yield_storm_is_bounded, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        weft_config c;
        weft_config_init(&c);
        c.workers = wt_workers(w);
        weft_sched *s;
        WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        atomic_int ran;
        atomic_init(&ran, 0);
        int n = 40000;
        for (int i = 0; i < n; i++)
            WT_ASSERT_EQ(weft_spawn(s, yield_once, &ran), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), n);
        uint64_t peak = fibers_created(s);
        fprintf(stderr, "yield storm, %u workers: %llu fibers made by workers\n", w,
                (unsigned long long)peak);
        WT_ASSERT(peak <= 4096, "%llu fibers for %d yields at %u workers",
                  (unsigned long long)peak, n, w);
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

static void yield_often(void *p)
{
    for (int i = 0; i < 20; i++)
        weft_yield();
    atomic_fetch_add((atomic_int *)p, 1);
}

/* Shuffle mode draws between ready fibers and new tasks; short of fibers
 * it must still let fibers go first (found by a header-only tester: a
 * fiber per task, and quadratic time). */
WT_TEST(fibers, yield_storm_is_bounded_in_shuffle_mode, .timeout = 120)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    c.shuffle = true;
    c.seed = 1;
    weft_sched *s;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    atomic_int ran;
    atomic_init(&ran, 0);
    int n = (int)wt_scaled(4000, 500);
    for (int i = 0; i < n; i++)
        WT_ASSERT_EQ(weft_spawn(s, yield_often, &ran), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran), n);
    uint64_t peak = fibers_created(s);
    WT_ASSERT(peak <= 1024, "%llu fibers for %d yielding tasks in shuffle mode",
              (unsigned long long)peak, n);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

struct fib { int n; long result; atomic_bool done; weft_hint hint; };

static bool fib_done(void *p)
{
    return atomic_load(&((struct fib *)p)->done);
}

static void fib(void *p)
{
    struct fib *f = p;
    if (f->n < 2) {
        f->result = f->n;
    } else {
        struct fib a = { f->n - 1, 0, false, f->hint }, b = { f->n - 2, 0, false, f->hint };
        if (weft_spawn_hint(weft_sched_current(), fib, &a, f->hint) != WEFT_OK)
            fib(&a);
        fib(&b);
        weft_wait_until(fib_done, &a);
        f->result = a.result + b.result;
    }
    atomic_store(&f->done, true);
}

static long fib_seq(int n)
{
    long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        long t = a + b;
        a = b;
        b = t;
    }
    return a;
}

/* The README's fib, at 0 workers (the bound thread runs it) and with
 * every child spawned to the back of the global ring (breadth first). */
static void fib_case(unsigned workers, int n, weft_hint hint)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    weft_sched *s;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    struct fib f = { n, 0, false, hint };
    if (workers == 0) {
        fib(&f);
    } else {
        WT_ASSERT_EQ(weft_spawn(s, fib, &f), WEFT_OK);
        WT_ASSERT_EQ(weft_wait_until(fib_done, &f), WEFT_OK);
    }
    WT_ASSERT_EQ(f.result, fib_seq(n));
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(fibers, recursive_wait_until_at_0_workers, .timeout = 120)
{
    fib_case(0, 22, WEFT_HINT_NONE);
}

WT_TEST(fibers, breadth_first_recursion_completes, .timeout = 120)
{
    fib_case(0, 20, WEFT_HINT_YIELD);
    fib_case(1, 20, WEFT_HINT_YIELD);
    fib_case(2, 20, WEFT_HINT_YIELD);
}

/* ---- stack overflow on a worker ------------------------------------------------ */

/* Deep enough to pass any stack weft gives a task (2^30 frames of half
 * a kilobyte), bounded so that the compiler sees an end. */
static int recurse_deep(int *depth)
{
    volatile char pad[512];
    pad[0] = (char)*depth;
    if (++*depth > (1 << 30))
        return pad[0];
    return recurse_deep(depth) + pad[0];
}

static void overflow_task(void *p)
{
    int depth = 0;
    *(int *)p = recurse_deep(&depth);
}

static void overflow_child(void *arg)
{
    unsigned workers = (unsigned)(uintptr_t)arg;
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK)
        exit(3);
    static int sink;
    weft_spawn(s, overflow_task, &sink);
    weft_sched_wait_idle(s);
    exit(0);   /* not reached if the overflow is caught */
}

WT_TEST(fibers, worker_task_overflow_is_reported, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2) {
        char buf[4096];
        int st = wt_run_child(overflow_child, (void *)(uintptr_t)w, buf, sizeof buf);
        WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
                  "%u workers: status %#x, stderr: %s", w, st, buf);
        WT_ASSERT(strstr(buf, "weft: fiber stack overflow") != NULL,
                  "%u workers: no overflow message; stderr: %s", w, buf);
    }
}

/* The documented stack size is what a task gets: with 64 KiB stacks, a
 * task using 3/4 of it runs, one using 1.5 times it is reported (one
 * frame lands within the 64 KiB guard, as weft.h promises for frames up
 * to the guard's size; a bigger single frame could step over it). */
static void use_stack(void *p)
{
    size_t n = *(size_t *)p;
    volatile char *buf = __builtin_alloca(n);
    /* From the top down, as a stack grows: the first byte past the stack
     * lands in the guard below it. */
    for (size_t i = n; i-- > 0;)
        if (i % 4096 == 0 || i == n - 1)
            buf[i] = 1;
}

static void stack_child(void *arg)
{
    size_t use = (size_t)(uintptr_t)arg;
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    c.fiber_stack_size = 64 * 1024;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK)
        exit(3);
    weft_spawn(s, use_stack, &use);
    weft_sched_wait_idle(s);
    weft_sched_destroy(s);
    exit(0);
}

WT_TEST(fibers, task_stack_is_the_configured_size, .timeout = 60)
{
    char buf[4096];
    int st = wt_run_child(stack_child, (void *)(uintptr_t)(48 * 1024), buf, sizeof buf);
    WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "48 KiB of 64: status %#x, stderr: %s", st, buf);
    st = wt_run_child(stack_child, (void *)(uintptr_t)(96 * 1024), buf, sizeof buf);
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "96 KiB of 64: status %#x, stderr: %s", st, buf);
    WT_ASSERT(strstr(buf, "weft: fiber stack overflow") != NULL, "stderr: %s", buf);
}
