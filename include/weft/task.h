/*
 * weft/task.h: Tasks: spawn, priorities and pins, waiting, yield and sleep.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_TASK_H
#define WEFT_PUBLIC_TASK_H

#include "defs.h"

WEFT_BEGIN_DECLS

/* ---- tasks ----------------------------------------------------------
 * Floating-point control state (rounding mode, flush-to-zero): a task
 * that changes it should put it back before it returns, as on any
 * thread pool. While a task is blocked its state is kept for it and
 * does not leak into the tasks that run meanwhile: each fiber keeps its
 * own, and a worker's fibers start with the state its thread had after
 * on_worker_start. */

/* Blocking anywhere. A task may block at any point (a sync primitive, a
 * channel, weft_sleep, weft_yield, a nested graph's or loop's wait) and
 * its worker goes on with other work on another fiber. Nothing weft
 * holds for a task's fiber to run next stays private while it is
 * blocked: a graph's next root, the rest of a parallel loop, the LIFO
 * slot are queued where other workers, or this worker's next fiber, take
 * them, so tasks may wait on each other in any order that can finish.
 * The exceptions, each documented where it applies: children that
 * weft_wait_until runs inline on the waiter's stack; the chunks of one
 * run of chunks in weft_parallel_reduce; the chunks a thread outside a
 * scheduler without workers runs itself, in order.
 *
 * Fibers. A task that blocks keeps its fiber. Once 256 fibers on one
 * worker are held by tasks (blocked, yielded, or polling in
 * weft_wait_until), the worker runs short: it lets every fiber that could
 * go on (yielded, or whose wait_until predicate holds) run before it
 * starts a new task, and a WEFT_HINT_YIELD spawn from it goes on its
 * deque like any other (depth first), so a storm of yields or of
 * breadth-first recursion needs a few hundred fibers per worker, not one
 * per task. */

typedef enum weft_hint {
    WEFT_HINT_NONE = 0,   /* default placement */
    WEFT_HINT_NEXT,       /* run next on this worker (LIFO slot) */
    WEFT_HINT_YIELD       /* go behind everything queued (global ring tail);
                             a worker short of fibers (above) queues it as
                             NONE */
} weft_hint;

/* ---- priorities and pinned tasks -------------------------------------
 * Priority orders unpinned tasks that are ready at once: a thread that
 * picks a task takes HIGH work first, then NORMAL, then LOW, looking at
 * its own queues and the scheduler's, and a thief takes HIGH work before
 * stealing NORMAL. With one worker (or none, on a bound thread), of the
 * tasks ready at the same moment, every HIGH one runs before any NORMAL
 * one, and every NORMAL one before any LOW one, but for the starvation
 * bound's turns. Of a graph's tasks, ready at the same moment are its
 * roots, made ready together by weft_graph_run (wherever it was called
 * from), and the successors made ready by one task's end. No level
 * starves: see
 * weft_config.priority_interval. Fibers that were blocked and are ready
 * again resume before new tasks of any level (they hold a stack).
 *
 * A pinned task runs on the thread whose id it names (weft_thread_id)
 * and on no other: a worker never lets it be stolen; a bound thread runs
 * it whenever it waits in any weft call, and when it pumps with
 * weft_run_pinned. A thread runs the tasks pinned to it in the order they
 * were pinned, after HIGH work and before NORMAL work (priority does not
 * reorder them). A bound thread that unbinds runs the tasks pinned to it
 * first; a pin racing the unbind is either run by it or refused with
 * EINVAL. Ids name threads, not binds: a pin made after an unbind and a
 * new bind that took the same id runs on the new thread. */
typedef enum weft_priority {
    WEFT_PRIORITY_NORMAL = 0,  /* the default (zero) */
    WEFT_PRIORITY_HIGH,
    WEFT_PRIORITY_LOW
} weft_priority;

typedef struct weft_spawn_opts {
    weft_priority priority;    /* NORMAL */
    weft_hint hint;            /* NONE; NEXT and YIELD apply to unpinned
                                  NORMAL tasks only (others ignore them) */
    bool pinned;               /* false: any worker may run it */
    int thread;                /* when pinned: the thread id that runs it,
                                  and only it */
    const char *name;          /* static string or NULL: shown in stall
                                  reports instead of the function's
                                  address; never copied */
} weft_spawn_opts;

