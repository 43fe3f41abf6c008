/*
 * weft: task graphs on a fiber work-stealing scheduler.
 *
 * This is the only header a user includes. Conventions:
 *  - Every call that can fail returns int: 0 (WEFT_OK) on success, a
 *    negative WEFT_E* code on failure. A call that fails changes nothing.
 *  - Objects a user embeds (sync primitives) are caller-allocated with
 *    _init/_destroy; their bodies are public only so they can be embedded:
 *    the fields are private. Objects of variable size (scheduler, graph,
 *    channel) are made with _create and freed with _destroy.
 *  - Nothing allocates on the spawn/run path in steady state.
 *  - "Callable from" notes name the threads a call is meant for: a worker
 *    (a task running on one of the scheduler's threads), a bound thread
 *    (weft_sched_bind), or any thread.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(WEFT_STATIC) || !defined(__GNUC__)
# define WEFT_API
#else
# define WEFT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0

/* ---- errors --------------------------------------------------------- */

/* XX(name, value, message): the one table behind the codes, weft_strerror
 * and weft_err_name. */
#define WEFT_ERRNO_MAP(XX)                                                   \
    XX(EINVAL,     -1, "invalid argument")                                   \
    XX(ENOMEM,     -2, "out of memory; nothing was changed")                 \
    XX(EBUSY,      -3, "object or scheduler is in use")                      \
    XX(ECYCLE,     -4, "the graph has a cycle; nothing was run")             \
    XX(ECANCELED,  -5, "the run finished with cancelled tasks skipped")      \
    XX(ETIMEDOUT,  -6, "timed wait expired")                                 \
    XX(ECLOSED,    -7, "channel closed")                                     \
    XX(EAGAIN,     -8, "operation would block")                              \
    XX(ENOTBOUND,  -9, "calling thread is not a worker or bound thread")     \
    XX(ESHUTDOWN, -10, "scheduler is being destroyed")                      \
    XX(EIO,       -11, "writing the output failed")                         \
    XX(EFAILED,   -12, "a task failed: weft_graph_fail_code gives its code")

enum {
    WEFT_OK = 0,
#define WEFT__ERR_ENUM(name, value, msg) WEFT_##name = (value),
    WEFT_ERRNO_MAP(WEFT__ERR_ENUM)
#undef WEFT__ERR_ENUM
};
/* Each code is also a macro naming itself, as in the API contract, so
 * that `#ifdef WEFT_ECYCLE` in user code sees it; the enum stays for
 * debuggers and switch warnings. */
#define WEFT_OK WEFT_OK
#define WEFT_EINVAL WEFT_EINVAL
#define WEFT_ENOMEM WEFT_ENOMEM
#define WEFT_EBUSY WEFT_EBUSY
#define WEFT_ECYCLE WEFT_ECYCLE
#define WEFT_ECANCELED WEFT_ECANCELED
#define WEFT_ETIMEDOUT WEFT_ETIMEDOUT
#define WEFT_ECLOSED WEFT_ECLOSED
#define WEFT_EAGAIN WEFT_EAGAIN
#define WEFT_ENOTBOUND WEFT_ENOTBOUND
#define WEFT_ESHUTDOWN WEFT_ESHUTDOWN
#define WEFT_EIO WEFT_EIO
#define WEFT_EFAILED WEFT_EFAILED

/* A static English message for err (a WEFT_E* code or 0); never NULL. */
WEFT_API const char *weft_strerror(int err);
/* The code's name without prefix, e.g. "EINVAL"; "UNKNOWN" if not a code. */
WEFT_API const char *weft_err_name(int err);

/* ---- allocation ----------------------------------------------------- */

/* Every heap allocation weft makes goes through one of these hooks:
 *  - a scheduler's: weft_config.allocator, for everything the scheduler
 *    makes (the scheduler itself, its workers and bound threads, queues,
 *    task records, timer heaps, weft_parallel_reduce's scratch blocks),
 *    from create to destroy;
 *  - the process-wide one (weft_set_allocator), for graphs and channels
 *    (made without a scheduler), and for a scheduler whose config leaves
 *    both hooks NULL: it keeps the one set when it was created.
 * Not through a hook: fiber stacks (each fiber, its struct included, is
 * one mmap with a guard region), the alternate signal stacks of worker and
 * bound threads (mmap), and the threads themselves (pthread_create).
 *
 * alloc returns memory aligned to at least 64 bytes for sizes >= 64, or
 * NULL. free gets every block back through the allocator that made it,
 * with the size alloc was asked for. Both may be called from any thread
 * at once, workers included; neither may call into weft.
 *
 * When alloc returns NULL: the call that needed the memory fails with
 * WEFT_ENOMEM and changes nothing (a create leaves *out NULL). This holds
 * for create, bind, spawn, the graph calls, the parallel helpers and
 * weft_chan_create. Growing a worker's timer heap (past 256 timed waits
 * armed at once on it) fails the timed wait that needed it with
 * WEFT_ENOMEM; a sleep then sleeps the thread. Not an allocation through
 * the hook, and also never an abort: mapping a fiber stack. When a task
 * blocks and its worker has no ready or idle fiber to go on with and none
 * can be mapped (memory, or vm.max_map_count: a fiber takes two
 * mappings), the wait returns WEFT_ENOMEM at once and changes nothing
 * (wait group, event, condition variable, channel, weft_graph_wait,
 * weft_wait_until, weft_wait_idle); weft_sleep sleeps the thread,
 * weft_yield does nothing, and weft_mutex_lock, which cannot fail, sleeps
 * the thread briefly between tries. Fibers stay bounded by what the work
 * needs, not by the number of tasks started: see "tasks". */
typedef struct weft_allocator {
    void *(*alloc)(size_t size, void *ctx);
    void (*free)(void *ptr, size_t size, void *ctx);
    void *ctx;
} weft_allocator;

/* Sets the process-wide allocator (see above). NULL, or a NULL hook,
 * restores malloc/free. Callable from: any thread, before any weft object
 * that uses it exists. */
WEFT_API void weft_set_allocator(const weft_allocator *a);

/* ---- fibers --------------------------------------------------------- */

/* Default usable bytes per fiber stack. Below every stack lies a 64 KiB
 * guard region (address space, no memory), so that a frame of up to that
 * size that overflows the stack faults and is reported as an overflow
 * ("weft: fiber stack overflow", then abort). Every task on a worker, and
 * every task a bound thread runs while it blocks, runs on such a stack:
 * fiber_stack_size is what a task gets, less what weft's own frames use
 * below it (well under 4 KiB), and less what the tasks that
 * weft_wait_until runs inline on the same stack use. (Only when no fiber
 * can be mapped at all does a worker run tasks on its thread's own stack,
 * and a bound thread with no workers runs them under its own code.) */
#define WEFT_FIBER_STACK_DEFAULT ((size_t)256 * 1024)
/* Smallest accepted stack size: smaller requests fail with WEFT_EINVAL. */
#define WEFT_FIBER_STACK_MIN     ((size_t)16 * 1024)

/* ---- scheduler ------------------------------------------------------ */

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

typedef struct weft_sched weft_sched;

#define WEFT_WORKERS_AUTO (~0u)

