/*
 * weft/sched.h: Schedulers: create, bind threads to, destroy.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_SCHED_H
#define WEFT_PUBLIC_SCHED_H

#include "defs.h"
#include "config.h"

WEFT_BEGIN_DECLS

/* fork(2). A process may fork at any time, while other threads build,
 * run and destroy graphs and schedulers: weft takes its process-wide
 * locks around the fork (pthread_atfork), so the child inherits none held.
 * The child has only the forking thread, so nothing made before the fork
 * works there: no scheduler (its workers are gone), graph, channel or
 * primitive of the parent's may be used, waited for or destroyed in the
 * child. The child may exec (or _exit), and may make a fresh scheduler
 * with weft_sched_create and use it, with new graphs and primitives, as
 * any process would, if it was forked from a plain thread (neither a
 * worker nor bound): a child forked from a task or a bound thread still
 * runs as that worker or bound thread of a scheduler it does not have, so
 * exec and _exit are all it may do. */

/* NULL cfg = defaults. WEFT_EINVAL: out NULL, or a value of cfg listed
 * above as refused (weft_config_check says which). Callable from: any
 * thread. */
WEFT_API int  weft_sched_create(weft_sched **out, const weft_config *cfg);
/* Finishes all queued work and every suspended fiber, joins the workers,
 * frees everything. With workers = 0 the queued tasks run on the calling
 * thread (bound to s for the while if it is not already). Graph tasks
 * of s waiting for a semaphore unit (weft_task_set_semaphore) end their
 * waits at once, as a cancel of those tasks ends them: they leave the
 * semaphore's line (the waiters behind keep their order), are skipped
 * with their dependents, and their runs end (weft_graph_wait:
 * WEFT_ECANCELED); a graph task that becomes ready during destroy runs
 * if a unit is free at once, else is skipped. A release racing destroy
 * that hands such a task a unit is waited for: the task runs before
 * destroy returns. A bound
 * thread of s may destroy it, and is unbound by it. Refused with
 * WEFT_EBUSY (and a message on stderr), at once and changing nothing (no
 * queued task runs, nothing is waited for): from a worker of s or a task
 * of s; while threads other than the caller are bound to s (with
 * workers = 0 too, whatever is queued or pinned); with workers = 0,
 * queued tasks (or tasks waiting for semaphore units) and a caller that
 * is a thread of another scheduler (it cannot run them). External spawns racing it
 * return WEFT_ESHUTDOWN or run; so does weft_sched_bind. Retrying it on
 * WEFT_EBUSY while other threads unbind is safe: it goes on only once
 * each of them has stopped touching s. Once it has returned, s is
 * freed: no call on s (a plain thread's spawn, a bind) may start after
 * that; the caller must order them, as weft cannot detect such a
 * use-after-free. Callable from: any thread that is not running one of
 * s's tasks. */
WEFT_API int  weft_sched_destroy(weft_sched *s);
/* This thread may now block on weft primitives and run tasks. EBUSY if
 * it is already a worker or bound; ESHUTDOWN once s is being destroyed;
 * ENOMEM. Any number of threads may be bound at once: finding a bind's
 * id (weft_thread_id) costs O(log n) in the threads bound. */
WEFT_API int  weft_sched_bind(weft_sched *s);
/* Runs work queued on this thread first (workers = 0), the tasks pinned
 * to it, and the tasks it started while helping that are blocked (their
 * fibers are its own: unbind waits for them to end). From a task
 * running on the bound thread it does nothing (a message on stderr):
 * the task's frames live on what it would free. May race a
 * weft_sched_destroy of the scheduler retried on WEFT_EBUSY: destroy
 * frees nothing until this call has stopped touching it. Callable from:
 * the bound thread (elsewhere it does nothing). */
WEFT_API void weft_sched_unbind(void);
/* weft_sched_bind with flags (0: as weft_sched_bind).
 * WEFT_BIND_NO_HELP: while this thread waits in a weft call it runs only
 * the tasks pinned to it and its own fibers, never other work. Without
 * it (the default) a bound thread beside workers helps: while it waits
 * (weft_graph_wait, weft_wait_idle, weft_wait_until, a sync primitive, a
 * channel, weft_sleep, a parallel loop) it runs ready tasks on fibers of
 * its own, like a worker, so a main thread plus W workers uses W + 1
 * cores and a frame's run + wait costs no kernel sleep and wake-up. The
 * price of helping: a task such a thread started and that blocked stays
 * with it (fibers never move between threads), so it goes on only when
 * the thread next waits in weft or pumps (weft_run_pinned); a thread
 * that must stay responsive, or that seldom calls weft, binds with
 * WEFT_BIND_NO_HELP. Helping is the default because the main thread of
 * a frame loop, the usual bound thread, waits in weft every frame. With
 * workers = 0 the flag changes nothing: a bound thread is then the only
 * thread that runs tasks. EINVAL: unknown flags. */
#define WEFT_BIND_NO_HELP 1u
WEFT_API int  weft_sched_bind_ex(weft_sched *s, unsigned flags);
WEFT_API weft_sched *weft_sched_current(void);      /* NULL on unbound threads */
WEFT_API unsigned weft_sched_workers(const weft_sched *s);
WEFT_API int  weft_worker_index(void);  /* 0..workers-1 on a worker, else -1 */
/* The calling thread's id in its scheduler: 0..workers-1 on a worker;
 * on a bound thread an id >= workers, given at bind and kept until
 * unbind (the smallest free one: ids of unbound threads are reused);
 * -1 on any other thread. */
WEFT_API int  weft_thread_id(void);

typedef struct weft_worker_stats {
    uint64_t tasks_run;       /* all tasks this worker ran */
    uint64_t lifo_runs, local_runs, global_runs, stolen_runs;
    uint64_t steal_attempts, steals, offloads, global_grabs;
    uint64_t parks, wakeups, fibers_created, fiber_switches;
} weft_worker_stats;

WEFT_API int weft_sched_stats(const weft_sched *s, unsigned worker, weft_worker_stats *out);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_SCHED_H */
