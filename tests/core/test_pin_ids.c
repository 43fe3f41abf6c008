/* Issue 22: thread ids, pinned tasks, priorities, bound threads that help
 * or not (WEFT_BIND_NO_HELP), weft_pinned_run and weft_pinned_wait_for. Written
 * from weft.h alone ("priorities and pinned tasks", weft_sched_bind_ex,
 * weft_thread_id, weft_config.priority_interval, weft_task_set_priority,
 * weft_task_set_pin), as a user reads it. This file: weft_thread_id,
 * and tasks pinned to workers run on the worker they name.
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

/* ---- weft_thread_id --------------------------------------------------- */

struct idsample {
    atomic_int slot, arrived, timed_out;
    int need;
    int id[64], widx[64];
};

/* W of these must all run at once (a busy rendezvous), so each is on a
 * worker of its own: their ids are then every worker's. */
static void rendezvous(void *arg)
{
    struct idsample *r = arg;
    int k = atomic_fetch_add(&r->slot, 1);
    if (k < 64) {
        r->id[k] = weft_thread_id();
        r->widx[k] = weft_thread_worker_index();
    }
    atomic_fetch_add(&r->arrived, 1);
    if (!spin_until(&r->arrived, r->need, SPIN_NS))
        atomic_store(&r->timed_out, 1);
}

static void record_id(void *arg)
{
    atomic_store((atomic_int *)arg, weft_thread_id());
}

struct binder {
    weft_sched *s;
    pthread_t th;
    pthread_barrier_t *bound;
    sem_t leave;
    int rc, id, id_after;
};

static void *binder_main(void *p)
{
    struct binder *b = p;
    b->rc = weft_sched_bind(b->s);
    b->id = weft_thread_id();
    pthread_barrier_wait(b->bound);
    while (sem_wait(&b->leave) == -1 && errno == EINTR) {
    }
    weft_sched_unbind();
    b->id_after = weft_thread_id();
    return NULL;
}

static void binder_start(struct binder *b, weft_sched *s, pthread_barrier_t *bar)
{
    memset(b, 0, sizeof *b);
    b->s = s;
    b->bound = bar;
    b->id = b->id_after = -2;
    sem_init(&b->leave, 0, 0);
    b->th = start_thread(binder_main, b);
}

static void binder_stop(struct binder *b)
{
    sem_post(&b->leave);
    join_thread(b->th);
    sem_destroy(&b->leave);
    WT_ASSERT_EQ(b->id_after, -1);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

WT_TEST(pin, thread_ids, .timeout = 120)
{
    WT_FOR_WORKERS(W, 0, 1, 2, 8) {
        fprintf(stderr, "thread_ids at %u workers\n", W);
        weft_sched *s = make_sched(W);
        WT_ASSERT_EQ(weft_thread_id(), -1);   /* a plain thread */

        if (W > 0) {   /* workers: 0..W-1, the same as weft_thread_worker_index */
            static struct idsample r;
            memset(&r, 0, sizeof r);
            r.need = (int)W;
            for (unsigned i = 0; i < W; i++)
                WT_ASSERT_EQ(weft_spawn(s, rendezvous, &r), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&r.timed_out), 0);
            int ids[64];
            for (unsigned i = 0; i < W; i++) {
                WT_ASSERT_EQ(r.id[i], r.widx[i]);
                ids[i] = r.id[i];
            }
            qsort(ids, W, sizeof ids[0], cmp_int);
            for (unsigned i = 0; i < W; i++)
                WT_ASSERT(ids[i] == (int)i, "worker ids at %u workers: [%u] = %d", W, i, ids[i]);
        }

        /* The first bound thread takes the smallest id >= W: W. */
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        WT_ASSERT_EQ(weft_thread_id(), (int)W);
        if (W == 0) {   /* a task run by the bound thread sees its id */
            static atomic_int seen;
            atomic_store(&seen, -2);
            WT_ASSERT_EQ(weft_spawn(s, record_id, &seen), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&seen), 0);
        }

        /* Three more at once: W+1..W+3, distinct. */
        /* One barrier per step, destroyed once every binder has been
         * joined: a binder may still be inside pthread_barrier_wait when
         * this thread has left it. */
        pthread_barrier_t bar, bar2, bar3;
        pthread_barrier_init(&bar, NULL, 4);
        pthread_barrier_init(&bar2, NULL, 2);
        pthread_barrier_init(&bar3, NULL, 2);
        struct binder b[6];
        for (int i = 0; i < 3; i++)
            binder_start(&b[i], s, &bar);
        pthread_barrier_wait(&bar);
        int ids[3];
        for (int i = 0; i < 3; i++) {
            WT_ASSERT_EQ(b[i].rc, WEFT_OK);
            ids[i] = b[i].id;
        }
        qsort(ids, 3, sizeof ids[0], cmp_int);
        for (int i = 0; i < 3; i++)
            WT_ASSERT(ids[i] == (int)W + 1 + i, "bound ids at %u workers: %d %d %d", W, ids[0],
                      ids[1], ids[2]);

        /* The one with W+2 leaves; the next binder gets W+2 back. */
        int mid = -1;
        for (int i = 0; i < 3; i++)
            if (b[i].id == (int)W + 2)
                mid = i;
        binder_stop(&b[mid]);
        binder_start(&b[3], s, &bar2);
        pthread_barrier_wait(&bar2);
        WT_ASSERT_EQ(b[3].rc, WEFT_OK);
        WT_ASSERT(b[3].id == (int)W + 2, "reused id: %d, want the smallest free %u", b[3].id, W + 2);

        /* This thread leaves (id W free); the next binder gets W. */
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_thread_id(), -1);
        binder_start(&b[4], s, &bar3);
        pthread_barrier_wait(&bar3);
        WT_ASSERT_EQ(b[4].rc, WEFT_OK);
        WT_ASSERT(b[4].id == (int)W, "reused id: %d, want the smallest free %u", b[4].id, W);

        for (int i = 0; i < 5; i++)
            if (i != mid)
                binder_stop(&b[i]);
        pthread_barrier_destroy(&bar);
        pthread_barrier_destroy(&bar2);
        pthread_barrier_destroy(&bar3);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        WT_ASSERT_EQ(weft_thread_id(), -1);
    }
}