/* Hooks for an external profiler (Tracy, Superluminal, perf, a counter
 * of your own), set as weft_config.observer: every member may be NULL,
 * each called on the thread concerned, `thread` its weft_thread_id.
 * Each costs one predictable branch when NULL, and the whole struct none
 * when the pointer is NULL. The hooks must not block in weft or call
 * back into s (they run inside the scheduler, between tasks or fibers).
 *   task_begin, task_end: around each task a thread runs (a spawned task,
 *     a graph task, a parallel loop's run of chunks): name is its graph
 *     task name (a copy, valid during the call) or weft_spawn_opts.name,
 *     else NULL; fn its function. A
 *     task that blocks ends on the thread it began on (fibers never
 *     migrate) and may see other tasks begin and end meanwhile; begin
 *     and end nest per fiber.
 *   fiber_leave, fiber_enter: a thread switches from one of its fibers
 *     to another (a task blocked or ended, a blocked one goes on):
 *     leave(from) then enter(to). A thread's first leave names its own
 *     stack, a fiber too. Tracy's fiber enter and leave map onto these.
 *   park, unpark: a thread with nothing to run sleeps in the kernel, and
 *     wakes (for work, a timer or a deadline).
 * The struct is copied at weft_sched_create. */
typedef struct weft_observer {
    void (*task_begin)(int thread, const char *name, void (*fn)(void *), void *ctx);   /* fn: a weft_fn */
    void (*task_end)(int thread, void *ctx);
    void (*fiber_enter)(int thread, const void *fiber, void *ctx);
    void (*fiber_leave)(int thread, const void *fiber, void *ctx);
    void (*park)(int thread, void *ctx);
    void (*unpark)(int thread, void *ctx);
    void *ctx;
} weft_observer;

typedef struct weft_config {
    unsigned workers;          /* worker threads; WEFT_WORKERS_AUTO (default)
                                  = the CPUs the creating thread may run on
                                  (its affinity mask); 0 = none: tasks run on the
                                  bound thread whenever it blocks; more
                                  than 4096 (AUTO's count too) = EINVAL */
    size_t fiber_stack_size;   /* usable bytes per fiber, default (and 0)
                                  WEFT_FIBER_STACK_DEFAULT; a 64 KiB guard
                                  region is added below it. Below
                                  WEFT_FIBER_STACK_MIN or above 4 GiB =
                                  EINVAL */
    unsigned local_capacity;   /* per-worker deque slots, a power of two
                                  from 2 to 2^20; default 256. Anything
                                  else (0 and 1 too) = EINVAL */
    unsigned global_interval;  /* poll the global ring first every N ticks;
                                  default 61; 0 = EINVAL */
    unsigned lifo_budget;      /* max consecutive runs from the LIFO slot;
                                  default 3; 0 = EINVAL */
    unsigned spin_us;          /* search/spin time before a worker sleeps,
                                  and before a task waiting on a channel
                                  whose worker has nothing else to run
                                  gives its worker up (0: never spin);
                                  default 50; above 1000000 = EINVAL */
    unsigned max_searching;    /* workers allowed to steal at once;
                                  0 (default) = half the workers, at least 1 */
    uint64_t seed;             /* seeds each worker's victim order; 0 (default)
                                  = a fixed seed, so runs are reproducible */
    bool shuffle;              /* a testing aid for code run on weft: ready
                                  tasks and fibers run in an order drawn
                                  from seed, so an order-dependent bug shows
                                  up under some seed and the same seed
                                  replays it. workers 0 or 1 only (EINVAL
                                  otherwise); tasks submitted from other
                                  threads add their own timing. Default
                                  false */
    /* Run on each worker's thread: start before it takes any task, stop
     * after it has left the scheduler (from there weft calls act as from
     * an outside thread: a spawn returns WEFT_ESHUTDOWN). */
    void (*on_worker_start)(unsigned worker, void *ctx);
    void (*on_worker_stop)(unsigned worker, void *ctx);
    void *hook_ctx;            /* ctx of on_worker_start, _stop and on_stall */
    /* Stall report ("why is my graph hung?"). When not 0, a watchdog
     * thread reports once when no task has completed for watchdog_ns
     * while fibers are blocked in tasks, and again only after a task
     * completes (or none is blocked) and it stalls anew. The report lists
     * each blocked fiber: what it waits on (wait group, event, mutex,
     * condition variable, channel send or receive, graph, sleep,
     * wait_until) with the object's address, the task it runs (a graph
     * task by name, else the function's address) and its worker; a graph
     * waited for is followed by how many of its run's tasks failed or
     * were skipped so far and the first failure, as `task "link" (failed:
     * code -6)` for a task's own weft_task_fail code, `(failed: EINVAL,
     * -1)` for weft's, and so is a graph task once its run (or one its
     * graph runs inside, as a module) has any; then
     * each worker: running, looking for work or parked, and its queues.
     * Fibers of weft's own threads are listed (workers, and a bound
     * thread when workers = 0); threads blocked elsewhere are not. A long
     * sleep or timed wait counts as blocked: pick a period above them.
     * Text for people, one line per item; the layout may change.
     * 0 (default) = off: nothing is tracked or started. Otherwise at
     * least 1 ms (1000000), else weft_sched_create returns WEFT_EINVAL. */
    uint64_t watchdog_ns;
    /* Receives each report (NUL-terminated, valid during the call) on the
     * watchdog thread, with hook_ctx. It may call weft functions that do
     * not wait for s to end (not weft_sched_destroy(s)). NULL (default):
     * the report goes to stderr. */
    void (*on_stall)(const char *report, void *ctx);
    weft_allocator allocator;  /* every allocation of this scheduler (see
                                  "allocation" above); both hooks NULL
                                  (default) = the process-wide allocator;
                                  only one set = WEFT_EINVAL */
    unsigned blocking_threads; /* most threads of the blocking pool that
                                  weft_call_blocking runs calls on (made
                                  on demand; one idle for 10 s leaves);
                                  default (and 0) 64; more than 4096 =
                                  EINVAL */
    unsigned priority_interval;/* the starvation bound of priorities: every
                                  priority_interval-th pick of a thread
                                  serves the lower levels first (NORMAL
                                  and LOW in turn), so the oldest queued
                                  NORMAL or LOW task waits at most
                                  2 * priority_interval picks of any one
                                  thread that picks, however much higher
                                  work arrives. Default (and 0) 16; more
                                  than 1000000 = EINVAL */
    const weft_observer *observer; /* profiler hooks (above), copied at
                                  create; NULL (default) = none */
} weft_config;

WEFT_API void weft_config_init(weft_config *cfg);   /* documented defaults */
/* NULL cfg = defaults. WEFT_EINVAL: out NULL, or a value of cfg listed
 * above as refused (weft_config_check says which). Callable from: any
 * thread. */
WEFT_API int  weft_sched_create(weft_sched **out, const weft_config *cfg);
/* Why weft_sched_create would refuse cfg with WEFT_EINVAL: a static
 * string naming the field and the rule, e.g. "lifo_budget: must be at
 * least 1" (the first broken rule, in field order); NULL if cfg (or NULL,
 * the defaults) is accepted. Checks nothing else (memory, threads).
 * Callable from: any thread. */
WEFT_API const char *weft_config_check(const weft_config *cfg);
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

/* ---- tasks ----------------------------------------------------------
 * Floating-point control state (rounding mode, flush-to-zero): a task
 * that changes it should put it back before it returns, as on any
 * thread pool. While a task is blocked its state is kept for it and
 * does not leak into the tasks that run meanwhile: each fiber keeps its
 * own, and a worker's fibers start with the state its thread had after
 * on_worker_start. */

typedef void (*weft_fn)(void *arg);

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

