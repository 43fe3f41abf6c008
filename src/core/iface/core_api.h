/* This file is private to weft: core as the layers above it (src/graph,
 * src/parallel) see it, the one core header they include.
 *
 * CMake lets those layers see src/core/iface only (CMakeLists.txt,
 * weft_layer): this header, and through it core.h's types, which the
 * inline accessors below read. A layer above names no field of
 * weft__worker or weft_sched: it asks an accessor here, a static inline
 * function, so that the read costs what the field read did and core may
 * move its fields. Core's own files include it too.
 *
 * Who owns what:
 *   hook records  a queued record whose link carries WEFT__NODE_HOOK
 *                 (node.h) is the layer above's; core runs it through the
 *                 one hook that layer set and reads nothing else in it.
 *   upper         the per-fiber slot weft__fstate.upper is the layer
 *                 above's (the graph keeps its visit there); core never
 *                 reads it.
 *   nest          weft__fstate.nest is shared: core and the layer above
 *                 each add one around user code they run nested inside a
 *                 task; only the layer above compares it.
 *   namers        the layer above names its tasks and the objects its
 *                 fibers wait on by registering them (weft__task_namer_add,
 *                 weft__wait_namer_add); core keeps no list of its own.
 *   trace spans   core records a graph run's end and a loop's chunks as
 *                 events of kinds of its own (trace.h), kept rather than
 *                 registered by name at run time: a kind is 4 bits of an
 *                 event's first word, and the writer draws each kind its
 *                 own way (a graph run is an async span with both ends).
 */
#ifndef WEFT_CORE_API_H
#define WEFT_CORE_API_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Relative: the layers above see this directory, not src/core. */
#include "../core.h"

/* The worker of the calling thread (a worker or a bound thread), else
 * NULL. */
extern WEFT_TLS weft__worker *weft__tls_worker;

/* ---- the asymmetric StoreLoad pair (park.c's) ------------------------
 * For a layer's own Dekker-style protocol between one frequent side and
 * a rare one (graph's solo builds, graph.h): the frequent side pays
 * weft__fence_light (a compiler barrier where the kernel has membarrier,
 * else a seq_cst fence), the rare side weft__fence_heavy (membarrier on
 * every running thread of the process, else a seq_cst fence); each
 * orders the caller's stores before its later loads against the other
 * side's. weft__fences_asymmetric: the light side is a compiler barrier
 * only (set before any worker exists: park.c). */
extern bool weft__use_membarrier;
void weft__fence_park(void);
static inline bool weft__fences_asymmetric(void)
{
    return weft__use_membarrier;
}
static inline void weft__fence_light(void)
{
    if (WEFT_LIKELY(weft__use_membarrier))
        atomic_signal_fence(memory_order_seq_cst);   /* compiler only: pairs with membarrier in weft__fence_heavy */
    else
        atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: pairs with weft__fence_heavy */
}
static inline void weft__fence_heavy(void)
{
    weft__fence_park();   /* membarrier, retried until it succeeds; else a seq_cst fence */
}

/* ---- hook records ----------------------------------------------------
 * A queued record whose link carries WEFT__NODE_HOOK (node.h) belongs to
 * a layer above (a graph node: 64 bytes holding what the graph needs, no
 * room for a task record's fields). Core runs it as weft__record_hook(rec)
 * and reads nothing else in it: never pooled, never a spawner's child. */
extern _Atomic(weft_fn) weft__record_hook;
/* Sets the hook, once per process, before the first hook record is
 * queued (the queues publish it with the record). Callable from: any
 * thread; a second call with another function is a bug (ignored). */
void weft__set_record_hook(weft_fn hook);

/* ---- accessors: what the layers above read of a worker and a scheduler */

/* The state of the fiber running on w now. Callable from: w's owner. */
static inline weft__fstate *weft__fstate_cur(weft__worker *w)
{
    return w->cur->host;
}

/* The fiber running on w now. Callable from: w's owner. */
static inline weft__fiber *weft__worker_fiber(const weft__worker *w)
{
    return w->cur;
}

/* The scheduler w belongs to. Callable from: w's owner. */
static inline weft_sched *weft__worker_sched(const weft__worker *w)
{
    return w->s;
}