/* ---- pinned to workers: every task on the worker it names -------------- */

struct wpin;

struct wpin_arg { struct wpin *p; int target; };

struct wpin {
    weft_sched *s;
    unsigned W;
    int per;                  /* pins per target and source */
    struct wpin_arg arg[8];
    atomic_int runs[8], wrong, refused;
};

static void wpin_task(void *arg)
{
    struct wpin_arg *a = arg;
    if (weft_thread_id() != a->target)
        atomic_fetch_add(&a->p->wrong, 1);
    atomic_fetch_add(&a->p->runs[a->target], 1);
}

static void wpin_pin_all(struct wpin *p)
{
    for (int i = 0; i < p->per; i++)
        for (unsigned t = 0; t < p->W; t++)
            if (spawn_pinned(p->s, wpin_task, &p->arg[t], (int)t) != WEFT_OK)
                atomic_fetch_add(&p->refused, 1);
}

static void wpin_from_task(void *arg)
{
    wpin_pin_all(arg);
}

WT_TEST(pin, pinned_to_workers_run_there, .timeout = 120)
{
    int per = (int)wt_scaled(2000, 200);
    WT_FOR_WORKERS(w, 1, 2, 8) {
        static struct wpin p;
        memset(&p, 0, sizeof p);
        p.W = w;
        p.per = per;
        p.s = make_sched(p.W);
        for (unsigned t = 0; t < p.W; t++)
            p.arg[t] = (struct wpin_arg){ &p, (int)t };
        wpin_pin_all(&p);                                        /* from a plain thread */
        for (int i = 0; i < 4; i++)                              /* from workers */
            WT_ASSERT_EQ(weft_spawn(p.s, wpin_from_task, &p), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(p.s), WEFT_OK);
        WT_ASSERT(atomic_load(&p.refused) == 0, "%d pins to workers refused at %u workers (EINVAL: not implemented?)",
                  atomic_load(&p.refused), p.W);
        WT_ASSERT(atomic_load(&p.wrong) == 0, "%d pinned tasks ran on another worker at %u workers",
                  atomic_load(&p.wrong), p.W);
        for (unsigned t = 0; t < p.W; t++)
            WT_ASSERT(atomic_load(&p.runs[t]) == 5 * per, "worker %u ran %d of its %d pinned tasks", t,
                      atomic_load(&p.runs[t]), 5 * per);
        WT_ASSERT_EQ(weft_sched_destroy(p.s), WEFT_OK);
    }
}
