/* The profiler hooks (weft_config.observer), written from weft.h alone
 * (weft_observer) before the implementation, as a user reads them.
 * Helpers: tests/support/trace_util.h.
 *
 *  - observer_counts: the hooks balance and alternate per thread, name
 *    the tasks, and are copied at create;
 *  - observer_partial: any subset of hooks may be NULL, with tracing on
 *    at the same time.
 * Worker counts 0 (the test thread bound), 1, 2 and 8.
 *
 * Tasks and hooks never assert (a Criterion assert off the test's thread
 * is not safe): they count into fields the test thread checks after the
 * scheduler is destroyed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../support/trace_util.h"

/* ---- the observer hooks ------------------------------------------------------------------------ */

#define OBS_MAXT 64
#define OBS_MAXF 2048
#define OBS_G    20

static const char obs_thread_stack;   /* a thread's code before its first leave */

struct obs_fib {
    const void *f;
    int depth;
};

struct obs_thread {
    bool seen;
    pthread_t self;
    uint64_t begins, ends, leaves, enters, parks, unparks;
    int sw;                  /* 0: no switch yet, 1: last was a leave, 2: an enter */
    const void *cur, *left;
    int pk;                  /* 0: none yet, 1: parked, 2: unparked */
    int nfib;
    struct obs_fib fib[OBS_MAXF];
    uint64_t bad_alt, bad_leave_from, bad_enter_to, bad_nest, bad_park, bad_self, bad_full;
};

struct obs_state {
    struct obs_thread th[OBS_MAXT];
    atomic_ulong bad_tid, bad_ctx;
    atomic_ulong name_obs, name_late, name_null, name_other, fn_obs, fn_send, fn_recv;
    atomic_ulong name_g[OBS_G];
};

static struct obs_state *obs_cur;

static struct obs_thread *obs_th(int thread, void *ctx)
{
    struct obs_state *o = ctx;
    if (o != obs_cur) {
        atomic_fetch_add(&obs_cur->bad_ctx, 1);
        o = obs_cur;
    }
    if (thread < 0 || thread >= OBS_MAXT) {
        atomic_fetch_add(&o->bad_tid, 1);
        return NULL;
    }
    struct obs_thread *t = &o->th[thread];
    if (!t->seen) {
        t->seen = true;
        t->self = pthread_self();
        t->cur = &obs_thread_stack;
    } else if (!pthread_equal(t->self, pthread_self())) {
        t->bad_self++;
    }
    return t;
}

static struct obs_fib *obs_fib(struct obs_thread *t, const void *f)
{
    for (int i = 0; i < t->nfib; i++)
        if (t->fib[i].f == f)
            return &t->fib[i];
    if (t->nfib == OBS_MAXF) {
        t->bad_full++;
        return &t->fib[0];
    }
    t->fib[t->nfib] = (struct obs_fib){ f, 0 };
    return &t->fib[t->nfib++];
}

static void obs_send(void *p);
static void obs_recv(void *p);
static void obs_task(void *p);

static void h_task_begin(int thread, const char *name, weft_fn fn, void *ctx)
{
    struct obs_thread *t = obs_th(thread, ctx);
    if (!t)
        return;
    t->begins++;
    obs_fib(t, t->cur)->depth++;
    struct obs_state *o = obs_cur;
    if (!name)
        atomic_fetch_add(&o->name_null, 1);
    else if (strcmp(name, "obs") == 0)
        atomic_fetch_add(&o->name_obs, 1);
    else if (strcmp(name, "obs-late") == 0)
        atomic_fetch_add(&o->name_late, 1);
    else if (name[0] == 'o' && name[1] == 'g' && atoi(name + 2) >= 0 && atoi(name + 2) < OBS_G)
        atomic_fetch_add(&o->name_g[atoi(name + 2)], 1);
    else
        atomic_fetch_add(&o->name_other, 1);
    if (fn == obs_task)
        atomic_fetch_add(&o->fn_obs, 1);
    else if (fn == obs_send)
        atomic_fetch_add(&o->fn_send, 1);
    else if (fn == obs_recv)
        atomic_fetch_add(&o->fn_recv, 1);
}

