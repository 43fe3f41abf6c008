/* Adversarial tests of who runs flow's work, written from weft/flow.h,
 * weft/task.h and docs/reference alone, at 0 (this thread bound), 1, 2
 * and 8 workers where a scheduler runs anything (test_adv_flow.c has the
 * calls themselves):
 *
 *   sem_spawn        weft_spawn_opts.sem: a pinned task with a semaphore
 *                    is refused and nothing queued; a count-1 semaphore
 *                    runs 16 tasks one at a time, in spawn order, each
 *                    blocking while it holds the unit
 *   sem_timeout_ahead  a timed acquire and a spawned task wait on one
 *                    semaphore: the acquire times out, the unit released
 *                    afterwards runs the task, which gives it back
 *   shutdown_refusals  while destroy waits for a blocked task, a plain
 *                    thread's async spawn, group spawn, pipeline run,
 *                    blocking call and process spawn: ESHUTDOWN
 *   waits_with_nobody_to_run  on a scheduler with no workers, a plain
 *                    thread's async wait, group join and pipeline run:
 *                    ENOTBOUND at once, nothing changed; the bound
 *                    thread's own waits then run them; finished: OK */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adv_util.h"

static atomic_long ran;
static atomic_long bad;

static void nop(void *arg)
{
    (void)arg;
}

/* ---- a semaphore for spawned tasks -------------------------------------- */

#define SEM_N 16

typedef struct semjob {
    weft_sem *sem;
    atomic_int *inside;
    atomic_int *next;
    int i;
} semjob;

static void sem_task(void *arg)
{
    semjob *j = arg;
    if (atomic_fetch_add(j->inside, 1) != 0)
        atomic_fetch_add(&bad, 1);
    if (atomic_load(j->next) != j->i)   /* FIFO: spawn order */
        atomic_fetch_add(&bad, 1);
    weft_sleep(100000);                 /* blocks holding the unit */
    weft_yield();
    atomic_fetch_add(j->next, 1);
    atomic_fetch_sub(j->inside, 1);
}

WT_TEST(adv_flow, sem_spawn)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        atomic_int inside = 0, next = 0;
        atomic_store(&bad, 0);
        atomic_store(&ran, 0);
        weft_spawn_opts pinned = { .pinned = true, .thread = 0, .sem = &sem };
        WT_ASSERT_EQ(weft_spawn_ex(s, nop, NULL, &pinned), WEFT_EINVAL);
        weft_spawn_opts badprio = { .priority = (weft_priority)9, .sem = &sem };
        WT_ASSERT_EQ(weft_spawn_ex(s, nop, NULL, &badprio), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_spawn_ex(NULL, nop, NULL, &badprio), WEFT_EINVAL);
        semjob jobs[SEM_N];
        weft_spawn_opts o = { .sem = &sem };
        for (int i = 0; i < SEM_N; i++) {
            jobs[i] = (semjob){ &sem, &inside, &next, i };
            WT_ASSERT_EQ(weft_spawn_ex(s, sem_task, &jobs[i], &o), WEFT_OK);
        }
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&next), SEM_N);
        WT_ASSERT(atomic_load(&bad) == 0, "w %u: %ld bad", w, atomic_load(&bad));
        /* Every unit came back: it can be taken at once. */
        WT_ASSERT(weft_sem_try_acquire(&sem));
        WT_ASSERT(!weft_sem_try_acquire(&sem));
        weft_sem_release(&sem);
        adv_sched_end(s, w);
        weft_sem_destroy(&sem);
    }
}

/* A fiber's timed acquire ahead of a spawned task in the semaphore's FIFO
 * times out and leaves: the unit released afterwards goes to the task. */
typedef struct semto {
    weft_sem sem;
    atomic_long rc;
    weft_event done;
    atomic_long ran;
} semto;

static void timed_acquirer(void *arg)
{
    semto *t = arg;
    atomic_store(&t->rc, weft_sem_acquire_for(&t->sem, 2000000));
    weft_event_signal(&t->done);
}

