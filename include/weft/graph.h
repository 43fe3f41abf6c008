/**
 * @file
 * weft/graph.h: Task graphs: build, run, wait, cancel, fail, inspect.
 * Part of weft.h, the header users include; includable alone.
 *
 * A graph is a DAG of tasks, built once and run any number of times: a
 * task runs when every task it succeeds has run, and a task whose function
 * is NULL is an empty task, a join point. Condition tasks add branches and
 * loops; a module task runs a whole graph as one task. Building allocates
 * (and is refused with WEFT_EBUSY during a run); running does not. A run's
 * result: OK, WEFT_ECANCELED (tasks were skipped), WEFT_EFAILED (a task
 * called weft_task_fail: its code from weft_graph_fail_code), or any other
 * WEFT_E* code for a failure weft made.
 *
 * See docs/reference/graph.md for building costs and the memory kept, the
 * ready order, the cancelling and failing rules, condition tasks and the
 * do-while idiom, modules, run_n/run_until series, waiting and timeouts,
 * destroy and use-after-destroy checks, and the DOT drawing.
 */
#ifndef WEFT_PUBLIC_GRAPH_H
#define WEFT_PUBLIC_GRAPH_H

#include <stdio.h>

#include "defs.h"     /* weft_sched, weft_fn, WEFT_API */
#include "errors.h"   /* WEFT_OK and the codes the calls return */
#include "task.h"   /* weft_priority */
#include "sync.h"   /* weft_sem */

WEFT_BEGIN_DECLS

/* ---- types ----------------------------------------------------------- */

/** A graph of tasks (weft_graph_create, weft_graph_destroy). */
typedef struct weft_graph weft_graph;
/** A task of a graph, owned by its graph: freed with it. */
typedef struct weft_task weft_task;
/** The sub-graph a subflow task builds while its function runs
 * (weft_graph_add_subflow), owned by the task. */
typedef struct weft_subflow weft_subflow;

/** Where a task stands in the run in flight, or in the latest run once it
 * has ended. */
typedef enum weft_task_status {
    WEFT_TASK_PENDING = 0,  /**< not reached yet in this run, or never run */
    WEFT_TASK_RUNNING,      /**< its function has started and not returned */
    WEFT_TASK_DONE,         /**< ran to completion (empty tasks too) */
    WEFT_TASK_SKIPPED,      /**< not invoked: cancelled, the graph was
                                 cancelled, or a predecessor was skipped
                                 or failed */
    WEFT_TASK_FAILED        /**< ran, and called weft_task_fail */
} weft_task_status;

/** A condition task's function: returns the index of the one successor to
 * run next, in the order its edges were added; any other value runs none. */
typedef int (*weft_cond_fn)(void *arg);

/** The most successors one multi-condition task's answer can pick. */
#define WEFT_MULTI_COND_MAX 64

/** A multi-condition task's function: writes the indexes of the
 * successors to run next (in the order its edges were added) into
 * picks[0..cap) and returns how many it wrote; cap is the task's number
 * of successors, at most WEFT_MULTI_COND_MAX. Indexes out of range, and
 * repeats, are ignored. */
typedef size_t (*weft_multi_cond_fn)(void *arg, int *picks, size_t cap);

/** A subflow task's function: sf is its sub-graph, empty at each call. */
typedef void (*weft_subflow_fn)(weft_subflow *sf, void *arg);

/* ---- create and build ------------------------------------------------ */

/** Makes an empty graph in *out. WEFT_OK; EINVAL: out NULL; ENOMEM (*out
 * NULL on failure).
 * Callable from: any thread. */
WEFT_API int  weft_graph_create(weft_graph **out);

/** Adds a task running fn(arg) (fn NULL: an empty task, a join point).
 * Returns the task, or NULL: out of memory, g NULL, or a run in flight
 * (weft_graph_add_task tells which).
 * Callable from: any thread, several at once. */
WEFT_API weft_task *weft_graph_add(weft_graph *g, weft_fn fn, void *arg);

