/* Issue 22: thread ids, pinned tasks, priorities, bound threads that help
 * or not (WEFT_BIND_NO_HELP), weft_pinned_run and weft_pinned_wait_for. Written
 * from weft.h alone ("priorities and pinned tasks", weft_sched_bind_ex,
 * weft_thread_id, weft_config.priority_interval, weft_task_set_priority,
 * weft_task_set_pin), as a user reads it. This file: a bound
 * thread runs the tasks pinned to it in every weft wait.
 *
 * Hangs. A broken rule here mostly shows as a hang: a bound thread that
 * sleeps in a weft call while a task pinned to it is queued, a worker
 * waiting for a main-thread task that was skipped. Each wait of the
 * wait_* tests has a rescuer thread: if the pinned task has not run
 * RESCUE_S seconds into the wait, the rescuer does the task's job itself
 * (opens what the bound thread waits for), and the test fails naming the
 * wait, the worker count, the bind flags and where the pin came from,
 * instead of hanging. Where nothing can rescue (weft_sched_wait_idle waits for
 * the pinned task itself; a graph waits for its pinned task), the test's
 * .timeout ends it and the watchdog prints the schedulers' state; each
 * case is printed to stderr before it runs so the log names the hung one.
 * Loops that spin in the test's own code give up after SPIN_NS.
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

/* Both bound waits that only a broken rule (a hang) reaches: a bound
 * thread or a task starved of CPU on a loaded machine (CI: 2 cores, a
 * busy loop on each, three presets at once) gets its turn well before. */
#define RESCUE_S 30

/* ---- a bound thread runs its pinned tasks in every weft wait ----------- */

enum wait_kind { WK_IDLE, WK_GRAPH, WK_WAITGROUP, WK_EVENT, WK_MUTEX, WK_COND, WK_CHAN,
                 WK_WAIT_UNTIL, WK_SLEEP, WK_PFOR };

static const char *const wk_name[] = {
    "weft_sched_wait_idle", "weft_graph_wait", "weft_waitgroup_wait", "weft_event_wait",
    "weft_mutex_lock", "weft_cond_wait", "weft_chan_recv",
    "weft_wait_until", "weft_sleep", "weft_parallel_for",
};

enum pin_from { FROM_SELF, FROM_TASK, FROM_PLAIN, NFROM };

static const char *const from_name[] = {
    "the bound thread, before it waits", "a task, 1 ms into the wait", "a plain thread, 1 ms into the wait",
};

/* One case: the bound thread waits for something that opens only when a
 * task pinned to it has run (opened by that task: `gate`). */
struct wcase {
    weft_sched *s;
    enum wait_kind kind;
    int bound_id;
    atomic_int claimed;        /* who opened the gate: 1 the pinned task, 2 the rescuer, 3 pin refused */
    atomic_int p_runs, p_on;   /* the pinned task: times run, the id it ran on */
    atomic_int pin_rc, pinned; /* its spawn_ex's result, and that the call returned */
    _Atomic uint64_t pin_at;   /* wt_now_ns when the pin was made (WK_SLEEP's excuse) */
    atomic_int holder_in;      /* WK_MUTEX: the holder has the mutex */
    weft_event gate;           /* what a blocked task waits on (IDLE, GRAPH, EVENT, MUTEX, PFOR) */
    weft_waitgroup wg;
    weft_mutex m;
    weft_cond c;
    int cond_flag;             /* under m */
    weft_chan *ch;
    atomic_int until;
    sem_t finished;            /* the bound thread's wait returned: the rescuer stops */
};

static void open_gate(struct wcase *c)
{
    switch (c->kind) {
    case WK_WAITGROUP:
        weft_waitgroup_done(&c->wg);
        break;
    case WK_COND:
        weft_mutex_lock(&c->m);
        c->cond_flag = 1;
        weft_cond_signal(&c->c);
        weft_mutex_unlock(&c->m);
        break;
    case WK_CHAN: {
        int v = 1;
        (void)weft_chan_try_send(c->ch, &v);
        break;
    }
    case WK_WAIT_UNTIL:
        atomic_store(&c->until, 1);
        break;
    case WK_SLEEP:
        break;
    default:
        weft_event_signal(&c->gate);
        break;
    }
}

/* The gate opens once, by whoever comes first. */
static void claim_open(struct wcase *c, int who)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&c->claimed, &none, who))
        open_gate(c);
}

static void wc_pinned(void *arg)
{
    struct wcase *c = arg;
    atomic_store(&c->p_on, weft_thread_id());
    atomic_fetch_add(&c->p_runs, 1);
    claim_open(c, 1);
}

static void wc_pin(struct wcase *c)
{
    atomic_store(&c->pin_at, wt_now_ns());
    atomic_store(&c->pin_rc, spawn_pinned(c->s, wc_pinned, c, c->bound_id));
    atomic_store(&c->pinned, 1);
}

static void wc_pinner_task(void *arg)
{
    weft_sleep(MS);
    wc_pin(arg);
}