/* ---- fiber-aware sync: blocks the fiber, not the thread -------------
 * Usable from tasks, bound threads and plain threads alike, mixed on one
 * object: a task suspends its fiber and its worker runs other work; a
 * bound thread runs tasks while it waits (with workers = 0, every queued
 * task; beside workers, its pinned tasks and, unless bound with
 * WEFT_BIND_NO_HELP, other ready work); any other thread sleeps in the
 * kernel. Waiting allocates nothing.
 *
 * The bodies are public so they can be embedded; every field is private.
 * Initialize with _init before use; _destroy while anyone is blocked on
 * the object aborts with a message naming it. Once a wait has returned
 * WEFT_OK, the call that satisfied it (done, signal, send, unlock) no
 * longer touches the object: the waiter may destroy and free it at once
 * if nobody else still uses it.
 *
 * Timed waits (_wait_for, _recv_for, _send_for) take a relative timeout
 * in nanoseconds on CLOCK_MONOTONIC. Each wait ends exactly once: WEFT_OK
 * (notified, or the object was ready) or WEFT_ETIMEDOUT, never both and
 * never a lost notification. A timeout of 0 only polls (no wait, no fiber
 * switch), except on a condition variable, where it still releases and
 * re-takes the mutex. A wait may end later than its timeout, never
 * earlier. A task's wait (timed or not) may also return WEFT_ENOMEM at
 * once, having waited for nothing and changed nothing, when its worker
 * has no fiber to go on with and none can be mapped ("allocation");
 * a condition variable's wait then returns holding the mutex, which it
 * has released and taken again meanwhile. */

typedef struct weft_waitgroup { uint64_t private_[8]; } weft_waitgroup;
typedef struct weft_event     { uint64_t private_[8]; } weft_event;
typedef struct weft_mutex     { uint64_t private_[8]; } weft_mutex;
typedef struct weft_cond      { uint64_t private_[8]; } weft_cond;

/* Wait group: a counter; wait returns once it is zero. add(n) before
 * starting n pieces of work, done() as each ends. A total below zero is a
 * bug: debug builds (NDEBUG not defined) abort with a message naming the
 * wait group; release builds treat any total <= 0 as zero, so waiters are
 * released and later waits return at once until adds make it positive.
 * A wait group may be reused once its waiters have returned. The total
 * must stay within +-2^35 (more aborts), and at most 2^20 - 1 waiters. */
WEFT_API void weft_waitgroup_init(weft_waitgroup *wg, int64_t count);
WEFT_API void weft_waitgroup_add(weft_waitgroup *wg, int64_t delta);
WEFT_API void weft_waitgroup_done(weft_waitgroup *wg);     /* add(-1) */
WEFT_API int  weft_waitgroup_wait(weft_waitgroup *wg);
WEFT_API int  weft_waitgroup_wait_for(weft_waitgroup *wg, uint64_t timeout_ns);
WEFT_API void weft_waitgroup_destroy(weft_waitgroup *wg);

/* Event. Manual reset: signal wakes every waiter and stays set until
 * clear. Auto reset: signal wakes exactly one waiter, or, if none waits,
 * stays set until one wait consumes it. */
WEFT_API void weft_event_init(weft_event *ev, bool manual_reset, bool signalled);
WEFT_API void weft_event_signal(weft_event *ev);
WEFT_API void weft_event_clear(weft_event *ev);
WEFT_API bool weft_event_test(weft_event *ev);              /* consumes nothing */
WEFT_API int  weft_event_wait(weft_event *ev);
WEFT_API int  weft_event_wait_for(weft_event *ev, uint64_t timeout_ns);
WEFT_API void weft_event_destroy(weft_event *ev);

/* Mutex: not recursive. Under contention a locker spins briefly, then
 * sleeps in a FIFO queue; unlock wakes at most one sleeper (the oldest),
 * which then competes with running lockers. A sleeper woken and passed
 * over after waiting more than 1 ms is handed the lock directly by the
 * next unlock. Unlocking a mutex that is not locked aborts. */
WEFT_API void weft_mutex_init(weft_mutex *m);
WEFT_API void weft_mutex_lock(weft_mutex *m);
WEFT_API bool weft_mutex_trylock(weft_mutex *m);            /* true: now held */
WEFT_API void weft_mutex_unlock(weft_mutex *m);
WEFT_API void weft_mutex_destroy(weft_mutex *m);            /* must be unlocked */

/* Condition variable: wait atomically releases m (which must be held)
 * and blocks; it returns holding m again, also after WEFT_ETIMEDOUT.
 * signal wakes exactly one waiter (the oldest), broadcast every waiter
 * waiting when it is called. No spurious wake-ups, but the predicate may
 * have changed again by the time m is re-taken: wait in a loop. */
WEFT_API void weft_cond_init(weft_cond *c);
WEFT_API int  weft_cond_wait(weft_cond *c, weft_mutex *m);
WEFT_API int  weft_cond_wait_for(weft_cond *c, weft_mutex *m, uint64_t timeout_ns);
WEFT_API void weft_cond_signal(weft_cond *c);
WEFT_API void weft_cond_broadcast(weft_cond *c);
WEFT_API void weft_cond_destroy(weft_cond *c);

/* Counting semaphore: acquire takes a unit, waiting while none is left;
 * release gives one back and wakes the oldest waiter. Waiters are served
 * in FIFO order, a unit released with waiters queued goes to the oldest
 * (no barging). count from 0 to 2^62 at init (another count is a bug
 * that init, which returns nothing, reports by aborting with a message
 * naming the semaphore, as _destroy with waiters does); release past
 * 2^62 is a bug (debug builds abort). try_acquire never waits; acquire_for with
 * timeout 0 only polls. weft_task_set_semaphore (graph tasks) waits in
 * the same queue without holding a fiber; such a task that is cancelled
 * while it waits leaves the queue at once, and the waiters behind it
 * keep their order. */
typedef struct weft_sem       { uint64_t private_[8]; } weft_sem;
WEFT_API void weft_sem_init(weft_sem *s, int64_t count);
WEFT_API int  weft_sem_acquire(weft_sem *s);
WEFT_API bool weft_sem_try_acquire(weft_sem *s);                /* true: took one */
WEFT_API int  weft_sem_acquire_for(weft_sem *s, uint64_t timeout_ns);
WEFT_API void weft_sem_release(weft_sem *s);
WEFT_API void weft_sem_destroy(weft_sem *s);

/* Channel: a bounded FIFO of elements of elem_size bytes, copied in and
 * out. capacity 0 = rendezvous (a send completes when a receiver takes
 * the element). Elements from one sender arrive in the order sent. After
 * close, sends fail with WEFT_ECLOSED (also those blocked at the time:
 * their element is not delivered) and receives drain what is buffered,
 * then fail with WEFT_ECLOSED; closing twice does nothing. try_ forms
 * return WEFT_EAGAIN instead of blocking. A receiver woken by a sender on
 * its own worker runs next (so a ping-pong pair stays on one core), at
 * most lifo_budget times in a row. A task whose send or receive must wait
 * while its worker has nothing else to run waits in place for up to
 * spin_us (the worker takes other work as soon as it shows up), so a
 * peer on another worker hands over in about a cache-line transfer.
 * A sender whose rendezvous send returned, or a receiver that took the
 * last element or saw ECLOSED, may destroy the channel at once when
 * nobody else uses it (its peer may still be returning). create makes one allocation (header and
 * buffer); EINVAL if elem_size * capacity overflows. */