/** weft_graph_add with the reason on failure: EINVAL (g or out NULL),
 * EBUSY (a run is in flight), ENOMEM. *out is NULL on failure.
 * Callable from: any thread, several at once. */
WEFT_API int  weft_graph_add_task(weft_graph *g, weft_fn fn, void *arg, weft_task **out);

/** Adds a condition task: fn(arg) picks which one successor runs next, and
 * its edges out are weak, so they may close a loop (rules: reference page,
 * "Condition tasks"). NULL: fn NULL, or the usual add failures.
 * Callable from: any thread, several at once. */
WEFT_API weft_task *weft_graph_add_cond(weft_graph *g, weft_cond_fn fn, void *arg);

/** Adds a multi-condition task: as weft_graph_add_cond, but fn picks any
 * number of its successors, each run next (rules: reference page,
 * "Multi-condition tasks"). NULL: fn NULL, or the usual add failures.
 * Callable from: any thread, several at once. */
WEFT_API weft_task *weft_graph_add_multi_cond(weft_graph *g, weft_multi_cond_fn fn, void *arg);

/** Adds a subflow task: at each visit fn(sf, arg) builds a sub-graph in
 * sf, which runs once fn returns; the task ends (its successors go on)
 * when that sub-graph's run ends, and fails or is skipped as it does. No
 * fiber waits for it. NULL: fn NULL, or the usual add failures. The
 * sub-graph is made by fn's first add (out of memory there: that add
 * returns NULL). Rules: reference page, "Subflows".
 * Callable from: any thread, several at once. */
WEFT_API weft_task *weft_graph_add_subflow(weft_graph *g, weft_subflow_fn fn, void *arg);

/** Adds a module task: it runs all of sub as part of g's run, and ends as
 * sub's run does; sub runs once at a time (else the task fails with EBUSY)
 * and must outlive every run and DOT dump of g. NULL: g or sub NULL,
 * sub == g, or the usual add failures. Rules: reference page, "Modules".
 * Callable from: any thread, several at once. */
WEFT_API weft_task *weft_graph_add_module(weft_graph *g, weft_graph *sub);

/** Adds the edge t -> successor: t runs before successor. EINVAL: NULL,
 * t == successor (a self-edge) unless t is a condition task (its edges
 * are weak: the self-edge is a loop), or tasks of two different graphs;
 * EBUSY: a run is in flight; ENOMEM. A duplicate edge succeeds and
 * changes nothing.
 * Callable from: any thread, several at once. */
WEFT_API int  weft_task_precede(weft_task *t, weft_task *successor);

/** t runs after predecessor: weft_task_precede(predecessor, t), same
 * results.
 * Callable from: any thread, several at once. */
WEFT_API int  weft_task_succeed(weft_task *t, weft_task *predecessor);

/* ---- subflows ---------------------------------------------------------- */

/** Adds a task to sf, as weft_graph_add (edges: weft_task_precede between
 * tasks of sf). NULL: sf NULL, sf's sub-graph is running or has run
 * (after weft_subflow_join started it, or fn returned), or out of memory. The
 * task is sf's until sf is emptied (the task's next visit, or a join).
 * Callable from: any thread, while the subflow task's function runs. */
WEFT_API weft_task *weft_subflow_add(weft_subflow *sf, weft_fn fn, void *arg);

/** weft_graph_add_cond in sf; results as weft_subflow_add.
 * Callable from: any thread, while the subflow task's function runs. */
WEFT_API weft_task *weft_subflow_add_cond(weft_subflow *sf, weft_cond_fn fn, void *arg);

/** weft_graph_add_multi_cond in sf; results as weft_subflow_add.
 * Callable from: any thread, while the subflow task's function runs. */
WEFT_API weft_task *weft_subflow_add_multi_cond(weft_subflow *sf, weft_multi_cond_fn fn, void *arg);

/** A subflow task in sf: subflows nest to any depth. Results as
 * weft_subflow_add.
 * Callable from: any thread, while the subflow task's function runs. */