static void *wc_pinner_thread(void *arg)
{
    nap_ns(MS);
    wc_pin(arg);
    return NULL;
}

static void wc_gate_waiter(void *arg)
{
    weft_event_wait(&((struct wcase *)arg)->gate);
}

static void wc_holder(void *arg)
{
    struct wcase *c = arg;
    weft_mutex_lock(&c->m);
    atomic_store(&c->holder_in, 1);
    weft_event_wait(&c->gate);
    weft_mutex_unlock(&c->m);
}

static void wc_pfor_body(size_t b, size_t e, void *arg)
{
    if (b == 0)
        weft_event_wait(&((struct wcase *)arg)->gate);
}

static bool wc_until(void *arg)
{
    return atomic_load(&((struct wcase *)arg)->until) != 0;
}

/* Opens the gate itself when the pin was refused (at once) or when the
 * pinned task has not run after RESCUE_S (and says so). */
static void *wc_rescuer(void *arg)
{
    struct wcase *c = arg;
    uint64_t end = wt_now_ns() + (uint64_t)RESCUE_S * 1000000000u;
    while (wt_now_ns() < end) {
        if (sem_trywait(&c->finished) == 0)
            return NULL;
        if (atomic_load(&c->pinned) && atomic_load(&c->pin_rc) != WEFT_OK) {
            claim_open(c, 3);
            return NULL;
        }
        nap_ns(MS);
    }
    if (atomic_load(&c->p_runs) == 0 && c->kind != WK_SLEEP) {
        fprintf(stderr, "rescuer: the task pinned to the bound thread has not run %d s into %s%s\n",
                RESCUE_S, wk_name[c->kind],
                c->kind == WK_IDLE ? "; it waits for that task itself, so it hangs until the test's timeout" : "");
        claim_open(c, 2);
    }
    return NULL;
}