/* w's thread id (weft_thread_id): 0..workers-1 for a worker, above for a
 * bound thread. Callable from: w's owner. */
static inline unsigned weft__worker_id(const weft__worker *w)
{
    return w->index;
}

/* Is w a bound thread, not a worker? Callable from: w's owner. */
static inline bool weft__worker_is_bound(const weft__worker *w)
{
    return w->bound;
}

/* Has w work of its own queued (its deque or LIFO slot not empty)? A
 * hint: a thief may empty it right after. Callable from: w's owner. */
static inline bool weft__worker_has_queued(const weft__worker *w)
{
    return weft__deque_size(&w->deque) != 0 ||
           atomic_load_explicit(&w->lifo, memory_order_relaxed) != NULL;   /* relaxed: a hint */
}

/* Does w keep stall reports' lists (fixed at init)? Callable from: w's
 * owner. */
static inline bool weft__worker_tracks(const weft__worker *w)
{
    return w->track;
}

/* Does w pick in shuffle mode (the loop draws the order, so a layer
 * takes nothing off w's deque itself)? Callable from: w's owner. */
static inline bool weft__worker_shuffles(const weft__worker *w)
{
    return w->shuffle;
}

/* n records a layer took off w's deque itself count as local runs
 * (stats.local_runs). Callable from: w's owner. */
static inline void weft__count_local_runs(weft__worker *w, uint64_t n)
{
    WEFT__STAT(w, local_runs, n);
}

/* The number of workers of s (0: bound threads only); fixed at create.
 * Callable from: any thread. */
static inline unsigned weft__sched_workers(const weft_sched *s)
{
    return s->nworkers;
}

/* Would the calling thread, waiting for tasks of s, wait for ever? With
 * no workers only a thread of s (its bound thread, or its task) runs s's
 * tasks, and only while it blocks: any other thread's wait is refused
 * with WEFT_ENOTBOUND (graph waits, async waits, group joins, pipeline
 * runs), whatever other threads do. Callable from: any thread. */
static inline bool weft__sched_unserved_here(const weft_sched *s)
{
    weft__worker *w = weft__tls_worker;
    return s->nworkers == 0 && !(w && w->s == s);
}

/* Fewer workers than online CPUs: a thread waiting outside them may
 * spin. Fixed at create. Callable from: any thread. */
static inline bool weft__sched_spare_cpu(const weft_sched *s)
{
    return s->spare_cpu;
}

/* Has destroy started (spawns from outside are refused)? Seq_cst, as
 * every access to shutdown: pairs with destroy's store. Callable from:
 * any thread. */
static inline bool weft__sched_closing(weft_sched *s)
{
    return atomic_load(&s->shutdown);
}

/* Does w take part in picking work for everyone (a worker, or a bound
 * thread of a scheduler without workers)? A bound thread beside workers
 * picks its pinned tasks, and helps unless bound with WEFT_BIND_NO_HELP. */
static inline bool weft__bound_beside(const weft__worker *w)
{
    return w->bound && w->s->nworkers != 0;
}

/* Does w run nothing but the tasks pinned to it (a bound thread beside
 * workers, bound with WEFT_BIND_NO_HELP)? A layer that would go on with
 * a task inline after one of w's (a graph continuation) queues it
 * instead. Callable from: w's owner. */
static inline bool weft__only_pinned(const weft__worker *w)
{
    return w->no_help && weft__bound_beside(w);
}

/* ---- queueing work (task.c, pin.c, extspawn.c) --------------------------- */

weft__task *weft__task_alloc_slow(weft_sched *s, weft__worker *w);  /* NULL: ENOMEM */
void weft__task_free_slow(weft_sched *s, weft__worker *w, weft__task *t);

/* Callable from: w's owner, or any thread with w NULL. */
static inline weft__task *weft__task_alloc(weft_sched *s, weft__worker *w)
{
    if (WEFT_LIKELY(w != NULL && w->pool.n != 0))
        return w->pool.slot[--w->pool.n];
    return weft__task_alloc_slow(s, w);
}

/* Callable from: w's owner, or any thread with w NULL. */
static inline void weft__task_free(weft_sched *s, weft__worker *w, weft__task *t)
{
    if (!(t->flags & WEFT__TASK_POOLED))
        return;
    if (WEFT_LIKELY(w != NULL && w->pool.n < WEFT__POOL_TASKS)) {
        w->pool.slot[w->pool.n++] = t;
        return;
    }
    weft__task_free_slow(s, w, t);
}