WEFT_API weft_task *weft_subflow_add_subflow(weft_subflow *sf, weft_subflow_fn fn, void *arg);

/** Runs what sf holds now and waits for it, then empties sf: on a
 * worker the caller first runs, on its own stack, what of it is still
 * queued on its own worker (work-first, as weft_wait_until), and its
 * fiber waits (its worker goes on) only for what other workers took.
 * Tasks added later form a new
 * sub-graph, run at the next join or when fn returns. Returns that run's
 * result as weft_graph_wait does; on a failure the subflow task fails
 * with it too (as weft_task_fail). OK at once if sf is empty. EINVAL: sf
 * NULL, or the caller is not sf's task's function itself; ECYCLE,
 * ENOMEM as weft_graph_run.
 * Callable from: the subflow task's function. */
WEFT_API int  weft_subflow_join(weft_subflow *sf);

/** The subflow of the subflow task whose function is the caller, or NULL
 * (also in work that function hands off).
 * Callable from: any thread. */
WEFT_API weft_subflow *weft_subflow_current(void);

/* ---- task attributes ------------------------------------------------- */

/** Copies name (NULL clears it) for weft_graph_dump_dot. If memory runs
 * out the old name stays.
 * Callable from: any thread, during a run too. */
WEFT_API void weft_task_set_name(weft_task *t, const char *name);

/** Sets t's priority in every later run (how priorities order work: see
 * docs/reference/task.md). A NULL t or an out-of-range p is ignored.
 * Callable from: any thread, between runs. */
WEFT_API void weft_task_set_priority(weft_task *t, weft_priority p);

/** t runs only on the thread with id `thread` (weft_thread_id); -1
 * unpins. EINVAL: t NULL or thread < -1; EBUSY during a run. A run where
 * no current thread has that id is refused (WEFT_EINVAL); if the thread
 * unbinds during a run, t fails with WEFT_EINVAL.
 * Callable from: any thread. */
WEFT_API int  weft_task_set_pin(weft_task *t, int thread);

/** t takes a unit of sem before its function starts and gives it back when
 * it ends, so at most sem's count such tasks run at once; NULL clears it.
 * EINVAL: t NULL; EBUSY during a run. sem must outlive every run of t's
 * graph. (How a waiting task is held and when its wait ends: reference
 * page, "Task attributes".)
 * Callable from: any thread. */
WEFT_API int  weft_task_set_semaphore(weft_task *t, weft_sem *sem);

/** Sets whether g's run skips the rest of its tasks, as weft_graph_cancel
 * does, on its first failure. Default false. EINVAL: g NULL; EBUSY during
 * a run.
 * Callable from: any thread. */
WEFT_API int  weft_graph_set_fail_fast(weft_graph *g, bool fail_fast);

/* ---- run ------------------------------------------------------------- */

/** Starts a run of g on s and returns at once. WEFT_OK; EINVAL: s or g
 * NULL, or a pinned task's thread is not on s (nothing run); EBUSY: g is
 * running; ECYCLE: g has a cycle (checked once after each change); ENOMEM:
 * that check ran out of memory; ESHUTDOWN: s is being destroyed. A
 * finished graph may be run again.
 * Callable from: any thread, tasks included (with no workers, the tasks
 * run on a bound thread of s while it blocks). */
WEFT_API int  weft_graph_run(weft_sched *s, weft_graph *g);

/** Runs g n times in a row as one series (n = 0 does nothing); a failed
 * or cancelled run ends it. Returns as weft_graph_run.
 * Callable from: any thread, tasks included. */
WEFT_API int  weft_graph_run_n(weft_sched *s, weft_graph *g, uint64_t n);

/** Runs g, then again after each run until pred(ctx) is true (asked on
 * the thread that ended the run; it must not call into g); a failed or
 * cancelled run ends it. g runs at least once: pred is first asked after
 * the first run (weft_graph_run_while asks first). Returns as
 * weft_graph_run; EINVAL also for pred NULL.
 * Callable from: any thread, tasks included. */
