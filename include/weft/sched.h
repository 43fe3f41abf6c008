/*
 * weft/sched.h: Schedulers: create, bind threads to, destroy.
 *
 * A scheduler owns worker threads, their queues and fibers, and the plain
 * threads bound to it. Every thread that runs tasks or blocks on weft
 * primitives belongs to one: a worker (made at create) or a bound thread
 * (weft_sched_bind). Each has an id (weft_thread_id) that pinned tasks
 * name. A scheduler made with no workers (WEFT_WORKERS_NONE) runs its
 * tasks on its bound thread whenever that thread blocks, or its spawns
 * fill its queue.
 * See docs/reference/sched.md for fork(2), binding and helping, the full
 * rules of weft_sched_destroy, and thread ids.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_SCHED_H
#define WEFT_PUBLIC_SCHED_H

#include "defs.h"
#include "errors.h"
#include "config.h"

WEFT_BEGIN_DECLS

/** One worker's counters, as weft_sched_stats copies them. */
typedef struct weft_worker_stats {
    uint64_t tasks_run;       /**< all tasks this worker ran */
    uint64_t lifo_runs;       /**< tasks it took from its LIFO slot */
    uint64_t local_runs;      /**< tasks it took from its own deque */
    uint64_t global_runs;     /**< tasks it took from the global queue */
    uint64_t stolen_runs;     /**< tasks it stole and ran */
    uint64_t steal_attempts;  /**< deques of other workers it tried */
    uint64_t steals;          /**< tries that took a task */
    uint64_t offloads;        /**< times it moved half its full deque
                                   to the global queue */
    uint64_t global_grabs;    /**< batches it took from the global queue */
    uint64_t parks;           /**< times it went to sleep with nothing to run */
    uint64_t wakeups;         /**< times it was woken for work */
    uint64_t fibers_created;  /**< fibers it mapped */
    uint64_t fiber_switches;  /**< switches between its fibers */
} weft_worker_stats;

/** weft_sched_bind_ex flag: while the thread waits in a weft call it runs
 * only the tasks pinned to it and its own fibers, never other work. */
#define WEFT_BIND_NO_HELP 1u

/* ---- create, bind, destroy ------------------------------------------ */

/** Makes a scheduler from cfg (NULL: the defaults) and starts its
 * workers; *out is the new scheduler. WEFT_EINVAL: out NULL, or a value
 * of cfg that weft_config_check refuses (it says which); WEFT_ENOMEM:
 * memory, or a thread could not be started. On failure *out (if out is
 * not NULL) is NULL.
 * Callable from: any thread. */
WEFT_API int  weft_sched_create(weft_sched **out, const weft_config *cfg);

/** Binds the calling thread to s (weft_sched_bind_ex with flags 0): it
 * may then block on weft primitives and run tasks, and gets a thread id.
 * WEFT_EINVAL: s NULL; WEFT_EBUSY: the thread is already a worker or
 * bound; WEFT_ESHUTDOWN: s is being destroyed; WEFT_ENOMEM.
 * Callable from: any thread. */
WEFT_API int  weft_sched_bind(weft_sched *s);

/** weft_sched_bind with flags: 0 (the default: while it waits in weft, a
 * thread bound beside workers helps them, running ready tasks on fibers
 * of its own) or WEFT_BIND_NO_HELP. Errors as weft_sched_bind, and
 * WEFT_EINVAL for unknown flags. Callable from: any thread. */
WEFT_API int  weft_sched_bind_ex(weft_sched *s, unsigned flags);

/** Unbinds the calling thread, once it has run the work queued on it
 * (with no workers), the tasks pinned to it, and the blocked tasks it
 * started while helping (their fibers are its own). From a task running
 * on the bound thread it does nothing but print a message on stderr.
 * Callable from: the bound thread (elsewhere it does nothing). */
WEFT_API void weft_sched_unbind(void);

/** Waits until every task spawned on s so far, and all they spawn, has
 * finished; returns 0. WEFT_EINVAL: s NULL; WEFT_EBUSY: from a task of s
 * (it would wait for itself); WEFT_ENOTBOUND: with no workers, from a
 * thread not bound to s (nobody would run them).
 * Callable from: any thread but a task of s. */
WEFT_API int  weft_sched_wait_idle(weft_sched *s);

/** Runs all queued work and every suspended fiber to completion, joins
 * the workers and frees s; returns 0. WEFT_EINVAL: s NULL. WEFT_EBUSY (a
 * message on stderr; nothing run or changed): from a worker or a task of
 * s, while threads other than the caller are bound to s, or, with no
 * workers, with work queued and a caller that is a worker or bound
 * thread of another scheduler.
 * Once it returns no call on s may start (the caller orders them).
 * Callable from: any thread not running one of s's tasks. */
WEFT_API int  weft_sched_destroy(weft_sched *s);

/* ---- queries --------------------------------------------------------- */

/** The scheduler the calling thread works for or is bound to; NULL on
 * any other thread. Callable from: any thread. */
WEFT_API weft_sched *weft_sched_current(void);

/** How many worker threads s has (0 with no workers, and for s NULL).
 * Callable from: any thread. */
WEFT_API unsigned weft_sched_workers(const weft_sched *s);

/** The calling worker's index, 0..workers-1; -1 on any other thread, a
 * bound thread included. Callable from: any thread. */
WEFT_API int  weft_thread_worker_index(void);

/** The calling thread's id in its scheduler: 0..workers-1 on a worker;
 * on a bound thread an id >= workers, given at bind and kept until
 * unbind (the smallest free one: ids of unbound threads are reused);
 * -1 on any other thread. Callable from: any thread. */
WEFT_API int  weft_thread_id(void);

/** Copies the counters of s's worker number `worker` into *out; returns
 * 0. WEFT_EINVAL: s or out NULL, or worker >= weft_sched_workers(s).
 * Callable from: any thread. */
WEFT_API int weft_sched_stats(const weft_sched *s, unsigned worker, weft_worker_stats *out);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_SCHED_H */
