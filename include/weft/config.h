/*
 * weft/config.h: A scheduler's configuration: weft_config, its defaults and checks.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_CONFIG_H
#define WEFT_PUBLIC_CONFIG_H

#include "defs.h"
#include "errors.h"
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

/* weft_config.workers: one worker per CPU the creating thread may run on
 * (its affinity mask). The default: 0. */
#define WEFT_WORKERS_AUTO 0u
/* weft_config.workers: no worker threads; tasks run on the bound thread
 * whenever it blocks in weft. */
#define WEFT_WORKERS_NONE (~0u)
/* weft_config.spin_us: never spin (a worker with nothing to run sleeps at
 * once). */
#define WEFT_SPIN_NONE (~0u)

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
    void (*task_begin)(int thread, const char *name, weft_fn fn, void *ctx);
    void (*task_end)(int thread, void *ctx);
    void (*fiber_enter)(int thread, const void *fiber, void *ctx);
    void (*fiber_leave)(int thread, const void *fiber, void *ctx);
    void (*park)(int thread, void *ctx);
    void (*unpark)(int thread, void *ctx);
    void *ctx;
} weft_observer;

/* A scheduler's configuration. Zeroed (`weft_config c = {0};`), every
 * field means its default: WEFT_CONFIG_TABLE below gives each default,
 * its bounds and the reason a value out of them is refused for. */
typedef struct weft_config {
    unsigned workers;          /* worker threads, WEFT_WORKERS_AUTO or
                                  WEFT_WORKERS_NONE */
    size_t fiber_stack_size;   /* usable bytes per fiber stack; a 64 KiB
                                  guard region is added below it */
    unsigned local_capacity;   /* slots in each worker's deque */
    unsigned global_interval;  /* a worker polls the global ring first
                                  every N picks */
    unsigned lifo_budget;      /* most consecutive runs from the LIFO slot */
    unsigned spin_us;          /* search/spin time before a worker sleeps,
                                  and before a task waiting on a channel
                                  whose worker has nothing else to run
                                  gives its worker up, at most (each
                                  thread spins as long as its recent
                                  spins needed); WEFT_SPIN_NONE: never
                                  spin */
    unsigned max_searching;    /* workers allowed to steal at once */
    uint64_t seed;             /* seeds each worker's victim order (and
                                  shuffle's order): the same seed, the same
                                  choices */
    bool shuffle;              /* a testing aid for code run on weft: ready
                                  tasks and fibers run in an order drawn
                                  from seed, so an order-dependent bug shows
                                  up under some seed and the same seed
                                  replays it; tasks submitted from other
                                  threads add their own timing */
    /* Run on each worker's thread: start before it takes any task, stop
     * after it has left the scheduler (from there weft calls act as from
     * an outside thread: a spawn returns WEFT_ESHUTDOWN). */
    void (*on_worker_start)(unsigned worker, void *ctx);
    void (*on_worker_stop)(unsigned worker, void *ctx);
    void *hook_ctx;            /* ctx of on_worker_start, _stop and on_stall */
    /* Stall report ("why is my graph hung?"). When set, a watchdog
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
     * thread with no workers, WEFT_WORKERS_NONE); threads blocked
     * elsewhere are not. A long sleep or timed wait counts as blocked:
     * pick a period above them. Text for people, one line per item; the
     * layout may change. */
    uint64_t watchdog_ns;
    /* Receives each report (NUL-terminated, valid during the call) on the
     * watchdog thread, with hook_ctx. It may call weft functions that do
     * not wait for s to end (not weft_sched_destroy(s)). NULL: the report
     * goes to stderr. */
    void (*on_stall)(const char *report, void *ctx);
    weft_allocator allocator;  /* every allocation of this scheduler (see
                                  weft/alloc.h); both hooks NULL: the
                                  process-wide allocator */
    unsigned blocking_threads; /* most threads of the blocking pool that
                                  weft_call_blocking runs calls on (made
                                  on demand; one idle for 10 s leaves) */
    unsigned priority_interval;/* the starvation bound of priorities: every
                                  priority_interval-th pick of a thread
                                  serves the lower levels first (NORMAL
                                  and LOW in turn), so the oldest queued
                                  NORMAL or LOW task waits at most
                                  2 * priority_interval picks of any one
                                  thread that picks, however much higher
                                  work arrives */
    const weft_observer *observer; /* profiler hooks (above), copied at
                                  create; NULL: none */
} weft_config;