WEFT_API int  weft_graph_run_until(weft_sched *s, weft_graph *g, bool (*pred)(void *ctx), void *ctx);

/** Runs g as long as pred(ctx) is true, asking before every run, the
 * first included (on the caller's thread; later on the thread that ended
 * the run; it must not call into g): pred false at once runs g 0 times
 * and returns OK. A failed or cancelled run ends it. Returns as
 * weft_graph_run; EINVAL also for pred NULL.
 * Callable from: any thread, tasks included. */
WEFT_API int  weft_graph_run_while(weft_sched *s, weft_graph *g, bool (*pred)(void *ctx), void *ctx);

/** weft_graph_run, except that a run requested while g runs (or runs a
 * series) is queued behind it instead of refused with EBUSY: it starts
 * when the runs before it end, and weft_graph_wait waits for every queued
 * run too, returning the last one's result. A failed or cancelled run
 * drops the runs queued behind it (weft_graph_cancel ends them all).
 * WEFT_OK: started or queued; EINVAL as weft_graph_run, or g runs on
 * another scheduler; EBUSY: g runs as a module or subflow of another
 * graph (only a run of its own queues); ECYCLE, ENOMEM, ESHUTDOWN as
 * weft_graph_run. weft_graph_run keeps EBUSY, for callers that want to
 * know the graph is busy.
 * Callable from: any thread, tasks included. */
WEFT_API int  weft_graph_run_queued(weft_sched *s, weft_graph *g);

/* ---- wait, cancel, fail ------------------------------------------------ */

/** Waits until the run (or series, and the runs queued behind it) in
 * flight ends, at once if none is, and returns its result: OK,
 * WEFT_EFAILED (weft_task_fail), weft's own WEFT_E* code for a failure
 * weft made, else ECANCELED if tasks were skipped.
 * EINVAL: g NULL; EBUSY: called from g's own run; ENOTBOUND: g runs on a
 * scheduler with no workers and the caller is neither its bound thread
 * nor its task; ENOMEM: a task's worker has no fiber to go on with.
 * Callable from: any thread; a task's wait suspends only its fiber. */
WEFT_API int  weft_graph_wait(weft_graph *g);

/** weft_graph_wait with a timeout: the same results and refusals, or
 * WEFT_ETIMEDOUT once timeout_ns has passed with the run in flight (it goes
 * on; nothing changes). 0 only looks; UINT64_MAX waits for ever. A wait
 * that times out touches g until it returns: weft_graph_destroy must not
 * race it.
 * Callable from: any thread. */
WEFT_API int  weft_graph_wait_for(weft_graph *g, uint64_t timeout_ns);

/** Has g's run ended? true with no run in flight (also for g NULL), false
 * from weft_graph_run until the run (or the whole series, and every run
 * queued behind it) ends. Never
 * blocks; once true, what the run's tasks wrote is visible to the caller.
 * Callable from: any thread. */
WEFT_API bool weft_graph_done(const weft_graph *g);

/** Skips every task of the run in flight that has not started yet; tasks
 * already running finish. true if a run was in flight. Later runs are not
 * affected.
 * Callable from: any thread, tasks of g included. */
WEFT_API bool weft_graph_cancel(weft_graph *g);

/** Marks t cancelled until weft_task_reset: every run that reaches t from
 * now on skips it and the tasks that depend on it. true: t will not be
 * invoked again before a reset (always so with no run in flight); false:
 * the run in flight has already invoked t (it runs to completion).
 * Callable from: any thread, tasks of the same graph included. */
WEFT_API bool weft_task_cancel(weft_task *t);

/** Clears t's cancel mark; a run in flight that has not reached t yet runs
 * it, unless it skips t for another reason (a skipped predecessor, a
 * cancelled run).
 * Callable from: any thread, tasks of the same graph included, during a
 * run too. */
WEFT_API void weft_task_reset(weft_task *t);

/** Clears every task's cancel mark (weft_task_reset on each). EINVAL: g
 * NULL; EBUSY during a run.
 * Callable from: any thread. */