static void run_case(unsigned W, unsigned flags, enum wait_kind kind, enum pin_from from)
{
    fprintf(stderr, "case: %s at %u workers, %s bound thread, pinned from %s\n", wk_name[kind], W,
            flag_name(flags), from_name[from]);
    struct wcase *c = calloc(1, sizeof *c);
    WT_ASSERT(c != NULL);
    c->kind = kind;
    atomic_store(&c->pin_rc, 1);
    c->s = make_sched(W);
    c->bound_id = bind_as(c->s, flags);
    weft_event_init(&c->gate, true, false);
    weft_waitgroup_init(&c->wg, 1);
    weft_mutex_init(&c->m);
    weft_cond_init(&c->c);
    WT_ASSERT_EQ(weft_chan_create(&c->ch, sizeof(int), 1), WEFT_OK);
    sem_init(&c->finished, 0, 0);
    weft_graph *g = NULL;

    if (kind == WK_GRAPH) {
        g = new_graph();
        add(g, wc_gate_waiter, c);
    } else if (kind == WK_IDLE) {
        WT_ASSERT_EQ(weft_spawn(c->s, wc_gate_waiter, c), WEFT_OK);
    } else if (kind == WK_MUTEX) {
        WT_ASSERT_EQ(weft_spawn(c->s, wc_holder, c), WEFT_OK);
        uint64_t end = wt_now_ns() + SPIN_NS;
        while (!atomic_load(&c->holder_in) && wt_now_ns() < end) {
            if (W == 0)
                weft_yield();   /* with no workers, this thread runs the holder */
            else
                sched_yield();
        }
        WT_ASSERT(atomic_load(&c->holder_in), "the mutex holder task never ran (%u workers, %s)", W,
                  flag_name(flags));
    }
    pthread_t rescuer = start_thread(wc_rescuer, c), plain = rescuer;
    if (from == FROM_SELF) {
        wc_pin(c);
        WT_ASSERT(atomic_load(&c->pin_rc) == WEFT_OK, "spawn_ex pinned to the bound thread %d: %s",
                  c->bound_id, weft_err_name(atomic_load(&c->pin_rc)));
    } else if (from == FROM_TASK) {
        WT_ASSERT_EQ(weft_spawn(c->s, wc_pinner_task, c), WEFT_OK);
    } else {
        plain = start_thread(wc_pinner_thread, c);
    }

    int rc = WEFT_OK, v = 0;
    uint64_t wait_t0 = wt_now_ns();
    switch (kind) {
    case WK_IDLE:       rc = weft_sched_wait_idle(c->s); break;
    case WK_GRAPH:
        rc = weft_graph_run(c->s, g);
        if (rc == WEFT_OK)
            rc = weft_graph_wait(g);
        break;
    case WK_WAITGROUP:  rc = weft_waitgroup_wait(&c->wg); break;
    case WK_EVENT:      rc = weft_event_wait(&c->gate); break;
    case WK_MUTEX:
        weft_mutex_lock(&c->m);
        weft_mutex_unlock(&c->m);
        break;
    case WK_COND:
        weft_mutex_lock(&c->m);
        while (!c->cond_flag && rc == WEFT_OK)
            rc = weft_cond_wait(&c->c, &c->m);
        weft_mutex_unlock(&c->m);
        break;
    case WK_CHAN:       rc = weft_chan_recv(c->ch, &v); break;
    case WK_WAIT_UNTIL: rc = weft_wait_until(wc_until, c); break;
    case WK_SLEEP:      rc = weft_sleep(300 * MS); break;
    case WK_PFOR:       rc = weft_parallel_for(c->s, 0, 8, 1, wc_pfor_body, c); break;
    }
    uint64_t waited = wt_now_ns() - wait_t0;
    sem_post(&c->finished);
    join_thread(rescuer);
    if (from == FROM_PLAIN)
        join_thread(plain);

    WT_ASSERT(rc == WEFT_OK, "%s returned %s", wk_name[kind], weft_err_name(rc));
    if (from == FROM_TASK)
        WT_ASSERT(spin_until(&c->pinned, 1, SPIN_NS), "the pinning task never ran");
    WT_ASSERT(atomic_load(&c->pin_rc) == WEFT_OK, "spawn_ex pinned to bound thread %d from %s: %s",
              c->bound_id, from_name[from], weft_err_name(atomic_load(&c->pin_rc)));
    WT_ASSERT(atomic_load(&c->claimed) != 2,
              "the bound thread (%s, %u workers) waited in %s for %d s with a task pinned to it "
              "(from %s) and did not run it", flag_name(flags), W, wk_name[kind], RESCUE_S, from_name[from]);
    /* A sleep is the one wait that ends by itself: on a machine so
     * loaded that the thread got no CPU from the pin until its deadline,
     * its resumed fiber goes first (ready fibers before tasks) and the
     * pin is left for the pump. Only then: the sleep overran by 100 ms,
     * or the pinner (meant to pin 1 ms in) got its CPU only in the
     * sleep's last 100 ms or after it (seen in a loaded asan run); a pin
     * made early in the sleep must have run during it. */
    uint64_t pin_in = atomic_load(&c->pin_at) - wait_t0;   /* wraps to huge if made before: never excused */
    bool late_pin = from != FROM_SELF && pin_in > 200 * MS && pin_in < (uint64_t)1 << 62;
    if (kind == WK_SLEEP && atomic_load(&c->p_runs) == 0 && (waited > 400 * MS || late_pin)) {
        fprintf(stderr, "weft_sleep overran by %lld ms, pin made %llu ms in (a loaded machine): the "
                "pin is pumped\n", (long long)waited / (long long)MS - 300,
                (unsigned long long)(pin_in / MS));
        WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), 1);
    }
    WT_ASSERT(atomic_load(&c->p_runs) == 1, "%s: the pinned task ran %d times during the wait "
              "(%u workers, %s, from %s)", wk_name[kind], atomic_load(&c->p_runs), W, flag_name(flags),
              from_name[from]);
    WT_ASSERT(atomic_load(&c->p_on) == c->bound_id, "%s: the pinned task ran on thread %d, not %d",
              wk_name[kind], atomic_load(&c->p_on), c->bound_id);

    WT_ASSERT_EQ(weft_sched_wait_idle(c->s), WEFT_OK);
    if (g)
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_chan_destroy(c->ch);
    weft_cond_destroy(&c->c);
    weft_mutex_destroy(&c->m);
    weft_waitgroup_destroy(&c->wg);
    weft_event_destroy(&c->gate);
    sem_destroy(&c->finished);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(c->s), WEFT_OK);
    free(c);
}

static void run_kind(enum wait_kind kind)
{
    for (size_t k = 0; k < NCFGS; k++)
        for (int from = 0; from < NFROM; from++)
            run_case(cfgs[k].workers, cfgs[k].flags, kind, (enum pin_from)from);
}

WT_TEST(pin, bound_runs_pinned_in_wait_idle, .timeout = 120)    { run_kind(WK_IDLE); }

WT_TEST(pin, bound_runs_pinned_in_graph_wait, .timeout = 120)   { run_kind(WK_GRAPH); }

WT_TEST(pin, bound_runs_pinned_in_waitgroup, .timeout = 120)    { run_kind(WK_WAITGROUP); }

WT_TEST(pin, bound_runs_pinned_in_event, .timeout = 120)        { run_kind(WK_EVENT); }

WT_TEST(pin, bound_runs_pinned_in_mutex, .timeout = 120)        { run_kind(WK_MUTEX); }

WT_TEST(pin, bound_runs_pinned_in_cond, .timeout = 120)         { run_kind(WK_COND); }

WT_TEST(pin, bound_runs_pinned_in_chan_recv, .timeout = 120)    { run_kind(WK_CHAN); }

WT_TEST(pin, bound_runs_pinned_in_wait_until, .timeout = 120)   { run_kind(WK_WAIT_UNTIL); }

WT_TEST(pin, bound_runs_pinned_in_sleep, .timeout = 120)        { run_kind(WK_SLEEP); }

WT_TEST(pin, bound_runs_pinned_in_parallel_for, .timeout = 120) { run_kind(WK_PFOR); }
