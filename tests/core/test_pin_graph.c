/* Issue 22: thread ids, pinned tasks, priorities, bound threads that help
 * or not (WEFT_BIND_NO_HELP), weft_pinned_run and weft_pinned_wait_for. Written
 * from weft.h alone ("priorities and pinned tasks", weft_sched_bind_ex,
 * weft_thread_id, weft_config.priority_interval, weft_task_set_priority,
 * weft_task_set_pin), as a user reads it. This file: bad input
 * to the pin calls, graph tasks pinned (bad input, EBUSY during a run),
 * main-thread graph tasks that are skipped leave no waiter, a graph task
 * pinned to a thread that unbinds fails.
 *
 * Hangs. A broken rule here mostly shows as a hang (a worker waiting for
 * a main-thread task that was skipped): the test's .timeout ends it and
 * the watchdog prints the schedulers' state. Loops that spin in the
 * test's own code give up after SPIN_NS.
 *
 * Runs at 0 (the test thread bound, no workers), 1, 2 and 8 workers,
 * WEFT_BIND_NO_HELP at 1, 2 and 8 (with no workers, who would run
 * unpinned tasks beside a NO_HELP thread is not documented). Sizes follow
 * WEFT_STRESS_SCALE. The volume tests (10^5 pins from every kind of
 * thread, a 1000-frame loop, pins racing unbind, bind churn) are in
 * tests/stress/stress_pin.c.
 *
 * Tasks never assert (a Criterion assert off the test's thread is not
 * safe): they record into atomics that the test thread checks.
 * pin_util.h has the helpers the test_pin_*.c files share. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#include "weft.h"
#include "sched_util.h"
#include "wtest.h"
#include "../graph/graph_util.h"
#include "pin_util.h"

/* ---- bad input ------------------------------------------------------------ */

WT_TEST(pin, bad_input, .timeout = 60)
{
    weft_config c;
    weft_config_init(&c);
    WT_ASSERT_EQ(c.priority_interval, 16);
    weft_sched *s = NULL;
    c.priority_interval = 2000000;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    WT_ASSERT(s == NULL);
    const char *why = weft_config_check(&c);
    WT_ASSERT(why && strstr(why, "priority_interval"), "config_check: %s", why ? why : "(null)");
    c.priority_interval = 1000001;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    c.priority_interval = 1000000;
    c.workers = 2;
    WT_ASSERT(weft_config_check(&c) == NULL);
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);

    s = make_sched(2);
    atomic_store(&ran_anything, 0);
    weft_spawn_opts o = { .priority = (weft_priority)7 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .priority = (weft_priority)-1 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .hint = (weft_hint)9 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .pinned = true, .thread = -5 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .pinned = true, .thread = -1 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .pinned = true, .thread = 2 };   /* worker id >= W, nobody bound */
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .pinned = true, .thread = 1000 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ 0 };
    WT_ASSERT_EQ(weft_spawn_ex(NULL, count_run, NULL, &o), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_spawn_ex(s, NULL, NULL, &o), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_spawn_ex(s, NULL, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT(atomic_load(&ran_anything) == 0, "%d refused spawns ran", atomic_load(&ran_anything));

    /* NULL opts = weft_spawn; a thread field with pinned false is ignored;
     * hints on pinned or non-NORMAL tasks are ignored, not refused. */
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, NULL), WEFT_OK);
    o = (weft_spawn_opts){ .thread = -5 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_OK);
    o = (weft_spawn_opts){ .priority = WEFT_PRIORITY_HIGH, .hint = WEFT_HINT_NEXT };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_OK);
    o = (weft_spawn_opts){ .priority = WEFT_PRIORITY_LOW, .hint = WEFT_HINT_YIELD, .name = "low" };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_OK);
    o = (weft_spawn_opts){ .pinned = true, .thread = 1, .hint = WEFT_HINT_NEXT };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran_anything), 5);

    /* bind_ex: unknown flags refused, nothing changed. */
    WT_ASSERT_EQ(weft_sched_bind_ex(s, 0x80), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_sched_bind_ex(s, 0x80 | WEFT_BIND_NO_HELP), WEFT_EINVAL);
    WT_ASSERT(weft_sched_current() == NULL);
    WT_ASSERT_EQ(weft_thread_id(), -1);
    WT_ASSERT_EQ(weft_sched_bind_ex(s, WEFT_BIND_NO_HELP), WEFT_OK);
    WT_ASSERT_EQ(weft_thread_id(), 2);
    WT_ASSERT_EQ(weft_sched_bind_ex(s, 0), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_EBUSY);
    o = (weft_spawn_opts){ .pinned = true, .thread = 3 };   /* the next id: nobody has it */
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran_anything), 5);
}