static void h_task_end(int thread, void *ctx)
{
    struct obs_thread *t = obs_th(thread, ctx);
    if (!t)
        return;
    t->ends++;
    struct obs_fib *f = obs_fib(t, t->cur);
    if (f->depth == 0)
        t->bad_nest++;
    else
        f->depth--;
}

static void h_fiber_leave(int thread, const void *fiber, void *ctx)
{
    struct obs_thread *t = obs_th(thread, ctx);
    if (!t)
        return;
    t->leaves++;
    if (t->sw == 1)
        t->bad_alt++;
    else if (t->sw == 2 && fiber != t->cur)
        t->bad_leave_from++;
    if (t->sw == 0) {
        /* The first leave names the thread's own stack: what ran on it so
         * far ran on that fiber. */
        obs_fib(t, &obs_thread_stack)->f = fiber;
        t->cur = fiber;
    }
    t->left = fiber;
    t->sw = 1;
}

static void h_fiber_enter(int thread, const void *fiber, void *ctx)
{
    struct obs_thread *t = obs_th(thread, ctx);
    if (!t)
        return;
    t->enters++;
    if (t->sw != 1)
        t->bad_alt++;
    if (fiber == t->left)
        t->bad_enter_to++;
    t->cur = fiber;
    t->sw = 2;
}

static void h_park(int thread, void *ctx)
{
    struct obs_thread *t = obs_th(thread, ctx);
    if (!t)
        return;
    t->parks++;
    if (t->pk == 1)
        t->bad_park++;
    t->pk = 1;
}

static void h_unpark(int thread, void *ctx)
{
    struct obs_thread *t = obs_th(thread, ctx);
    if (!t)
        return;
    t->unparks++;
    if (t->pk != 1)
        t->bad_park++;
    t->pk = 2;
}

struct obs_work;
struct obs_pair {
    struct obs_work *w;
    int i;
};

struct obs_work {
    weft_waitgroup wg;
    weft_chan *ch[4];
    struct obs_pair pa[4];
};

static void obs_task(void *p)
{
    struct obs_work *w = p;
    static atomic_int k;
    if (atomic_fetch_add(&k, 1) % 4 == 0)
        weft_sleep(20 * US);
    weft_waitgroup_done(&w->wg);
}

static void obs_send(void *p)
{
    struct obs_pair *pa = p;
    for (int k = 0; k < 20; k++)
        weft_chan_send(pa->w->ch[pa->i], &k);
    weft_waitgroup_done(&pa->w->wg);
}

static void obs_recv(void *p)
{
    struct obs_pair *pa = p;
    for (int k = 0; k < 20; k++) {
        int v;
        weft_chan_recv(pa->w->ch[pa->i], &v);
    }
    weft_waitgroup_done(&pa->w->wg);
}

static void obs_graph_task(void *p)
{
    (void)p;
    busy_ns(1 * US);
}