typedef struct weft_chan weft_chan;
WEFT_API int  weft_chan_create(weft_chan **out, size_t elem_size, size_t capacity);
WEFT_API int  weft_chan_send(weft_chan *ch, const void *elem);      /* ECLOSED */
WEFT_API int  weft_chan_recv(weft_chan *ch, void *elem);            /* ECLOSED when drained */
WEFT_API int  weft_chan_try_send(weft_chan *ch, const void *elem);  /* EAGAIN */
WEFT_API int  weft_chan_try_recv(weft_chan *ch, void *elem);        /* EAGAIN */
WEFT_API int  weft_chan_send_for(weft_chan *ch, const void *elem, uint64_t timeout_ns);
WEFT_API int  weft_chan_recv_for(weft_chan *ch, void *elem, uint64_t timeout_ns);
WEFT_API void weft_chan_close(weft_chan *ch);
WEFT_API void weft_chan_destroy(weft_chan *ch);  /* nobody may be blocked on it */

/* ---- blocking without blocking a worker ------------------------------
 * Waiting for a descriptor, a child process, or a call weft cannot see
 * into, while the worker goes on with other tasks. Linux only: epoll and
 * an eventfd per scheduler (made at the first wait from one of its tasks,
 * two descriptors, kept until destroy), pidfd_open for child processes.
 *
 * In a task (a worker, or a thread bound with workers = 0) the task's
 * fiber is suspended: its descriptor joins the scheduler's epoll set
 * (EPOLLONESHOT, for this wait only) and the worker runs other work. An
 * idle worker sleeps in epoll_wait instead of its futex while waits are
 * registered (one worker at a time; the others sleep on their futexes and
 * are woken for new work first), so readiness wakes exactly the fibers
 * waiting for it and an idle scheduler spends no CPU however many
 * descriptors are registered. Busy workers look at the epoll set without
 * sleeping (epoll_wait with timeout 0) every weft_config.global_interval
 * tasks they pick, so readiness is noticed while every worker is busy
 * too, unless one task runs for long without picking another. A bound
 * thread's own wait joins the epoll set likewise, and the thread runs
 * tasks meanwhile (weft_sched_bind_ex). On plain threads the thread
 * itself waits in ppoll(2). The events are poll(2)'s: include <poll.h> for POLLIN,
 * POLLOUT, POLLPRI, POLLRDHUP, POLLERR, POLLHUP.
 *
 * Timeouts are relative, in nanoseconds on CLOCK_MONOTONIC: 0 polls once
 * without waiting, UINT64_MAX waits for ever. A timeout racing readiness
 * ends the wait exactly once: with the ready events or with
 * WEFT_ETIMEDOUT, never both; a readiness that lost the race is not
 * consumed (descriptors are level-triggered: the next wait sees it at
 * once). A wait may end later than its timeout, never earlier.
 *
 * Closing a descriptor that a task waits on does not wake the wait: the
 * kernel drops a closed descriptor from the epoll set without a word, as
 * it does for any epoll user, so the wait ends at its timeout (or with
 * WEFT_ESHUTDOWN at destroy), as libuv and Tokio document for their
 * pollers. Wake waiters first (shutdown(2) a socket: they see POLLHUP or
 * POLLIN; close the other end of a pipe: POLLHUP), then close. Until
 * such a wait has returned, do not wait on a new descriptor that reuses
 * its number: epoll names registrations by number, and the old wait's
 * removal could take the new one's with it (that wait would then end
 * only at its timeout). A plain thread's ppoll reports POLLNVAL for a
 * descriptor closed before the call (WEFT_EINVAL). weft never touches fd
 * once the wait has returned.
 *
 * weft_sched_destroy with waits pending: once destroy has started, every
 * weft_wait_fd and weft_wait_pid of a task of the scheduler that is
 * waiting returns WEFT_ESHUTDOWN at once, and later ones look once
 * (timeout 0) and return WEFT_ESHUTDOWN instead of waiting, so that
 * destroy's "finish every task" cannot hang on input that never comes.
 * A child process whose wait returned WEFT_ESHUTDOWN is not reaped. Calls
 * of weft_call_blocking are not cancelled: destroy waits for them to
 * return (also those made during destroy by the tasks it finishes), then
 * joins the blocking pool's threads. */

/* Waits until fd is ready for events (POLLIN, POLLOUT, POLLPRI,
 * POLLRDHUP, any mix) or timeout_ns passes: returns the ready events
 * (> 0, as poll(2)'s revents: POLLERR and POLLHUP are reported whether
 * asked for or not), WEFT_ETIMEDOUT, or WEFT_EINVAL: fd < 0 or not open,
 * events with none of those bits or with another bit. A regular file is
 * always ready, as for poll(2). WEFT_ENOMEM: out of memory, of
 * descriptors (the scheduler's epoll set, or a duplicate of fd when two
 * tasks wait on the same fd at once), of epoll watches
 * (fs.epoll.max_user_watches), or no fiber for the worker to go on with
 * ("allocation"); nothing waited. WEFT_ESHUTDOWN: see destroy above.
 * Callable from: any thread. */
WEFT_API int  weft_wait_fd(int fd, short events, uint64_t timeout_ns);
/* Waits for child process pid to end, like waitpid(pid, status, 0), and
 * reaps it; *status (status may be NULL) gets waitpid's status. OK, or:
 * WEFT_ETIMEDOUT (the child runs on, not reaped), WEFT_EINVAL (pid <= 0,
 * or not a child of this process that is still to be reaped: never one,
 * reaped already, or reaped by someone else meanwhile, as with SIGCHLD
 * ignored), WEFT_ENOMEM and WEFT_ESHUTDOWN as for weft_wait_fd. The wait
 * is a weft_wait_fd on a pidfd (pidfd_open, Linux 5.3). Where pidfd_open
 * fails (older kernels, seccomp; out of descriptors) it polls instead:
 * waitpid(WNOHANG) between sleeps of 1 ms growing to 50 ms (weft_sleep,
 * so a task's worker goes on meanwhile), with no SIGCHLD handler. pid is
 * a pid_t (an int on Linux). Callable from: any thread. */
WEFT_API int  weft_wait_pid(int pid, int *status, uint64_t timeout_ns);
/* Runs fn(arg) on a thread of s's blocking pool and returns once it has:
 * for calls weft cannot see into (file I/O, DNS, a library that blocks).
 * In a task the fiber is suspended meanwhile and its worker runs other
 * work; any other thread sleeps until the call has returned. The pool
 * makes a thread when a call finds none idle, up to
 * weft_config.blocking_threads (default 64); past that, calls queue, in
 * order, and never fail for it. A pool thread idle for 10 s leaves, so
 * the pool shrinks back when the calls stop. OK, or: WEFT_EINVAL (s or fn NULL), WEFT_ENOMEM (no thread could
 * be made and none exists, or a task's worker has no fiber to go on
 * with: fn did not run), WEFT_ESHUTDOWN (from a thread that is not one
 * of s's while s is being destroyed; s's own tasks may still call it
 * then). fn must not wait for the task that called it, nor destroy s,
 * nor wait for another blocking call of s (with the pool full, that one
 * would wait for ever). Callable from: any thread. */
WEFT_API int  weft_call_blocking(weft_sched *s, weft_fn fn, void *arg);

