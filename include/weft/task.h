/*
 * weft/task.h: Tasks: spawn, priorities and pins, waiting, yield and sleep.
 *
 * A task is a function and its argument, run once by a thread of a
 * scheduler on a fiber, so it may block at any point and its thread goes
 * on with other work meanwhile. A spawn may carry a priority, a placement
 * hint, a name, or a pin to one thread (weft_thread_id). A task or a
 * bound thread waits for a predicate (weft_wait_until); a bound thread
 * also runs and waits for the tasks pinned to it. (Waiting for a whole
 * scheduler to go idle is weft_sched_wait_idle, in weft/sched.h.)
 * See docs/reference/task.md for blocking anywhere, fibers bounded by the
 * work, floating-point state, priorities and pins, the starvation bound,
 * and weft_wait_until's inline rule.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_TASK_H
#define WEFT_PUBLIC_TASK_H

#include "defs.h"
#include "errors.h"

WEFT_BEGIN_DECLS

/** Where a spawned task is queued (docs/reference/task.md, "Placement
 * hints"). */
typedef enum weft_hint {
    WEFT_HINT_NONE = 0,   /**< default placement */
    WEFT_HINT_NEXT,       /**< run next on this worker (LIFO slot) */
    WEFT_HINT_YIELD       /**< go behind everything queued (global ring
                               tail); a worker short of fibers queues it
                               as NONE */
} weft_hint;

/** A task's priority: orders unpinned tasks that are ready at once, HIGH
 * first, with a starvation bound (docs/reference/task.md, "Priorities"). */
typedef enum weft_priority {
    WEFT_PRIORITY_NORMAL = 0,  /**< the default (zero) */
    WEFT_PRIORITY_HIGH,        /**< before NORMAL and LOW work */
    WEFT_PRIORITY_LOW          /**< after HIGH and NORMAL work */
} weft_priority;

/** weft_spawn_ex's options; all zero = weft_spawn. */
typedef struct weft_spawn_opts {
    weft_priority priority;    /**< NORMAL */
    weft_hint hint;            /**< NONE; NEXT and YIELD apply to unpinned
                                    NORMAL tasks only (others ignore them) */
    bool pinned;               /**< false: any worker may run it */
    int thread;                /**< when pinned: the thread id that runs it,
                                    and only it */
    const char *name;          /**< static string or NULL: shown in stall
                                    reports instead of the function's
                                    address; never copied */
    struct weft_sem *sem;      /**< NULL: none; else the task waits for a
                                    unit of it before it starts, holding no
                                    fiber, and gives it back when fn
                                    returns (weft/sync.h; priority applies,
                                    hint is ignored, pinned is refused) */
} weft_spawn_opts;

/* ---- spawn ------------------------------------------------------------ */

/** Queues fn(arg) to run as a task of s; returns 0. WEFT_EINVAL: s or fn
 * NULL; WEFT_ENOMEM: no task record could be allocated; WEFT_ESHUTDOWN:
 * s is being destroyed and the caller is not one of s's threads (s's own
 * tasks may still spawn then). On a bound thread, from its own code, a
 * spawn that finds the thread's queue full runs queued tasks (on other
 * fibers of the thread) before it returns: with no workers, that queue;
 * beside workers (unless bound with WEFT_BIND_NO_HELP), the new task and
 * the newest of the queue. Callable from: any thread. */
WEFT_API int  weft_spawn(weft_sched *s, weft_fn fn, void *arg);

/** weft_spawn with a placement hint. Errors as weft_spawn, and
 * WEFT_EINVAL for a hint out of range. Callable from: any thread. */
WEFT_API int  weft_spawn_hint(weft_sched *s, weft_fn fn, void *arg, weft_hint hint);

/** weft_spawn with options; o NULL = weft_spawn. Errors as weft_spawn,
 * and WEFT_EINVAL for a priority or hint out of range, or a pin to an id
 * that is no current thread of s, or a pinned task with a semaphore
 * (nothing queued). With o->sem the task counts as spawned at once
 * (weft_sched_wait_idle and destroy wait for it) but is queued only once
 * a unit is its own, in the semaphore's FIFO order with its other
 * waiters, and o->sem must outlive the task.
 * Callable from: any thread. */
WEFT_API int  weft_spawn_ex(weft_sched *s, weft_fn fn, void *arg, const weft_spawn_opts *o);

/* ---- yield and sleep -------------------------------------------------- */

/** Lets other ready work run first. On a worker or a bound thread it puts
 * the caller's fiber behind what is queued (behind what the thread may
 * run) and returns at once when nothing else waits to run; on any other
 * thread it calls sched_yield(). Callable from: any thread. */
WEFT_API void weft_yield(void);

/** Waits at least ns nanoseconds; returns 0. On a worker or a bound
 * thread the caller's fiber is suspended and the thread runs other work
 * meanwhile (a task it runs may end after the sleep would); on any other
 * thread the thread sleeps (nanosleep, resumed after a signal).
 * Callable from: any thread. */
WEFT_API int  weft_sleep(uint64_t ns);

/* ---- pinned work on a bound thread ------------------------------------ */

/** Runs the tasks pinned to the calling bound thread, and its own fibers
 * ready again, until none is queued or budget_ns has passed (checked
 * between tasks; 0 runs at most one); returns how many pinned tasks ran.
 * WEFT_ENOTBOUND on any other thread, a worker included; 0 from a task
 * running on the bound thread (it runs nothing).
 * Callable from: a bound thread. */
WEFT_API int  weft_pinned_run(uint64_t budget_ns);

/** Waits until a task is pinned to the calling bound thread: 0 once one
 * is queued (not run), WEFT_ETIMEDOUT if none came within timeout_ns (0
 * only looks; UINT64_MAX waits for ever). Meanwhile the thread runs what
 * it runs in any wait, so a helping wait may end past its timeout.
 * WEFT_ENOTBOUND on any other thread. Callable from: a bound thread. */
WEFT_API int  weft_pinned_wait_for(uint64_t timeout_ns);

/* ---- waiting ----------------------------------------------------------- */

/** Runs other work until pred(ctx) holds; returns 0. Still-queued
 * children of the caller may run inline on its stack first, so none of
 * them may wait for what the caller does after this returns (the inline
 * rule). WEFT_EINVAL: pred NULL; WEFT_ENOTBOUND: neither a worker nor a
 * bound thread; WEFT_ENOMEM: it had to switch out and no fiber could be
 * mapped. Callable from: a task, or a bound thread. */
WEFT_API int  weft_wait_until(bool (*pred)(void *ctx), void *ctx);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_TASK_H */