WT_TEST(trace, observer_counts, .timeout = 300)
{
    enum { N = 200, P = 4, LATE_N = 5 };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        struct obs_state *o = calloc(1, sizeof *o);
        WT_ASSERT(o != NULL);
        obs_cur = o;
        weft_observer ob = { h_task_begin, h_task_end, h_fiber_enter, h_fiber_leave, h_park, h_unpark, o };
        weft_sched *s = sched_new(w, &ob);
        memset(&ob, 0, sizeof ob);   /* copied at create: this changes nothing */
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);

        struct obs_work *work = calloc(1, sizeof *work);
        weft_waitgroup_init(&work->wg, N + 2 * P);
        for (int i = 0; i < P; i++) {
            WT_ASSERT_EQ(weft_chan_create(&work->ch[i], sizeof(int), 0), WEFT_OK);
            work->pa[i].w = work;
            work->pa[i].i = i;
        }
        for (int i = 0; i < N; i++)
            WT_ASSERT_EQ(spawn_named(s, obs_task, work, "obs"), WEFT_OK);
        for (int i = 0; i < P; i++) {
            WT_ASSERT_EQ(weft_spawn(s, obs_send, &work->pa[i]), WEFT_OK);
            WT_ASSERT_EQ(weft_spawn(s, obs_recv, &work->pa[i]), WEFT_OK);
        }
        WT_ASSERT_EQ(weft_waitgroup_wait(&work->wg), WEFT_OK);

        weft_graph *g = NULL;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        for (int i = 0; i < OBS_G; i++) {
            weft_task *t = weft_graph_add(g, obs_graph_task, NULL);
            WT_ASSERT(t != NULL);
            char name[8];
            snprintf(name, sizeof name, "og%02d", i);
            weft_task_set_name(t, name);
        }
        for (int r = 0; r < 2; r++) {
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        }
        /* The workers park: waited for, not napped for 30 ms (a worker
         * still spinning then on a loaded machine left no park hook).
         * parks > wakeups: past its park count, not yet woken (no timers
         * or fd waits are left here). A worker that never parks is a
         * hang, caught by the test's timeout. */
        for (bool asleep = w == 0; !asleep; nap_ns(20 * US)) {
            asleep = true;
            for (unsigned i = 0; i < w; i++) {
                weft_worker_stats st;
                WT_ASSERT_EQ(weft_sched_stats(s, i, &st), WEFT_OK);
                asleep = asleep && st.parks > st.wakeups;
            }
        }
        weft_waitgroup_add(&work->wg, LATE_N);
        for (int i = 0; i < LATE_N; i++)
            WT_ASSERT_EQ(spawn_named(s, obs_task, work, "obs-late"), WEFT_OK);
        WT_ASSERT_EQ(weft_waitgroup_wait(&work->wg), WEFT_OK);
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);   /* joins the workers: their records are final */

        uint64_t begins = 0, ends = 0, parks = 0, leaves = 0;
        for (int i = 0; i < OBS_MAXT; i++) {
            struct obs_thread *t = &o->th[i];
            if (!t->seen)
                continue;
            WT_ASSERT(i < (int)(w ? w : 1), "%u workers: hooks called with thread %d", w, i);
            WT_ASSERT(t->bad_self == 0, "%u workers: thread %d's hooks ran on %" PRIu64 " other pthreads", w, i,
                      t->bad_self);
            WT_ASSERT(t->begins == t->ends, "%u workers: thread %d: %" PRIu64 " task_begin, %" PRIu64 " task_end", w, i,
                      t->begins, t->ends);
            WT_ASSERT(t->bad_nest == 0, "%u workers: thread %d: %" PRIu64 " task_end on a fiber with no task begun", w, i,
                      t->bad_nest);
            for (int f = 0; f < t->nfib; f++)
                WT_ASSERT(t->fib[f].depth == 0, "%u workers: thread %d: a fiber ends with %d tasks begun, not ended", w, i,
                          t->fib[f].depth);
            WT_ASSERT(t->bad_full == 0);
            WT_ASSERT(t->bad_alt == 0, "%u workers: thread %d: fiber_leave/enter do not alternate (%" PRIu64 " times)", w,
                      i, t->bad_alt);
            WT_ASSERT(t->bad_leave_from == 0,
                      "%u workers: thread %d: %" PRIu64 " leaves from a fiber other than the one last entered", w, i,
                      t->bad_leave_from);
            WT_ASSERT(t->bad_enter_to == 0, "%u workers: thread %d: %" PRIu64 " enters into the fiber just left", w, i,
                      t->bad_enter_to);
            WT_ASSERT(t->leaves == t->enters || t->leaves == t->enters + 1);
            WT_ASSERT(t->bad_park == 0, "%u workers: thread %d: park/unpark do not alternate (%" PRIu64 " times)", w, i,
                      t->bad_park);
            begins += t->begins;
            ends += t->ends;
            parks += t->parks;
            leaves += t->leaves;
        }
        WT_ASSERT_EQ(atomic_load(&o->bad_tid), 0);
        WT_ASSERT(atomic_load(&o->bad_ctx) == 0, "%u workers: hooks got another ctx than observer.ctx", w);
        uint64_t want = N + 2 * P + 2 * OBS_G + LATE_N;
        WT_ASSERT(begins == want, "%u workers: %" PRIu64 " task_begin for %" PRIu64 " tasks", w, begins, want);
        WT_ASSERT_EQ(ends, want);
        WT_ASSERT(leaves > 0, "%u workers: tasks blocked and no fiber_leave", w);
        WT_ASSERT_EQ(atomic_load(&o->name_obs), N);
        WT_ASSERT_EQ(atomic_load(&o->name_late), LATE_N);
        WT_ASSERT(atomic_load(&o->name_null) == 2 * P, "%u workers: %lu tasks began with name NULL, want %d", w,
                  atomic_load(&o->name_null), 2 * P);
        WT_ASSERT(atomic_load(&o->name_other) == 0, "%u workers: %lu tasks began with an unexpected name", w,
                  atomic_load(&o->name_other));
        for (int i = 0; i < OBS_G; i++)
            WT_ASSERT(atomic_load(&o->name_g[i]) == 2, "%u workers: graph task og%02d began %lu times in 2 runs", w, i,
                      atomic_load(&o->name_g[i]));
        WT_ASSERT_EQ(atomic_load(&o->fn_obs), N + LATE_N);
        WT_ASSERT_EQ(atomic_load(&o->fn_send), P);
        WT_ASSERT_EQ(atomic_load(&o->fn_recv), P);
        if (w > 0)
            WT_ASSERT(parks > 0, "%u workers: no park hook, every worker seen parked", w);

        for (int i = 0; i < P; i++)
            weft_chan_destroy(work->ch[i]);
        weft_waitgroup_destroy(&work->wg);
        free(work);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        obs_cur = NULL;
        free(o);
    }
}