/* ---- task graphs ----------------------------------------------------
 * A graph is a DAG of tasks, built once and run any number of times. A
 * task runs when every task it succeeds has run; a task whose function
 * is NULL is an empty task, a join point between groups. Tasks and edges
 * live in the graph: building allocates (in blocks of 1024 tasks),
 * running does not.
 *
 * Building (add, precede, succeed) is refused with WEFT_EBUSY while a run
 * is in flight, and is safe from several threads at once. Edges are
 * checked when the graph runs: a cycle makes weft_graph_run return
 * WEFT_ECYCLE and nothing runs. An edge added twice is one edge.
 *
 * Cost. A task takes 64 bytes, and its first two edges nothing more;
 * adding a task or an edge is a few nanoseconds and never a search of the
 * graph. The check before the first run of a changed graph is free when
 * every edge goes from a task to one added after it (tasks added in an
 * order they can run in, as most builders do); otherwise it visits every
 * task and edge once. A destroyed graph's blocks are kept, up to 64 MiB
 * in all, for the next graph built (with weft's default allocator only:
 * a weft_set_allocator allocator gets every block back), so a program
 * that builds a graph per frame does not wait on fresh pages each time.
 * The rest of what a destroy frees (names, long edge lists, arrays) goes
 * back to malloc, and with glibc weft hands malloc's free pages back to
 * the system (malloc_trim) once 8 MiB or more has been freed so: after
 * big graphs are destroyed, the process keeps those 64 MiB, not their
 * peak.
 *
 * Cancelling: a cancelled task is skipped, and so is every task that
 * depends on a skipped one (the tasks that run are closed under
 * predecessors, but for a condition task's picks: see there). A skipped task still counts as visited, so a run always
 * ends; weft_graph_wait then returns WEFT_ECANCELED. A cancel mark stays
 * until weft_task_reset (or weft_graph_reset for all of them).
 *
 * Failing: a task that calls weft_task_fail(err) is FAILED when it
 * returns, and every task that depends on it is skipped, as for a cancel;
 * other branches go on (or, with weft_graph_set_fail_fast, the rest of
 * the run is skipped). The run's first failure (first by completion)
 * decides its result, before ECANCELED, and says whose code it is:
 *  - a task's own weft_task_fail(err): weft_graph_wait returns
 *    WEFT_EFAILED, never err, and weft_graph_fail_code gives err exactly
 *    (any int but 0: a user's codes never read as weft's);
 *  - a failure weft made (a pinned task whose thread is gone: EINVAL; a
 *    module whose graph is running elsewhere: EBUSY, or cannot run:
 *    ECYCLE, ENOMEM): weft_graph_wait returns that WEFT_E* code, and
 *    weft_graph_fail_code the same.
 * So any result of weft_graph_wait other than OK, ECANCELED and
 * WEFT_EFAILED is weft's own code. */

typedef struct weft_graph weft_graph;
typedef struct weft_task weft_task;      /* owned by its graph */

/* Where a task stands in the run in flight, or in the latest run once it
 * has ended. */
typedef enum weft_task_state {
    WEFT_TASK_PENDING = 0,  /* not reached yet in this run, or never run */
    WEFT_TASK_RUNNING,      /* its function has started and not returned */
    WEFT_TASK_DONE,         /* ran to completion (empty tasks too) */
    WEFT_TASK_SKIPPED,      /* not invoked: cancelled, the graph was
                               cancelled, or a predecessor was skipped
                               or failed */
    WEFT_TASK_FAILED        /* ran, and called weft_task_fail */
} weft_task_state;

/* Callable from: any thread. */
WEFT_API int  weft_graph_create(weft_graph **out);
/* Frees g and every task in it. EBUSY while a run is in flight (from a
 * task of g, too); EINVAL: g NULL. Callable from: any thread, once no
 * other call on g is under way or can start: it must not race any other
 * call on g, a weft_graph_wait on its way in included (a waiter already
 * blocked when the run ended gets its result without touching g again, so
 * a run that has been waited for may be destroyed at once). A call on g,
 * or on one of its tasks, after destroy is undefined; in a checked build
 * (WEFT_CHECKS, or no NDEBUG) it aborts with "graph <address> used after
 * it was destroyed", as for sync primitives, for at least the next 4096
 * graphs destroyed (a task's call: while its node block is not yet reused
 * by another graph): such a build keeps the last 4096 destroyed headers
 * (384 bytes each on x86-64: 1.5 MiB) allocated through the allocator
 * that made them, and gives them back as later destroys push them out or
 * when weft_set_allocator changes the allocator. */
WEFT_API int  weft_graph_destroy(weft_graph *g);
/* fn NULL = empty task (a join point); NULL return = out of memory, g
 * NULL, or a run in flight (weft_graph_add_task tells which). */
WEFT_API weft_task *weft_graph_add(weft_graph *g, weft_fn fn, void *arg);
/* weft_graph_add with the reason on failure: EINVAL (g or out NULL),
 * EBUSY (a run is in flight), ENOMEM. *out is NULL on failure. */
WEFT_API int  weft_graph_add_task(weft_graph *g, weft_fn fn, void *arg, weft_task **out);
/* t runs before successor. EINVAL: NULL, t == successor (a self-edge),
 * or tasks of two different graphs; EBUSY: a run is in flight; ENOMEM.
 * A duplicate edge succeeds and changes nothing. */
WEFT_API int  weft_task_precede(weft_task *t, weft_task *successor);
/* t runs after predecessor: weft_task_precede(predecessor, t). */
WEFT_API int  weft_task_succeed(weft_task *t, weft_task *predecessor);
/* Copies name (NULL clears it) for weft_graph_dump_dot. Allowed during a
 * run. If memory runs out the old name stays. */
WEFT_API void weft_task_set_name(weft_task *t, const char *name);
/* Marks t cancelled: until weft_task_reset, every run that reaches t
 * from now on skips it and the tasks that depend on it. true: t will not
 * be invoked again before a reset, neither by the run in flight nor by
 * later runs; this is always the answer when no run is in flight. false:
 * a run is in flight and has already invoked t (t runs to completion in
 * it); the mark skips t from the next run on. Callable from: any thread,
 * tasks of the same graph included. */
WEFT_API bool weft_task_cancel(weft_task *t);
/* Clears t's cancel mark. A run in flight that has not reached t yet
 * will run it, unless it skips t for another reason: a predecessor of t
 * was skipped in that run (cancelled, or skipped in turn), or the run was
 * cancelled (weft_graph_cancel). Callable from: any thread, tasks of the
 * same graph included, during a run too. */
WEFT_API void weft_task_reset(weft_task *t);
/* Where t stands (see weft_task_state). Callable from: any thread. */
WEFT_API weft_task_state weft_task_get_state(const weft_task *t);
/* The number of tasks; 0 for NULL. Callable from: any thread, during a
 * run too. */
WEFT_API size_t weft_graph_size(const weft_graph *g);

/* In a graph task's function: the task fails with err once it returns
 * (see "Failing" above); a later call replaces err. err is the caller's
 * own code, any int but 0 (negative or positive, errno values, INT_MIN):
 * weft_graph_fail_code gives it back as is, and weft_graph_wait returns
 * WEFT_EFAILED for it. EINVAL: err 0, or the caller is not a graph task's
 * function itself: work the function hands off is not, wherever it runs
 * (a parallel loop's chunks, a spawned task, on another worker or inline
 * on the function's own fiber while it waits), nor a plain task or
 * thread; nothing changes. Callable from: any thread. */
WEFT_API int  weft_task_fail(int err);
/* fail_fast: on a run's first failure, the rest of the run is skipped as
 * weft_graph_cancel does. Default false. EINVAL: g NULL; EBUSY during a
 * run, nothing changed. */
WEFT_API int  weft_graph_set_fail_fast(weft_graph *g, bool fail_fast);
/* The task whose failure the latest run reported (the first), or NULL.
 * Callable from: any thread. */
