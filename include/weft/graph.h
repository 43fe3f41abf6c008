/*
 * weft/graph.h: Task graphs: build, run, wait, cancel, fail, inspect.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_GRAPH_H
#define WEFT_PUBLIC_GRAPH_H

#include <stdio.h>

#include "defs.h"
#include "task.h"
#include "sync.h"

WEFT_BEGIN_DECLS

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

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_GRAPH_H */