/* Hooks that count only. */
static atomic_ulong partial_calls;
static void p_task_begin(int thread, const char *name, weft_fn fn, void *ctx)
{
    atomic_fetch_add(&partial_calls, 1);
}
static void p_fiber(int thread, const void *fiber, void *ctx)
{
    atomic_fetch_add(&partial_calls, 1);
}
static void p_thread(int thread, void *ctx)
{
    atomic_fetch_add(&partial_calls, 1);
}

static void partial_loop_body(size_t b, size_t e, void *arg)
{
    busy_ns(1 * US);
}

static void partial_work(weft_sched *s, unsigned w)
{
    struct obs_work *work = calloc(1, sizeof *work);
    weft_waitgroup_init(&work->wg, 50 + 2);
    WT_ASSERT_EQ(weft_chan_create(&work->ch[0], sizeof(int), 0), WEFT_OK);
    work->pa[0].w = work;
    work->pa[0].i = 0;
    for (int i = 0; i < 50; i++)
        WT_ASSERT_EQ(spawn_named(s, obs_task, work, "obs"), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, obs_send, &work->pa[0]), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, obs_recv, &work->pa[0]), WEFT_OK);
    WT_ASSERT_EQ(weft_waitgroup_wait(&work->wg), WEFT_OK);
    WT_ASSERT_EQ(weft_parallel_for(s, 0, 256, 4, partial_loop_body, NULL), WEFT_OK);
    weft_chan_destroy(work->ch[0]);
    weft_waitgroup_destroy(&work->wg);
    free(work);
    nap_ns(2 * MS);
}

WT_TEST(trace, observer_partial, .timeout = 120)
{
    static const struct {
        const char *what;
        weft_observer ob;
        bool calls;
    } cases[] = {
        { "task_begin only", { .task_begin = p_task_begin }, true },
        { "task_end only", { .task_end = p_thread }, true },
        { "fiber_enter only", { .fiber_enter = p_fiber }, true },
        { "fiber_leave only", { .fiber_leave = p_fiber }, true },
        { "park and unpark only", { .park = p_thread, .unpark = p_thread }, false },
        { "all NULL", { 0 }, false },
    };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            atomic_store(&partial_calls, 0);
            weft_sched *s = sched_new(w, &cases[ci].ob);
            if (w == 0)
                WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
            start_ok(s, 256);   /* tracing and hooks together */
            partial_work(s, w);
            if (w == 0)
                weft_sched_unbind();
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
            if (cases[ci].calls)
                WT_ASSERT(atomic_load(&partial_calls) > 0, "%u workers, %s: never called", w, cases[ci].what);
        }
        /* No observer at all. */
        weft_sched *s = sched_new(w, NULL);
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        partial_work(s, w);
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}
