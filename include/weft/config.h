/*
 * weft/config.h: A scheduler's configuration: weft_config, its defaults and checks.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_CONFIG_H
#define WEFT_PUBLIC_CONFIG_H

#include "defs.h"
#include "alloc.h"

WEFT_BEGIN_DECLS

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
/* Why weft_sched_create would refuse cfg with WEFT_EINVAL: a static
 * string naming the field and the rule, e.g. "lifo_budget: must be at
 * least 1" (the first broken rule, in field order); NULL if cfg (or NULL,
 * the defaults) is accepted. Checks nothing else (memory, threads).
 * Callable from: any thread. */
WEFT_API const char *weft_config_check(const weft_config *cfg);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_CONFIG_H */