/* Queue a ready task from w (a worker or bound thread of s) or from
 * outside (w NULL: the global ring; a caller inside weft__outside_enter
 * uses weft__submit_outside, extspawn.h, instead). A bound thread's go
 * through its port of the global ring (extspawn.c), but for YIELD and a
 * task of its loop with no workers. */
void weft__submit(weft_sched *s, weft__worker *w, weft__task *t, weft_hint hint);

/* weft__submit(s, w, t, WEFT_HINT_NEXT) that wakes no parked worker for
 * t (nor for the task t evicts from the LIFO slot to the deque): for
 * work the caller's worker will reach within moments, where waking
 * another would cost more than the work (a pipeline's next line behind
 * stages measured short). A worker already searching may still take it;
 * otherwise w runs it once the running task returns or blocks. From
 * outside a worker, or from a bound thread beside workers, it is
 * weft__submit (nothing of w's own runs it). Callable from: w's owner, or
 * any thread with w NULL. */
void weft__submit_quiet(weft_sched *s, weft__worker *w, weft__task *t);

/* weft__submit from a thread with no worker of s, refused with
 * WEFT_ESHUTDOWN once destroy has started (the check weft_spawn makes).
 * For records the caller owns (graph nodes). Callable from: any thread
 * that is not a worker of s. */
int  weft__submit_external(weft_sched *s, weft__task *t, weft_hint hint);

/* Queues t (a record the caller owns, filled in: a task record or a hook
 * record) at priority prio (a weft_priority) on any thread that picks
 * work, or, with thread >= 0, pinned to the thread of s with that id. w:
 * the caller's worker of s, or NULL from any other thread (then the
 * external rules apply: WEFT_ESHUTDOWN once destroy has started). Counts
 * the spawn as weft__submit does. WEFT_EINVAL, nothing queued: thread is
 * no current thread of s. Callable from: any thread. */
int  weft__submit_placed(weft_sched *s, weft__worker *w, weft__task *t, int prio, int thread);

/* Is id a thread of s now (a worker, or a bound thread)? A hint for a
 * check made before a run: the thread may unbind right after. Callable
 * from: any thread. */
bool weft__thread_valid(weft_sched *s, int id);

/* A ready task that the running task runs inline on its own fiber
 * instead of queueing it (a graph continuation): counts one spawn and one
 * completion, so wait_idle's sums stay balanced (and tasks_run, which is
 * `completed`, counts it).
 * The running task is still outstanding, so counting both at once never
 * makes the scheduler look idle early. Callable from: owner, inside a
 * task. Inline: a graph chain pays it at every node. */
static inline void weft__count_inline(weft__worker *w)
{
    atomic_store_explicit(&w->spawned, atomic_load_explicit(&w->spawned, memory_order_relaxed) + 1,
                          memory_order_release);   /* relaxed: our own count; release: pairs with acquire in is_idle */
    atomic_store_explicit(&w->completed, atomic_load_explicit(&w->completed, memory_order_relaxed) + 1,
                          memory_order_release);   /* relaxed: our own count; release: pairs with acquire in is_idle */
}

/* Takes the newest record on w's deque if it is a hook record for which
 * mine(rec, ctx) holds, for a layer that goes on with its own queued work
 * without a trip through the loop (a graph visit that reached a sink).
 * NULL otherwise: a record that is not the caller's goes back where it
 * was (it was the newest). Popped before it is looked at: a slot read
 * without taking it may name a record that has run and been freed.
 * The caller, not this, keeps what is per take out of its loop: it takes
 * nothing in shuffle mode (weft__worker_shuffles: the loop picks, in the
 * order it draws), counts each record it took as run with
 * weft__count_runs, and adds them to stats.local_runs
 * (weft__count_local_runs). Callable from: owner, on a fiber
 * running one of its tasks. */