WEFT_API int  weft_graph_reset(weft_graph *g);

/** Makes the calling graph task FAILED with err once it returns (its
 * dependents are skipped); a later call replaces err. err: any int but 0,
 * given back as is by weft_graph_fail_code. EINVAL: err 0, or the caller
 * is not a graph task's function itself (work it hands off is not).
 * Callable from: any thread; succeeds only in a graph task's function. */
WEFT_API int  weft_task_fail(int err);

/** The task whose failure the latest run reported (the first), or NULL.
 * Callable from: any thread. */
WEFT_API weft_task *weft_graph_failed_task(const weft_graph *g);

/** The code of the latest run's first failure: the exact err passed to
 * weft_task_fail (when the run's result was WEFT_EFAILED), the WEFT_E*
 * code of a failure weft made, 0 if no task failed or g is NULL. Stable
 * from weft_graph_wait's return until the next run starts.
 * Callable from: any thread, during a run too (its first failure so far). */
WEFT_API int  weft_graph_fail_code(const weft_graph *g);

/* ---- queries ----------------------------------------------------------- */

/** Where t stands in the run in flight, or in the latest run
 * (weft_task_status); WEFT_TASK_PENDING for NULL.
 * Callable from: any thread. */
WEFT_API weft_task_status weft_task_state(const weft_task *t);

/** t's name (weft_task_set_name), NULL if unnamed. The string is the
 * graph's: valid until t is renamed or its graph destroyed.
 * Callable from: any thread. */
WEFT_API const char *weft_task_name(const weft_task *t);

/** The number of tasks in g; 0 for NULL.
 * Callable from: any thread, during a run too. */
WEFT_API size_t weft_graph_size(const weft_graph *g);

/** Copies up to cap of t's successors, each once, into out (out may be
 * NULL with cap 0) and returns how many there are; 0 for NULL. A condition
 * task's come in the order its edges were added.
 * Callable from: any thread; the answer holds until the next build call on
 * t's graph. */
WEFT_API size_t weft_task_successors(const weft_task *t, weft_task **out, size_t cap);

/** Copies up to cap of t's predecessors, each once, into out (out may be
 * NULL with cap 0) and returns how many there are; 0 for NULL. Costs
 * O(tasks + edges): it searches every task's edges.
 * Callable from: any thread; the answer holds until the next build call on
 * t's graph. */
WEFT_API size_t weft_task_predecessors(const weft_task *t, weft_task **out, size_t cap);

/** Copies up to cap tasks of one cycle of g into out, in edge order, and
 * returns its length (for a caller that got ECYCLE); 0 if g is acyclic or
 * its scratch (three words per task) could not be allocated.
 * Callable from: any thread. */
WEFT_API size_t weft_graph_find_cycle(const weft_graph *g, weft_task **out, size_t cap);

/** The graph task whose function is the caller, or NULL (also in work the
 * function hands off: chunks, spawned tasks, wherever they run).
 * Callable from: any thread. */
WEFT_API weft_task *weft_task_current(void);

/* ---- DOT output -------------------------------------------------------- */

/** Writes g as Graphviz DOT to out: a node per task, an edge per
 * dependency, states in labels and colours, modules as clusters. The text
 * is made in memory first; write errors show in ferror(out). EINVAL: NULL;
 * ENOMEM (nothing written).
 * Callable from: any thread, also while g runs (a snapshot of the states). */
WEFT_API int  weft_graph_dump_dot(const weft_graph *g, FILE *out);

/* ---- destroy ----------------------------------------------------------- */

/** Frees g and every task in it. EINVAL: g NULL; EBUSY: a run is in flight
 * (from a task of g, too). Any later call on g or its tasks is undefined
 * (a checked build aborts: reference page, "Destroying").
 * Callable from: any thread, once no other call on g (a weft_graph_wait on
 * its way in included) is under way or can start. */
WEFT_API int  weft_graph_destroy(weft_graph *g);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_GRAPH_H */