WT_TEST(pin, graph_pin_bad_input, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_store(&ran_anything, 0);
    weft_task *a = add(g, count_run, NULL), *b = add(g, count_run, NULL);
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_set_pin(NULL, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_task_set_pin(b, -2), WEFT_EINVAL);
    weft_task_set_priority(a, (weft_priority)7);   /* "an out-of-range p is ignored" */
    /* Pinned to an id that is no thread of s: the run is refused. */
    WT_ASSERT_EQ(weft_task_set_pin(b, 7), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran_anything), 0);
    WT_ASSERT_EQ(weft_task_state(a), WEFT_TASK_PENDING);
    /* Pinned to a worker: fine. Unpinned again: fine. */
    WT_ASSERT_EQ(weft_task_set_pin(b, 1), WEFT_OK);
    run_wait(s, g, "pinned to worker 1");
    WT_ASSERT_EQ(atomic_load(&ran_anything), 2);
    WT_ASSERT_EQ(weft_task_set_pin(b, -1), WEFT_OK);
    run_wait(s, g, "unpinned");
    WT_ASSERT_EQ(atomic_load(&ran_anything), 4);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* EBUSY during a run. */
static void wait_event(void *arg)
{
    weft_event_wait(arg);
}

WT_TEST(pin, graph_pin_busy_during_run, .timeout = 60)
{
    weft_sched *s = make_sched(1);
    weft_graph *g = new_graph();
    static weft_event ev;
    weft_event_init(&ev, true, false);
    weft_task *a = add(g, wait_event, &ev);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_task_set_pin(a, 0), WEFT_EBUSY);
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_task_set_pin(a, 0), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_event_destroy(&ev);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- main-thread graph tasks that are skipped ---------------------------- */

enum skip_mode { SK_NONE, SK_CANCEL_TASK, SK_FAIL_PRED, SK_CANCEL_GRAPH, SK_COND_OTHER, NSKIP };

static const char *const skip_name[] = {
    "nothing skipped", "the main-thread task cancelled", "its predecessor failed",
    "weft_graph_cancel from its predecessor", "a condition picked the other branch",
};

struct skipg {
    weft_graph *g;
    enum skip_mode mode;
    int main_id;
    atomic_int m_runs, m_on, d_runs, x_runs;
};

static void sk_a(void *arg)
{
    struct skipg *k = arg;
    if (k->mode == SK_FAIL_PRED)
        weft_task_fail(WEFT_EAGAIN);
    else if (k->mode == SK_CANCEL_GRAPH)
        weft_graph_cancel(k->g);
}

static void sk_m(void *arg)
{
    struct skipg *k = arg;
    atomic_store(&k->m_on, weft_thread_id());
    atomic_fetch_add(&k->m_runs, 1);
}

static void sk_d(void *arg) { atomic_fetch_add(&((struct skipg *)arg)->d_runs, 1); }

static void sk_x(void *arg) { atomic_fetch_add(&((struct skipg *)arg)->x_runs, 1); }

static int sk_cond(void *arg) { return ((struct skipg *)arg)->mode == SK_COND_OTHER ? 1 : 0; }

struct plain_waiter {
    weft_graph *g;
    atomic_int rc, done;
};

static void *pw_main(void *arg)
{
    struct plain_waiter *p = arg;
    atomic_store(&p->rc, weft_graph_wait(p->g));
    atomic_store(&p->done, 1);
    return NULL;
}

/* A -> M (pinned to the main thread) -> D, with a condition C at the
 * root choosing A's branch (0) or X (1). The main thread waits in
 * weft_graph_wait, or (plain_waits) pumps with wait_pinned/run_pinned
 * while a plain thread waits for the graph. */