static inline weft__task *weft__take_own(weft__worker *w, bool (*mine)(weft__task *, void *), void *ctx)
{
    weft__node *n = weft__deque_pop(&w->deque);
    if (!n)
        return NULL;
    if (weft__node_is_hook(n) && mine((weft__task *)(void *)n, ctx))
        return (weft__task *)(void *)n;
    if (!weft__deque_push(&w->deque, n))   /* cannot fail: its slot was just freed */
        weft__inject_push(&w->s->global, n);
    return NULL;
}

/* n queued records taken with weft__take_own count as run. The caller
 * may count one at its take, before it runs, as weft__count_inline
 * counts a continuation: its own record is still outstanding. */
static inline void weft__count_runs(weft__worker *w, uint64_t n)
{
    atomic_store_explicit(&w->completed, atomic_load_explicit(&w->completed, memory_order_relaxed) + n,
                          memory_order_release);   /* relaxed: our own count; release: pairs with acquire in is_idle */
}

/* ---- work a fiber holds (weft__fstate.held) ------------------------------- */

/* Submits what the running fiber holds, if anything: it is about to
 * block, or to hold something else. Callable from: owner. */
static inline void weft__publish_held(weft__worker *w)
{
    weft__fstate *st = weft__fstate_cur(w);
    weft__task *t = st->held;
    if (WEFT_UNLIKELY(t != NULL)) {
        st->held = NULL;
        weft__submit(w->s, w, t, WEFT_HINT_NONE);
    }
}

/* The running fiber will run t (a record the caller owns, filled in)
 * after the code it calls next, unless that code blocks: then t is
 * queued first. Something already held (an outer level's) is queued
 * now: the code about to run may block. Callable from: owner, in a task. */
static inline void weft__hold(weft__worker *w, weft__task *t)
{
    weft__publish_held(w);
    weft__fstate_cur(w)->held = t;
}

/* Takes t back: true if it is still held (nothing blocked since
 * weft__hold, so it is the caller's to run or free), false if it was
 * queued meanwhile (it runs, or has run, as a task of its own). Callable
 * from: owner, on the fiber that held t. */
static inline bool weft__unhold(weft__worker *w, weft__task *t)
{
    weft__fstate *st = weft__fstate_cur(w);
    if (WEFT_LIKELY(st->held == t)) {
        st->held = NULL;
        return true;
    }
    return false;
}

/* ---- waiting (worker.c, wait_until.c, sched.c) --------------------------- */

/* weft__now_ns (CLOCK_MONOTONIC now, in ns) is the clock of src/fiber's
 * wait.h, a static inline over the OS seam's. */

/* Work-first help for a waiting task: runs the calling fiber's own
 * newest children inline while !pred(ctx), and returns pred(ctx) once
 * none is on top of w's deque (the rest were stolen, or others' work is
 * on top). Never suspends. Callable from: a task on w, its owner. */
bool weft__help_until(weft__worker *w, bool (*pred)(void *), void *ctx);

/* weft__help_until for work of a layer above that the caller waits for
 * (a subflow join's sub-graph): while !pred(ctx), runs the newest record
 * on w's deque inline if it is a hook record for which mine(rec, ctx)
 * holds, through the layer's hook, nested as weft_wait_until runs a
 * child and under the same depth bound; returns pred(ctx) once none is
 * on top (or too deep). Never suspends itself (a record it runs may).
 * Callable from: a task on w, its owner. */
bool weft__help_hooks_until(weft__worker *w, bool (*pred)(void *), bool (*mine)(weft__task *, void *),
                            void *ctx);

/* For a thread that is not a worker of s and waits for work it handed to
 * the workers: spins while !pred(ctx), up to cfg.spin_us, if a CPU is
 * spare for it (fewer workers than online CPUs), so a short wait costs no
 * sleep and no wakeup on either side. Returns pred(ctx); false means
 * block. Callable from: any thread. */
bool weft__spin_until(weft_sched *s, bool (*pred)(void *), void *ctx);

/* A worker about to wake a thread outside its scheduler (a plain thread
 * waiting for a graph run) as the last act of a record, after which it
 * only returns to its loop: counts itself searching, unless it has work
 * in sight, so that the woken thread's next submit wakes no other worker
 * for work this one is about to look for (park.c, step 4). Call it
 * before the wake's release store; never where user code runs after the
 * wake. Callable from: w's owner. */
void weft__search_before_wake(weft__worker *w);