/* weft_config's defaults and rules, one row per field in field order
 * (a rule that is not a bound follows its field). weft builds from it
 * weft_config_init, weft_config_check, what a 0 stands for at
 * weft_sched_create, and README.md's defaults table
 * (tools/config_table.c, checked by a test).
 *   FIELD(field, dflt, min, max, none, zero_means, refused)
 *     dflt        what a 0 stands for, and what weft_config_init sets;
 *     zero_means  the same in words where it is decided at create ("":
 *                 dflt says it);
 *     min, max    the accepted values besides 0 and `none`, checked
 *                 after a 0 became its default (workers: after AUTO
 *                 counted the CPUs);
 *     none        one more accepted value outside min..max (0: none);
 *     refused     what weft_config_check returns for any other value
 *                 (NULL where min..max holds every value).
 *   RULE(field, broken, refused): refused when `broken`, an expression
 *     of `c`, the config after its zeros became their defaults.
 *   OTHER(field, zero_means): a field with no rule; 0 or NULL is its
 *     default. */
#define WEFT_CONFIG_TABLE(FIELD, RULE, OTHER)                                      \
    FIELD(workers, WEFT_WORKERS_AUTO, 1, 4096, WEFT_WORKERS_NONE,                  \
          "one per CPU the creating thread may run on (WEFT_WORKERS_AUTO)",        \
          "workers: must be at most 4096 or WEFT_WORKERS_NONE "                    \
          "(WEFT_WORKERS_AUTO counts the CPUs)")                                   \
    FIELD(fiber_stack_size, WEFT_FIBER_STACK_DEFAULT, WEFT_FIBER_STACK_MIN,        \
          (uint64_t)1 << 32, 0, "256 KiB (WEFT_FIBER_STACK_DEFAULT)",              \
          "fiber_stack_size: must be 0 (the default) or from 16 KiB "              \
          "(WEFT_FIBER_STACK_MIN) to 4 GiB")                                       \
    FIELD(local_capacity, 256, 2, 1u << 20, 0, "",                                 \
          "local_capacity: must be 0 (the default) or from 2 to 2^20")             \
    RULE(local_capacity, (c->local_capacity & (c->local_capacity - 1)) != 0,       \
         "local_capacity: must be a power of two")                                 \
    FIELD(global_interval, 61, 1, ~0u, 0, "", NULL)                                \
    FIELD(lifo_budget, 3, 1, ~0u, 0, "", NULL)                                     \
    FIELD(spin_us, 50, 1, 1000000, WEFT_SPIN_NONE, "",                             \
          "spin_us: must be at most 1000000 (1 s) or WEFT_SPIN_NONE")              \
    FIELD(max_searching, 0, 1, ~0u, 0, "half the workers, at least 1", NULL)       \
    FIELD(seed, 0, 1, UINT64_MAX, 0, "a fixed seed: runs are reproducible", NULL)  \
    OTHER(shuffle, "off")                                                          \
    RULE(shuffle, c->shuffle && c->workers != WEFT_WORKERS_NONE && c->workers > 1, \
         "shuffle: needs WEFT_WORKERS_NONE or 1 worker")                           \
    OTHER(on_worker_start, "none")                                                 \
    OTHER(on_worker_stop, "none")                                                  \
    OTHER(hook_ctx, "NULL")                                                        \
    FIELD(watchdog_ns, 0, 1000000, UINT64_MAX, 0,                                  \
          "off: nothing is tracked or started",                                    \
          "watchdog_ns: must be 0 (off) or at least 1000000 (1 ms)")               \
    OTHER(on_stall, "the report goes to stderr")                                   \
    OTHER(allocator, "the process-wide allocator (both hooks NULL)")               \
    RULE(allocator, (c->allocator.alloc == NULL) != (c->allocator.free == NULL),   \
         "allocator: set both hooks (alloc and free) or neither")                  \
    FIELD(blocking_threads, 64, 1, 4096, 0, "",                                    \
          "blocking_threads: must be at most 4096 (0 is the default, 64)")         \
    FIELD(priority_interval, 16, 1, 1000000, 0, "",                                \
          "priority_interval: must be at most 1000000 (0 is the default, 16)")     \
    OTHER(observer, "none")

/** Sets every field of cfg to its default (WEFT_CONFIG_TABLE's dflt, the
 *  same as zeroing it); does nothing when cfg is NULL.
 *  Callable from: any thread. */
WEFT_API void weft_config_init(weft_config *cfg);
/** Why weft_sched_create would refuse cfg with WEFT_EINVAL: the reason of
 *  the first broken rule of WEFT_CONFIG_TABLE (a static string, e.g.
 *  "spin_us: must be at most 1000000 (1 s) or WEFT_SPIN_NONE"); NULL if
 *  cfg (or NULL, the defaults) is accepted. Checks nothing else (memory,
 *  threads) and does not change cfg.
 *  Callable from: any thread. */
WEFT_API const char *weft_config_check(const weft_config *cfg);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_CONFIG_H */