WEFT_API weft_task *weft_graph_failed_task(const weft_graph *g);
/* The code of the latest run's first failure: the exact err its task
 * passed to weft_task_fail when weft_graph_wait returned WEFT_EFAILED
 * (a module task's: the failing task's in its graph, at any depth), the
 * WEFT_E* code weft_graph_wait returned when the failure was weft's, 0
 * when no task failed (OK, ECANCELED; NULL g). Stable once
 * weft_graph_wait has returned, until the next run starts (a refused
 * weft_graph_run, ECYCLE or ESHUTDOWN say, changes nothing). During a run
 * (a series' too): that run's first failure so far, 0 until a task has
 * failed, then that code until the run ends. Callable from: any thread. */
WEFT_API int  weft_graph_fail_code(const weft_graph *g);
/* The graph task whose function is the caller, or NULL: also NULL in
 * work the function hands off (as weft_task_fail: chunks, spawned tasks,
 * wherever they run). Callable from: any thread. */
WEFT_API weft_task *weft_task_current(void);
/* Clears every task's cancel mark (weft_task_reset on each). EINVAL: g
 * NULL; EBUSY during a run, nothing changed. */
WEFT_API int  weft_graph_reset(weft_graph *g);
/* t's successors, or predecessors, each once, in no promised order:
 * copies up to cap of them into out (out may be NULL with cap 0) and
 * returns how many there are, so that a first call with cap 0 sizes the
 * buffer. 0 for NULL. Predecessors are found by searching every task's
 * edges (no lists of them are kept): O(tasks + edges). Callable from:
 * any thread; the answer holds until the next build call on t's graph. */
WEFT_API size_t weft_task_successors(const weft_task *t, weft_task **out, size_t cap);
WEFT_API size_t weft_task_predecessors(const weft_task *t, weft_task **out, size_t cap);
/* t's name (weft_task_set_name), NULL if unnamed. The string is the
 * graph's: valid until t is renamed or its graph destroyed. */
WEFT_API const char *weft_task_name(const weft_task *t);
/* t's priority in every later run (see "priorities and pinned tasks");
 * a NULL t or an out-of-range p is ignored. A condition task's successor it picks
 * runs at its own priority. Callable from: any thread, between runs. */
WEFT_API void weft_task_set_priority(weft_task *t, weft_priority p);
/* t runs only on the thread with id `thread` (weft_thread_id), -1
 * unpinned. EINVAL: t NULL or thread < -1; EBUSY during a run. A run of
 * the graph on a scheduler of which that id is no current thread is
 * refused by weft_graph_run with WEFT_EINVAL, nothing run; if the thread
 * unbinds during a run, t fails with WEFT_EINVAL when it becomes ready
 * (its dependents are skipped as for any failure). Callable from: any
 * thread. */
WEFT_API int  weft_task_set_pin(weft_task *t, int thread);
/* t takes a unit of sem before its function starts and gives it back
 * when it returns, so at most sem's count such tasks run at once. A task
 * waiting for its unit holds no fiber and no worker: it is queued on sem
 * and submitted when a unit is released to it. A task that is skipped
 * takes no unit; a wait ends at once, without a unit, when the task or
 * its run is cancelled (weft_task_cancel, weft_graph_cancel, fail-fast,
 * a cancel of the run a module's graph runs inside), so such a run ends
 * even while every unit is held elsewhere (by the thread that waits for
 * it, too). weft_sched_destroy of the run's scheduler ends the wait the
 * same way (t skipped), and from then on t, if it becomes ready, runs
 * only with a unit free at once, else is skipped. Whatever ends t (done, failed, skipped, its pinned thread
 * gone) gives back the unit it was handed. NULL clears it. EINVAL: t
 * NULL; EBUSY during a run. sem must outlive every run of t's graph.
 * Callable from: any thread. */
WEFT_API int  weft_task_set_semaphore(weft_task *t, weft_sem *sem);
/* One cycle of g, in edge order (out[i] precedes out[i + 1], the last
 * precedes out[0]), for a caller that got ECYCLE: copies up to cap of its
 * tasks and returns its length; 0 if g is acyclic, or if the scratch it
 * needs (three words per task) could not be allocated. Callable from: any
 * thread. */
WEFT_API size_t weft_graph_find_cycle(const weft_graph *g, weft_task **out, size_t cap);

/* Starts a run on s and returns: EINVAL if s or g is NULL, EBUSY if g is
 * running, ECYCLE if it has a cycle (checked once after each change, not
 * on every run), ENOMEM if that check ran out of memory, ESHUTDOWN if s
 * is being destroyed. A finished graph may be run again. The first task
 * that becomes ready after a task ends runs next on the same worker; the
 * others are queued on that worker. Callable from: any thread, tasks
 * included (a task may run another graph and wait for it). If s has no
 * workers, the run's tasks run on a bound thread of s, while it blocks
 * (in weft_graph_wait, for one); a run started from another thread waits
 * for that, and weft_graph_wait refuses to wait for it there (ENOTBOUND,
 * below). */
WEFT_API int  weft_graph_run(weft_sched *s, weft_graph *g);
/* ---- condition tasks: branches and loops in a graph ----
 * A condition task returns the index of the one successor to run next, in
 * the order its edges were added (weft_task_successors lists them in that
 * order); any other value runs none. Its edges out are weak: they are not
 * counted as predecessors, and a weak edge runs its target each time the
 * condition picks it, at once, whatever the target's other predecessors
 * are doing. So a cycle is allowed when it passes through a weak edge:
 * that is a loop (a cycle of strong edges alone is still ECYCLE). A task
 * with both kinds of in-edges runs when its last strong predecessor ends
 * and again each time a condition picks it; each visit starts its count
 * of strong predecessors afresh (as Taskflow's tasks do). Skipping goes
 * with the count: the visit that a task's strong predecessors make ready
 * is skipped if one of them was skipped or failed (see "Cancelling"); a
 * visit a condition picks runs unless the task is cancelled or the run
 * is, whatever happened to its strong predecessors (its visit restarts
 * the count, and with it the mark a skipped predecessor left on it). A task reached
 * only by weak edges is no root: it runs only when picked. A run of a
 * graph with condition tasks ends when no task of it is running or ready
 * (not every task need have run; those that ran several times show their
 * last state), and starts by resetting every task's count (O(tasks)). A
 * cancelled or failed condition picks nothing. A task picked (or made
 * ready) again before its last pick has started runs once per pick
 * (with no memory for a record to queue it again, the picks merge into
 * one run). In a loop, cancelling a task that already ran in the run in
 * flight skips its later visits in that run (weft_task_cancel still
 * returns false: it did run). fn NULL, or the usual add failures: NULL.
 * Edges out of a condition task are kept in the order added; an edge
 * added twice is one edge. The DOT dump draws a condition as a hexagon
 * and its edges dashed, labelled with the answer that picks each.
 *
 * The do-while idiom needs an entry: a task reached only by weak edges is
 * no root and never starts a run, so
 *     init -> body -> cond,  cond -0-> body,  cond -1-> done
 * loops, where body -> cond, cond -0-> body alone runs nothing. */
typedef int (*weft_cond_fn)(void *arg);
WEFT_API weft_task *weft_graph_add_cond(weft_graph *g, weft_cond_fn fn, void *arg);