/* Waits parked outside s's queues ("Waits parked outside s").
 * Parks p: false once destroy has ended the parked waits (then p must
 * not wait: nothing would end it). Callable from: a thread of s (a visit
 * on a worker or bound thread). */
bool weft__parked_add(weft_sched *s, weft__parked *p);
/* Unlinks p, whose wait ended on the thread that parked it (it did not
 * have to wait after all). Callable from: as weft__parked_add. */
void weft__parked_remove(weft_sched *s, weft__parked *p);
/* Unlinks p, whose wait another thread ended (a unit handed, a cancel),
 * and counts that thread in parked_handoffs: s is not freed before its
 * weft__parked_handoff_done, so it may queue p's task on s meanwhile
 * (with no worker of s: weft__submit with w NULL). Callable from: any
 * thread. */
void weft__parked_handoff(weft_sched *s, weft__parked *p);
/* Ends what weft__parked_handoff began: the caller's last touch of s.
 * Callable from: its caller. */
void weft__parked_handoff_done(weft_sched *s);

/* ---- memory (task.c) ----------------------------------------------------- */

/* Scratch memory for the layers above (parallel_reduce's partials): a
 * block of at least size bytes, 64-byte aligned, kept by s and reused,
 * so calls in steady state allocate nothing. *cap receives what to pass
 * back to put. NULL: ENOMEM. Callable from: any thread. */
void *weft__scratch_get(weft_sched *s, size_t size, size_t *cap);
void weft__scratch_put(weft_sched *s, void *p, size_t cap);

/* ---- reports (stall.c) --------------------------------------------------- */

/* The running task goes on as another (a graph continuation): reports
 * show fn(arg) until the task that weft__track_run started returns. */
void weft__track_task(weft__worker *w, weft_fn fn, void *arg);

/* Lets a layer above name its tasks in reports: tasks whose function is
 * `entry` are shown as `kind` and, while blocked, by describe(arg, buf,
 * cap), called under the worker's reg_lock (so the task cannot end). At
 * most 4 entries. Callable from: any thread. */
typedef void (*weft__describe_fn)(void *arg, char *buf, size_t cap);
void weft__task_namer_add(weft_fn entry, const char *kind, weft__describe_fn describe);

/* Stall reports show a fiber waiting on an object
 * whose waiter says `what` (compared as a string) with describe(obj, buf,
 * cap) after its address, called under the fiber's worker's reg_lock (so
 * the fiber is still waiting). At most 4. Callable from: any thread. */
void weft__wait_namer_add(const char *what, weft__describe_fn describe);

/* ---- tracing and profiler hooks (trace.c) --------------------------------- */

/* The bits of weft__hooks: trace.h. */
enum {
    WEFT__HOOK_TRACK = 1,
    WEFT__HOOK_TRACE = 2,
    WEFT__HOOK_OBSERVE = 4,
};

#define WEFT__TNAME_MAX 255         /* bytes of a graph task name kept */

/* Ticks of the trace clock: the TSC where it is invariant (x86-64), the
 * virtual counter (aarch64), else CLOCK_MONOTONIC ns. */
uint64_t weft__trace_ticks(void);

/* Is s recording? For a thread that may be none of s's (a graph run's
 * start). Callable from: any thread. */
static inline bool weft__trace_on(weft_sched *s)
{
    struct weft__trace *tr = atomic_load_explicit(&s->trace, memory_order_acquire);   /* pairs with the first start */
    return tr && atomic_load_explicit(&tr->on, memory_order_relaxed);
}

/* The one byte every site tests (trace.h). */
static inline unsigned weft__hooks(const weft__worker *w)
{
    return atomic_load_explicit(&((weft__worker *)w)->hooks, memory_order_relaxed);
}

/* Around a graph task's function, on its fiber (the graph layer). */
void weft__hook_task_begin(weft__worker *w, const char *name, weft_fn fn, bool copy_name);
void weft__hook_task_end(weft__worker *w);

/* Graph runs and parallel loop chunks (the graph layer). */
void weft__hook_graph(weft__worker *w, uint64_t run_id, uint64_t start_ticks);
void weft__hook_chunk(weft__worker *w, bool begin, size_t first, size_t end);

#endif /* WEFT_CORE_API_H */
