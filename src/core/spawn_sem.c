/* This file is private to weft: spawned tasks behind a semaphore
 * (weft_spawn_opts.sem): a task that waits for its unit holding no
 * fiber, as graph tasks do with weft_task_set_semaphore.
 *
 * A job is a task record and a small record of its own (a `job`, below)
 * that waits on the semaphore's FIFO as a record waiter (sem.h): no fiber,
 * no worker, no queue slot. The task record is taken at the spawn, so
 * that nothing can fail once the unit is granted; its fn is job_run, which
 * runs the user's fn and then gives the unit back.
 *
 *   1. spawn    take a task record and a job; count the task as spawned
 *               (weft__count_spawn: wait_idle and destroy now wait for
 *               it); weft__sem_take_or_queue.
 *   2. unit     TAKEN: queue the task now (step 3). QUEUED: the release
 *               that hands the job a unit calls grant, on the releasing
 *               thread, which does step 3.
 *   3. queue    push the record on the global ring (or its priority's),
 *               without counting it again, then the StoreLoad fence and
 *               the park check of any global push (weft__submit_global).
 *   4. run      job_run frees the job, runs fn, releases the unit: the
 *               release may grant the next job (step 2 on this thread).
 *
 * Why counted at the spawn and not at the queueing: a job waiting for a
 * unit is work the scheduler has not done; counted only when queued,
 * weft_sched_wait_idle could return (and destroy go on) while jobs still
 * wait, and a grant could then touch a freed scheduler. Counted at the
 * spawn, the job keeps s alive until its task completes, and every grant
 * of a job of s comes from a release made before that, so s is valid
 * for it. The idle test's proof (task.c) holds as for any spawn: the
 * count comes first, and the completion is the task record's.
 *
 * Synchronization
 *   job         written by the spawner before take_or_queue; the
 *               semaphore's lock orders it before grant on the releasing
 *               thread; the global ring's push orders it before job_run.
 *   prio_used   as in pin.c (a hint, relaxed).
 *   Nothing else of its own: the semaphore's queue is sem.c's, the rings
 *   are global_ring.c's.
 */
#include "extspawn.h"
#include "park.h"
#include "sem.h"
#include "task.h"
#include "worker.h"

typedef struct job {
    weft__sem_rec rec;    /* on the semaphore's FIFO while it waits */
    weft_sched *s;
    weft_sem *sem;
    weft__task *t;        /* its task record: fn job_run, arg the job */
    weft_fn fn;
    void *arg;
    int prio;
} job;

/* Step 4, on a worker: the user's fn, then the unit back. */
static void job_run(void *arg)
{
    job *j = arg;
    weft_sched *s = j->s;
    weft_sem *sem = j->sem;
    weft_fn fn = j->fn;
    void *a = j->arg;
    weft__free_with(&s->cfg.allocator, j, sizeof *j);
    fn(a);
    weft_sem_release(sem);   /* may grant the next job: its step 3 runs here */
}

/* Step 3: queues a task counted already, from any thread. */
static void queue_counted(weft_sched *s, weft__task *t, int prio)
{
    weft__inject *q = &s->global;
    if (prio != WEFT_PRIORITY_NORMAL) {
        if (!atomic_load_explicit(&s->prio_used, memory_order_relaxed))
            atomic_store_explicit(&s->prio_used, true, memory_order_relaxed);   /* a hint (pin.c) */
        q = prio == WEFT_PRIORITY_HIGH ? &s->prio_high : &s->prio_low;
    }
    WEFT_TSAN_RELEASE(t);
    weft__inject_push(q, &t->node);
    atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: as after a global push in weft__submit_global */
    if (weft__notify_check(s))
        weft__notify_slow(s);
}

/* Step 2, QUEUED: a release handed the job a unit. Callable from: the
 * releasing thread, any thread, after its last access to the semaphore.
 * The job is counted as spawned, so s is valid (see the essay). */
static void grant(weft__sem_rec *r)
{
    job *j = WEFT_CONTAINER_OF(r, job, rec);
    queue_counted(j->s, j->t, j->prio);
}

int weft__spawn_sem(weft_sched *s, weft_fn fn, void *arg, const weft_spawn_opts *o)
{
    weft__worker *w = weft__tls_worker;
    if (w && w->s != s)
        w = NULL;
    if (!w && !weft__outside_enter(s))   /* the outside rule, as weft_spawn's */
        return WEFT_ESHUTDOWN;
    int rc = WEFT_ENOMEM;
    weft__task *t = weft__task_alloc(s, w);
    job *j = t ? weft__alloc_with(&s->cfg.allocator, sizeof *j) : NULL;
    if (!j) {
        if (t)
            weft__task_free(s, w, t);
        goto out;
    }
    *j = (job){ .s = s, .sem = o->sem, .t = t, .fn = fn, .arg = arg, .prio = (int)o->priority };
    j->rec.grant = grant;
    t->fn = job_run;
    t->arg = j;
    t->spawner = NULL;   /* never run inline by a waiting spawner: it may not have its unit */
    t->flags &= WEFT__TASK_POOLED;
    if (o->name) {
        t->flags |= WEFT__TASK_NAMED;
        t->data[0] = (uint64_t)(uintptr_t)o->name;
    }
    weft__count_spawn(s, w);   /* step 1: before the unit can be granted */
    if (weft__sem_take_or_queue(o->sem, &j->rec) == WEFT__SEM_TAKEN)
        queue_counted(s, t, j->prio);
    rc = WEFT_OK;
out:
    if (!w)
        weft__outside_leave(s);
    return rc;
}