/* A module: a task of g that runs all of sub as part of g's run. When
 * the task is ready, sub's roots start (on g's scheduler, no thread
 * waits); the task is done when sub's run is: done if it ran, FAILED
 * with sub's first failure (g's dependents skipped, g's fail-fast
 * applies; g's run then ends with it as its own: WEFT_EFAILED and the
 * task's err from weft_graph_fail_code(g), or weft's code), SKIPPED if sub's run was cancelled or skipped tasks. A
 * cancel of g's run skips sub's tasks too, and a skipped module task does
 * not start sub. sub may be a module of several graphs, and run on its
 * own, but runs once at a time: a module task whose sub is running
 * elsewhere fails with EBUSY. A graph that contains itself through
 * modules (at any depth, or nested more than 64 deep) is ECYCLE at
 * weft_graph_run, with nothing run; sub's own cycles too. A task of sub
 * waiting for g (weft_graph_wait) gets EBUSY. Nothing is allocated per
 * run. sub must outlive every run and DOT dump of a graph it is a
 * module of, and not be destroyed while one is in flight. NULL: g or sub
 * NULL, sub == g, or the usual add failures. The DOT dump draws a module task as a 3D box
 * in a cluster labelled with its sub graph's size that holds the sub
 * graph's tasks and edges (modules of modules nested, up to 64 deep and
 * 2^18 tasks and edges inside modules in all; a cycle through modules,
 * or a module past those bounds, is drawn without its tasks, its label
 * saying why), ids prefixed by the module path ("m3_m1_t0": task 0 of the
 * graph that task 1 runs, inside the graph that task 3 runs); its tasks
 * show their states in sub's last run. A sub used by several module
 * tasks is drawn once, in the cluster of the first met (tasks in the
 * order added, depth first); each other one's cluster holds its task
 * alone, labelled "(drawn in cluster_<id>)", with dotted lines to the
 * sub's roots there. Cost: checking a run's modules, and the dump, visit
 * each distinct graph once, however many paths lead to it (a lattice of
 * shared modules 40 deep is 40 graphs, not 2^40). */
WEFT_API weft_task *weft_graph_add_module(weft_graph *g, weft_graph *sub);

/* A series of runs as one: weft_graph_run_n runs g n times in a row (n =
 * 0 does nothing), weft_graph_run_until runs g again after each run until
 * pred(ctx) is true (asked after each run, on the thread that ended it:
 * it must not call into g). Each next run starts on the thread that
 * ended the last, with no allocation and no round trip through the
 * caller; weft_graph_wait waits for the series and returns the last
 * run's result. A run that fails or is cancelled ends the series (a
 * cancel between two runs: ECANCELED). A graph with no task that may
 * start (empty, say) runs nothing: its series ends at once, and pred is
 * not asked. Returns as weft_graph_run; EINVAL also for pred NULL. */
WEFT_API int  weft_graph_run_n(weft_sched *s, weft_graph *g, uint64_t n);
WEFT_API int  weft_graph_run_until(weft_sched *s, weft_graph *g, bool (*pred)(void *ctx), void *ctx);
/* Until the run in flight ends (at once if none is): OK; if a task
 * failed, WEFT_EFAILED for a weft_task_fail (its err: weft_graph_fail_code)
 * or weft's own WEFT_E* code for a failure weft made (see "Failing");
 * else ECANCELED if tasks were skipped. In a task it suspends the task's fiber and the
 * worker runs other tasks; on a bound thread of a scheduler without
 * workers it runs the tasks; on other threads it sleeps. Several threads
 * may wait at once. EINVAL: g NULL. EBUSY, at once, from a task of g's
 * run in flight (it would wait for its own end), also after it has
 * blocked, and from work such a task runs nested on its own fiber; tasks
 * of other graphs and plain tasks wait as usual. ENOTBOUND, at once, if
 * the run's scheduler has no workers and the caller is neither its bound
 * thread nor one of its tasks (nobody would run the tasks while it
 * sleeps; as weft_wait_idle). ENOMEM, at once, from a task whose worker
 * has no fiber to go on with ("allocation"); the run goes on. Callable
 * from: any thread. */
WEFT_API int  weft_graph_wait(weft_graph *g);
/* weft_graph_wait with a timeout: as weft_graph_wait (same results, same
 * refusals, same way of waiting: a bound thread runs its pinned tasks
 * and, helping, other work meanwhile), or WEFT_ETIMEDOUT once timeout_ns
 * has passed with the run still in flight (it goes on; nothing changes).
 * 0 only looks: ETIMEDOUT while a run is in flight, else the last run's
 * result at once. UINT64_MAX waits for ever. A run_n or run_until series
 * counts as one run: ETIMEDOUT until its last run has ended. A frame
 * loop waits with it up to the frame's end, then pumps (weft_run_pinned).
 * A bound thread that helps ends the wait once the task it runs at the
 * timeout returns or blocks (as weft_wait_pinned). A wait that ends
 * ETIMEDOUT touches g until it returns, so weft_graph_destroy must not
 * race it (one the run's end woke does not touch g again, as for
 * weft_graph_wait). Callable from: any thread. */
WEFT_API int  weft_graph_wait_for(weft_graph *g, uint64_t timeout_ns);
/* Has g's run ended? true with no run in flight (never run, or the last
 * one ended; also for g NULL), false from weft_graph_run's start until
 * the run ends, and through a whole run_n or run_until series (false
 * between two of its runs too). Never blocks and runs nothing. Once it
 * returns true, what the run's tasks wrote is visible to the caller and
 * weft_graph_wait returns the run's result at once (unless another run
 * was started meanwhile). Callable from: any thread. */
WEFT_API bool weft_graph_done(const weft_graph *g);
/* Skips every task of the run in flight that has not started yet; tasks
 * already running finish. true if a run was in flight. Later runs are not
 * affected. */
WEFT_API bool weft_graph_cancel(weft_graph *g);
/* Writes g as Graphviz DOT: a node per task (its name, or "task N"; empty
 * tasks as diamonds) and an edge per dependency; tasks that ran, failed
 * (in red) or were skipped or are running show it in their label and
 * colour; modules as clusters holding their sub graphs' tasks (see
 * weft_graph_add_module). The text is made in memory first (one block
 * through the allocator hook, and one more listing the graphs drawn when
 * there are over 32) and then written, so a slow stream holds
 * up no run. Write errors show in ferror(out). EINVAL: NULL; ENOMEM
 * (nothing written). Callable from: any thread, also while g runs (the
 * states are then a snapshot, each task's taken at its own moment). */
WEFT_API int  weft_graph_dump_dot(const weft_graph *g, FILE *out);

/* ---- parallel helpers ----------------------------------------------- */

/* Both cut [begin, end) into chunks of `grain` iterations (the last one
 * shorter) and hand each chunk to body, on whichever worker is free.
 * Before a chunk runs, everything after it has been offered to other
 * workers, so one slow chunk holds up nothing but itself: uneven loops
 * balance. grain 0 picks one (parallel_for: about 64 chunks per
 * worker). They return once every chunk has run. Callable from: a task
 * (its fiber waits, its worker runs other work); a bound thread, which
 * with no workers runs the chunks itself (and other work while a chunk
 * blocks), and beside workers queues them and, helping, runs chunks and
 * other work while it waits (bound with WEFT_BIND_NO_HELP: only its
 * pinned tasks); or any other thread. Such a thread runs chunks itself when a CPU is spare
 * for it: about 1/(workers + 1) of them while the workers run the rest
 * and help with its share once free (fewer workers than the CPUs s's
 * creator may run on); with a worker per CPU it sleeps until they are
 * done. If s has no workers, such a thread runs every chunk itself, in
 * order (so there a chunk must not wait for a later one: bind the thread
 * to let the chunks run as tasks). begin == end is a no-op; EINVAL: s or
 * a function NULL, or begin > end; ESHUTDOWN: from outside s (not a task
 * or bound thread of s) while s is being destroyed. Bodies may spawn,
 * block and nest loops, and a chunk may wait for any other chunk of the
 * same loop (as a task may wait for another: while a chunk is blocked
 * the chunks after it are queued, one worker or many), except on such an
 * outside thread, and in parallel_reduce for a later chunk of its own run
 * of chunks (below). */