static void sem_job(void *arg)
{
    semto *t = arg;
    atomic_fetch_add(&t->ran, 1);
}

WT_TEST(adv_flow, sem_timeout_ahead)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        semto t;
        memset(&t, 0, sizeof t);
        weft_sem_init(&t.sem, 0);
        weft_event_init(&t.done, true, false);
        atomic_store(&t.rc, 1);
        WT_ASSERT_EQ(weft_spawn(s, timed_acquirer, &t), WEFT_OK);
        weft_spawn_opts o = { .sem = &t.sem };
        WT_ASSERT_EQ(weft_spawn_ex(s, sem_job, &t, &o), WEFT_OK);
        WT_ASSERT_EQ(weft_event_wait(&t.done), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&t.rc), WEFT_ETIMEDOUT);
        WT_ASSERT_EQ(atomic_load(&t.ran), 0);
        weft_sem_release(&t.sem);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&t.ran), 1);
        WT_ASSERT(weft_sem_try_acquire(&t.sem));   /* the task gave it back */
        adv_sched_end(s, w);
        weft_sem_destroy(&t.sem);
        weft_event_destroy(&t.done);
    }
}

/* While weft_sched_destroy waits for a blocked task, a plain thread's new
 * work is refused with ESHUTDOWN and nothing of it runs. */
typedef struct shut {
    weft_sched *s;
    weft_event gate;
    weft_group gr;
    weft_pipeline *pl;
    atomic_long ran;
    long rc[6];
    long spawned;   /* plain spawns that went in before destroy began */
} shut;

static void shut_blocker(void *arg)
{
    shut *x = arg;
    weft_event_wait(&x->gate);
}

static void shut_count(void *arg)
{
    atomic_fetch_add(&((shut *)arg)->ran, 1);
}

static void *shut_async(void *arg)
{
    shut_count(arg);
    return NULL;
}

static void shut_stage(weft_pipe *pf, void *arg)
{
    shut_count(arg);
    weft_pipe_stop(pf);
}

static void *shut_thread(void *arg)
{
    shut *x = arg;
    /* Destroy has begun once a plain spawn is refused (bounded). */
    int tries = 0;
    int rc;
    while ((rc = weft_spawn(x->s, shut_count, x)) == WEFT_OK && tries++ < 20000)
        usleep(1000);
    x->rc[0] = rc;
    x->spawned = tries;
    weft_async *h = NULL;
    x->rc[1] = weft_async_spawn(x->s, shut_async, x, NULL, 0, &h);
    x->rc[2] = weft_group_spawn(&x->gr, shut_count, x);
    x->rc[3] = weft_pipeline_run(x->s, x->pl);
    x->rc[4] = weft_call_blocking(x->s, shut_count, x);
    const char *argv[] = { "true", NULL };
    weft_proc_spec sp = { .argv = argv };
    int pid = 0;
    x->rc[5] = weft_proc_spawn(x->s, &sp, &pid, NULL);
    weft_event_signal(&x->gate);
    return NULL;
}

WT_TEST(adv_flow, shutdown_refusals)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        shut x;
        memset(&x, 0, sizeof x);
        x.s = adv_sched(w);
        weft_event_init(&x.gate, true, false);
        WT_ASSERT_EQ(weft_group_init(&x.gr, x.s), WEFT_OK);
        weft_pipe_stage st[1] = { { WEFT_PIPE_SERIAL, shut_stage, &x } };
        WT_ASSERT_EQ(weft_pipeline_create(1, st, 1, &x.pl), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(x.s, shut_blocker, &x), WEFT_OK);
        pthread_t t;
        WT_ASSERT_EQ(pthread_create(&t, NULL, shut_thread, &x), 0);
        WT_ASSERT_EQ(weft_sched_destroy(x.s), WEFT_OK);
        WT_ASSERT_EQ(pthread_join(t, NULL), 0);
        for (int i = 0; i < 6; i++)
            WT_ASSERT(x.rc[i] == WEFT_ESHUTDOWN, "w %u call %d: %ld", w, i, x.rc[i]);
        WT_ASSERT_EQ(atomic_load(&x.ran), x.spawned);   /* those ran; none refused did */
        WT_ASSERT_EQ(weft_pipeline_destroy(x.pl), WEFT_OK);
        weft_event_destroy(&x.gate);
    }
}