WEFT_API int  weft_spawn(weft_sched *s, weft_fn fn, void *arg);
WEFT_API int  weft_spawn_hint(weft_sched *s, weft_fn fn, void *arg, weft_hint hint);
/* weft_spawn with options; o NULL = weft_spawn. EINVAL: as weft_spawn,
 * a priority or hint out of range, or pinned to an id that is no current
 * thread of s (nothing queued). Callable from: any thread. */
WEFT_API int  weft_spawn_ex(weft_sched *s, weft_fn fn, void *arg, const weft_spawn_opts *o);
/* On a bound thread: runs the tasks pinned to it, and its own fibers
 * that are ready again, until none is queued or budget_ns has passed
 * (the clock is checked between tasks, so one long task can overrun
 * it, and a budget of 0 runs at most one); returns how many pinned tasks
 * ran (>= 0; resumed fibers are not counted). A frame loop calls it once a
 * frame. WEFT_ENOTBOUND on any other thread (a worker included); from a
 * task running on the bound thread, 0 (it runs nothing: it would nest
 * under that task). */
WEFT_API int  weft_run_pinned(uint64_t budget_ns);
/* On a bound thread: waits until a task is pinned to it or timeout_ns
 * passes (WEFT_ETIMEDOUT; 0 only looks; UINT64_MAX waits for ever).
 * Returns 0 at once if one is queued, without running it (weft_run_pinned
 * does); while it waits, the thread runs what it runs in any wait (its
 * ready fibers, tasks pinned to it: a pin that arrives then may have run
 * by the time this returns 0; unless bound with WEFT_BIND_NO_HELP, other
 * ready work). A pin counts whoever makes it: another thread, or a task
 * this thread runs during the wait; the wait returns 0 as soon as it is
 * queued, and WEFT_ETIMEDOUT only if none came. A thread never leaves
 * a task it is running: helping, the wait ends (on a pin, or at its
 * timeout) once the task it runs then returns or blocks, which may be
 * past the timeout (bind WEFT_BIND_NO_HELP where that matters).
 * WEFT_ENOTBOUND elsewhere. */
WEFT_API int  weft_wait_pinned(uint64_t timeout_ns);
/* Until every task spawned so far, and all they spawn, has finished.
 * WEFT_EBUSY from a task of s (it would wait for itself); WEFT_ENOTBOUND
 * with workers = 0 from a thread not bound to s (nobody would run them). */
WEFT_API int  weft_wait_idle(weft_sched *s);
/* Runs other work while !pred(ctx); stack use stays bounded: the
 * caller's own children that are still queued run inline on its stack
 * (work-first, up to a fixed depth), then its fiber is switched out and
 * pred polled. So a child must not block on something its parent does
 * only after this wait returns: run inline, it would wait under the
 * parent's frame for ever. Such a parent waits with a wait group or an
 * event instead, which never runs children inline. On a bound thread
 * beside workers nothing is queued under it: its fiber is switched out,
 * and the thread runs its pinned tasks and (helping) other work while
 * pred is polled, at least every 32 us when the thread has nothing else.
 * WEFT_ENOTBOUND on a thread that is neither a worker nor bound;
 * WEFT_ENOMEM if it had to switch out and no fiber could be mapped for
 * the worker to go on with ("allocation"). */
WEFT_API int  weft_wait_until(bool (*pred)(void *ctx), void *ctx);
/* Lets other ready work run first. Callable from: any thread. On a
 * worker and on a bound thread it puts the caller's fiber behind what is
 * queued (for a bound thread beside workers: what it may run, see
 * weft_sched_bind_ex), and returns at once when nothing else waits to
 * run; on any other thread it calls sched_yield(). */
WEFT_API void weft_yield(void);
/* Waits at least ns nanoseconds. Callable from: any thread. On a worker
 * and on a bound thread it suspends the caller's fiber and the thread
 * runs other work meanwhile (a bound thread beside workers: what it may
 * run, see weft_sched_bind_ex; a task it runs may end after the sleep
 * would); on any other thread it sleeps the thread (nanosleep, resumed
 * after a signal). */
WEFT_API int  weft_sleep(uint64_t ns);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_TASK_H */