typedef void (*weft_range_fn)(size_t begin, size_t end, void *arg);
typedef void (*weft_reduce_fn)(size_t begin, size_t end, void *partial, void *arg);
typedef void (*weft_combine_fn)(void *into, const void *from, void *arg);

/* Calls body(b, e, arg) once per chunk, with e - b <= grain. */
WEFT_API int weft_parallel_for(weft_sched *s, size_t begin, size_t end, size_t grain,
                               weft_range_fn body, void *arg);   /* grain 0 = auto */

/* Reduces [begin, end) into result (result_size bytes; its old content is
 * ignored). body(b, e, partial, arg) folds a chunk into partial, which
 * starts as a copy of identity; combine(into, from, arg) folds from into
 * into (associative; identity must be its neutral element). Chunks are
 * grouped into at most 1024 runs of consecutive chunks, each folded in
 * order from the identity by one fiber (so with more than 1024 chunks a
 * chunk must not wait for a later one of its run; below that every chunk
 * is a run of its own), and the runs are combined in order on the
 * calling thread. The grouping depends on the range and grain only, so
 * the result is the same on every run and at every worker count, for
 * floating-point sums too (grain 0 aims at 1024 chunks, whatever the
 * worker count). The partials take 64-byte-rounded result_size per run of
 * chunks: up to 2 KiB on the caller's stack, beyond that in scratch
 * blocks the scheduler keeps and reuses (the first calls may allocate
 * them; ENOMEM if they cannot). */
WEFT_API int weft_parallel_reduce(weft_sched *s, size_t begin, size_t end, size_t grain,
                                  void *result, size_t result_size, const void *identity,
                                  weft_reduce_fn body, weft_combine_fn combine, void *arg);

/* ---- observability -------------------------------------------------- */

typedef struct weft_worker_stats {
    uint64_t tasks_run;       /* all tasks this worker ran */
    uint64_t lifo_runs, local_runs, global_runs, stolen_runs;
    uint64_t steal_attempts, steals, offloads, global_grabs;
    uint64_t parks, wakeups, fibers_created, fiber_switches;
} weft_worker_stats;

WEFT_API int weft_sched_stats(const weft_sched *s, unsigned worker, weft_worker_stats *out);

/* ---- tracing ---------------------------------------------------------- */

/* Recording what every thread of s does: each worker and bound thread
 * writes events into a buffer of its own of events_per_thread entries
 * (rounded up to a power of two, 32 bytes each, plus 64 KiB for copies
 * of graph task names), with no lock and no allocation per event; when a
 * buffer is full its oldest events are dropped and counted. Events:
 * tasks begin and end (with the graph task name, weft_spawn_opts.name,
 * else the function's symbol), a fiber suspends (with what it waits on)
 * and resumes (with an arrow from the thread that made it ready), steals
 * (from whom), parks and wake-ups, graph runs, parallel loop chunks and
 * the zones of weft_trace_begin/end. Timestamps come from one monotonic
 * clock (the TSC where it is invariant), converted to ns when written.
 *
 * weft_trace_start begins a new recording (what an earlier one held is
 * discarded): WEFT_EINVAL for s NULL or events_per_thread outside
 * [16, 2^24], WEFT_EBUSY if s is recording already, WEFT_ENOMEM with
 * nothing changed if the buffers cannot be had. Buffers are kept for the
 * next start (one asking for fewer events reuses them whole) and freed
 * with s. A thread that binds while s records is
 * recorded from then on (its buffer is made at bind; none if that
 * fails, counted as dropped). weft_trace_stop ends recording (WEFT_OK
 * if it was not recording; WEFT_EINVAL for s NULL); an event its thread
 * had begun to write as stop returned is not written out. Both callable from
 * any thread, tasks included, with work running.
 *
 * Recording off costs one predictable branch at a task start, a fiber
 * switch and a wake-up. */
WEFT_API int  weft_trace_start(weft_sched *s, size_t events_per_thread);
WEFT_API int  weft_trace_stop(weft_sched *s);

/* Writes the events of the last recording (so far, if it still records)
 * as Chrome trace-event JSON, which Perfetto UI (ui.perfetto.dev) and
 * chrome://tracing open. Layout: an object {"traceEvents": [...],
 * "displayTimeUnit": "ns", "otherData": {...}}; pid 1; tid = the
 * thread's weft_thread_id, named "worker N" or "bound thread N" by
 * "thread_name" metadata events. Times in microseconds from the start.
 *   - A task run is one complete event ("ph":"X", "cat":"task") or, if it
 *     blocked, one per stretch it ran; a run's events share args.run (a
 *     number unique in the file). A stretch that ended because the fiber
 *     blocked has args.wait (what it waited on: "channel receive",
 *     "channel send", "event", "mutex", "semaphore", "sleep", "yield",
 *     ...); a stretch after the first begins with the arrow of
 *     its wake-up ("ph":"s" on the waker's thread, "ph":"f" here, same
 *     id, "cat":"wake") when the waker was a thread of s.
 *   - Zones of weft_trace_begin/end ("cat":"zone") and parallel loop
 *     chunks ("cat":"chunk", args.begin/end) are complete events nested
 *     in their task's; a graph run is an async pair ("ph":"b"/"e",
 *     "cat":"graph", id the run's, a string), written by the thread that
 *     ended it, from the moment it was queued (or the recording began).
 *   - Instant events ("ph":"i"): "steal" (args.from, the victim's id),
 *     "park" and "wake" ("cat":"sched").
 *   - Counter "queue" ("ph":"C"): the thread's own queue length (deque
 *     and LIFO slot, capped at 255) at each task it picks.
 * otherData: "events" (the JSON events in traceEvents, metadata
 * included), "dropped" (JSON events lost to full buffers, all threads,
 * in the same unit: a zone, a chunk or an instant 1, a task run 2, its
 * first stretch and its "queue" counter, a graph run 2; a later stretch
 * of a task that blocked is not counted; plus 1 for each thread whose
 * buffer could not be made), "clock" ("tsc", "cntvct" or "monotonic").
 * For a stopped recording, dropped + events is what the file would hold
 * with buffers large enough (save those stretches).
 * A task still running when written (or when stop came) ends at the last
 * event of its thread. Names are written as UTF-8 (bytes that are not
 * show as U+FFFD); a graph task's name is kept up to 255 bytes; a graph
 * task with no function draws nothing. WEFT_EINVAL for s or out NULL;
 * WEFT_ENOMEM if the writer's scratch (one pass over the events, growing
 * with the fibers and nesting seen) cannot be had: what is written is
 * still JSON, missing events; WEFT_EIO if writing to out fails. Without any recording: a valid file with no events.
 * Callable from any thread; recording goes on meanwhile. */
WEFT_API int  weft_trace_write(weft_sched *s, FILE *out);

/* A zone inside a task (or in a bound thread's own code): nested, name a
 * static string (NULL shows as "zone"). Recorded only while the
 * calling thread's scheduler records; a no-op on other threads. An end
 * without its begin is ignored when written. */
WEFT_API void weft_trace_begin(const char *name);
WEFT_API void weft_trace_end(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