/* ---- nobody to run them: waits from outside a scheduler with no workers ---- */

static void *nb_value(void *arg) { return arg; }
static void nb_member(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }
static void nb_first(weft_pipe *pf, void *arg)
{
    if (weft_pipe_token(pf) == 3)
        weft_pipe_stop(pf);
    else
        atomic_fetch_add((atomic_int *)arg, 1);
}

typedef struct nb_case {
    weft_sched *s;
    weft_async *h;
    weft_group *gr;
    weft_pipeline *pl;
} nb_case;

/* From a plain thread: every wait would sleep for ever (no workers, the
 * scheduler's bound thread is the test's, and it is waiting for us). */
static void *nb_outside(void *arg)
{
    nb_case *c = arg;
    WT_ASSERT_EQ(weft_async_wait(c->h), WEFT_ENOTBOUND);
    WT_ASSERT_EQ(weft_async_wait_for(c->h, 1000000), WEFT_ENOTBOUND);
    WT_ASSERT_EQ(weft_group_join(c->gr), WEFT_ENOTBOUND);
    WT_ASSERT_EQ(weft_pipeline_run(c->s, c->pl), WEFT_ENOTBOUND);
    WT_ASSERT_EQ(weft_pipeline_tokens(c->pl), 0);   /* the refusal changed nothing */
    return NULL;
}

static void *nb_after(void *arg)
{
    nb_case *c = arg;
    WT_ASSERT_EQ(weft_async_wait(c->h), WEFT_OK);
    WT_ASSERT_EQ(weft_group_join(c->gr), WEFT_OK);
    return NULL;
}

/* weft_graph_wait's rule for the flow calls: on a scheduler with no
 * workers only its bound thread (or its task) runs its tasks, so another
 * thread's wait is WEFT_ENOTBOUND at once, not a sleep for ever; and a
 * refused pipeline run can be made afterwards from the bound thread. */
WT_TEST(adv_flow, waits_with_nobody_to_run, .timeout = 60)
{
    weft_sched *s = adv_sched(0);   /* bound: this thread */
    atomic_int count = 0;
    nb_case c = { .s = s };
    WT_ASSERT_EQ(weft_async_spawn(s, nb_value, &count, NULL, 0, &c.h), WEFT_OK);
    weft_group gr;
    WT_ASSERT_EQ(weft_group_init(&gr, s), WEFT_OK);
    WT_ASSERT_EQ(weft_group_spawn(&gr, nb_member, &count), WEFT_OK);
    c.gr = &gr;
    weft_pipe_stage st[1] = { { WEFT_PIPE_SERIAL, nb_first, &count } };
    WT_ASSERT_EQ(weft_pipeline_create(1, st, 1, &c.pl), WEFT_OK);
    adv_on_thread(nb_outside, &c);
    WT_ASSERT_EQ(atomic_load(&count), 0);   /* nothing ran meanwhile */
    /* The bound thread's own waits run them. */
    WT_ASSERT_EQ(weft_async_wait(c.h), WEFT_OK);
    WT_ASSERT(weft_async_result(c.h) == &count);
    WT_ASSERT_EQ(weft_group_join(&gr), WEFT_OK);
    WT_ASSERT_EQ(weft_pipeline_run(s, c.pl), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&count), 1 + 3);
    /* A finished handle and a group with no member left are no wait at
     * all: OK from anywhere. */
    adv_on_thread(nb_after, &c);
    weft_async_release(c.h);
    weft_group_destroy(&gr);
    WT_ASSERT_EQ(weft_pipeline_destroy(c.pl), WEFT_OK);
    adv_sched_end(s, 0);
}