static void skip_case(unsigned W, unsigned flags, enum skip_mode mode, bool plain_waits)
{
    fprintf(stderr, "skip: %s, %u workers, %s main thread, %s\n", skip_name[mode], W, flag_name(flags),
            plain_waits ? "a plain thread waits while main pumps" : "main waits in weft_graph_wait");
    weft_sched *s = make_sched(W);
    static struct skipg k;
    memset(&k, 0, sizeof k);
    k.mode = mode;
    k.main_id = bind_as(s, flags);
    k.g = new_graph();
    weft_task *c = weft_graph_add_cond(k.g, sk_cond, &k);
    WT_ASSERT(c != NULL);
    weft_task *a = add(k.g, sk_a, &k), *m = add(k.g, sk_m, &k), *d = add(k.g, sk_d, &k),
              *x = add(k.g, sk_x, &k);
    WT_ASSERT_EQ(weft_task_precede(c, a), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(c, x), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(a, m), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(m, d), WEFT_OK);
    WT_ASSERT_EQ(weft_task_set_pin(m, k.main_id), WEFT_OK);
    if (mode == SK_CANCEL_TASK)
        WT_ASSERT(weft_task_cancel(m));

    int rc = weft_graph_run(s, k.g);
    WT_ASSERT(rc == WEFT_OK, "run: %s", weft_err_name(rc));
    if (plain_waits) {
        static struct plain_waiter p;
        memset(&p, 0, sizeof p);
        p.g = k.g;
        pthread_t th = start_thread(pw_main, &p);
        uint64_t end = wt_now_ns() + SPIN_NS;
        while (!atomic_load(&p.done) && wt_now_ns() < end) {
            weft_pinned_wait_for(MS);
            weft_pinned_run(UINT64_MAX);
        }
        WT_ASSERT(atomic_load(&p.done), "a plain thread's weft_graph_wait never returned (%s)", skip_name[mode]);
        join_thread(th);
        rc = atomic_load(&p.rc);
    } else {
        rc = weft_graph_wait(k.g);
    }
    int want = mode == SK_NONE || mode == SK_COND_OTHER ? WEFT_OK
             : mode == SK_FAIL_PRED ? WEFT_EFAILED : WEFT_ECANCELED;   /* EFAILED: the task's own code */
    WT_ASSERT(rc == want, "%s: wait returned %s, want %s", skip_name[mode], weft_err_name(rc), weft_err_name(want));
    if (mode == SK_FAIL_PRED)
        WT_ASSERT_EQ(weft_graph_fail_code(k.g), WEFT_EAGAIN);
    if (mode == SK_NONE) {
        WT_ASSERT_EQ(atomic_load(&k.m_runs), 1);
        WT_ASSERT_EQ(atomic_load(&k.m_on), k.main_id);
        WT_ASSERT_EQ(atomic_load(&k.d_runs), 1);
    } else {
        WT_ASSERT_EQ(atomic_load(&k.m_runs), 0);
        WT_ASSERT_EQ(atomic_load(&k.d_runs), 0);
        weft_task_status st = weft_task_state(m);
        WT_ASSERT(mode == SK_COND_OTHER ? st == WEFT_TASK_PENDING : st == WEFT_TASK_SKIPPED,
                  "the main-thread task's state: %d", (int)st);
        WT_ASSERT_EQ(atomic_load(&k.x_runs), mode == SK_COND_OTHER);
    }
    /* No stale record of it stays queued on the main thread. */
    WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), 0);
    WT_ASSERT_EQ(weft_pinned_wait_for(0), WEFT_ETIMEDOUT);
    /* And after a reset the graph runs in full. */
    k.mode = SK_NONE;
    WT_ASSERT_EQ(weft_graph_reset(k.g), WEFT_OK);
    atomic_store(&k.m_runs, 0);
    run_wait(s, k.g, "after reset");
    WT_ASSERT_EQ(atomic_load(&k.m_runs), 1);
    WT_ASSERT_EQ(atomic_load(&k.m_on), k.main_id);
    WT_ASSERT_EQ(weft_graph_destroy(k.g), WEFT_OK);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(pin, skipped_main_thread_task_leaves_no_waiter, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++)
        for (int mode = 0; mode < NSKIP; mode++) {
            skip_case(cfgs[k].workers, cfgs[k].flags, (enum skip_mode)mode, false);
            if (cfgs[k].workers > 0)   /* with none, a plain thread may not wait (ENOTBOUND) */
                skip_case(cfgs[k].workers, cfgs[k].flags, (enum skip_mode)mode, true);
        }
}

/* A graph task pinned to a thread that unbinds during the run fails with
 * EINVAL when it becomes ready; its dependents are skipped. */
struct unbinder {
    weft_sched *s;
    atomic_int id, go, rc;
};

static void *unbinder_main(void *arg)
{
    struct unbinder *u = arg;
    /* NO_HELP: a helping thread could pick up the task that waits for
     * the event (signalled only once this thread has left), and unbind
     * waits for the tasks it started that are blocked. */
    atomic_store(&u->rc, weft_sched_bind_ex(u->s, WEFT_BIND_NO_HELP));
    atomic_store(&u->id, weft_thread_id());
    while (!atomic_load(&u->go))
        weft_pinned_wait_for(MS);
    weft_sched_unbind();
    return NULL;
}

WT_TEST(pin, graph_task_pinned_to_unbound_thread_fails, .timeout = 180)
{
    WT_FOR_WORKERS(W, 1, 2) {
        weft_sched *s = make_sched(W);
        static struct unbinder u;
        memset(&u, 0, sizeof u);
        u.s = s;
        atomic_store(&u.id, -2);
        pthread_t th = start_thread(unbinder_main, &u);
        uint64_t end = wt_now_ns() + SPIN_NS;
        while (atomic_load(&u.id) == -2 && wt_now_ns() < end)
            sched_yield();
        WT_ASSERT_EQ(atomic_load(&u.rc), WEFT_OK);
        WT_ASSERT(atomic_load(&u.id) >= (int)W);
        static weft_event ev;
        weft_event_init(&ev, true, false);
        static struct skipg k;
        memset(&k, 0, sizeof k);
        weft_graph *g = new_graph();
        weft_task *a = add(g, wait_event, &ev), *m = add(g, sk_m, &k), *d = add(g, sk_d, &k);
        WT_ASSERT_EQ(weft_task_precede(a, m), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(m, d), WEFT_OK);
        WT_ASSERT_EQ(weft_task_set_pin(m, atomic_load(&u.id)), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        atomic_store(&u.go, 1);
        join_thread(th);
        weft_event_signal(&ev);
        int rc = weft_graph_wait(g);
        WT_ASSERT(rc == WEFT_EINVAL, "wait: %s, want EINVAL", weft_err_name(rc));
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(atomic_load(&k.m_runs), 0);
        WT_ASSERT_EQ(atomic_load(&k.d_runs), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&ev);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}
