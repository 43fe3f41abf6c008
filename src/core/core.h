/* This file is private to weft: the scheduler core (src/core).
 *
 * Vocabulary
 *   worker   a thread of the scheduler, or a bound thread while it waits;
 *            owns a deque, a LIFO slot, a task-record pool, a fiber pool.
 *   task     a record (weft__task) queued for running: fn(arg).
 *   fiber    a stack a worker runs its loop and tasks on; a task that
 *            blocks keeps its fiber, and the worker goes on with another.
 *   pinned   a suspended fiber resumes on the worker it blocked on.
 *
 * Files: sched.c (create/destroy/bind, config, stats), worker.c (the loop,
 * picking, stealing, worker threads), ready.c (fibers made ready: inbox,
 * FIFO, run_next), block.c (suspending fibers, the host primitives block
 * through), waiting.c (wait_until, yield), timer.c (the timer heap,
 * sleep), park.c (two-phase parking), task.c (records, spawn, wait_idle),
 * stall.c (what blocked fibers wait on, the stall watchdog, state dumps),
 * poller.c (the epoll set of fd waits, and parking in it), io.c
 * (weft_wait_fd, weft_wait_pid), blocking.c (the blocking pool,
 * weft_call_blocking), pin.c (priorities, pinned tasks, thread ids),
 * inject.c (the global ring and its per-thread ports), extspawn.c
 * (spawns from outside the workers, through those ports).
 * worker.h holds what the worker files share among themselves.
 */
#ifndef WEFT_CORE_H
#define WEFT_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "deque.h"
#include "fiber.h"
#include "inject.h"
#include "node.h"
#include "spin.h"
#include "wait.h"

/* ---- task records --------------------------------------------------- */

enum {
    WEFT__TASK_POOLED = 1u << 0,   /* return to a pool after running */
    WEFT__TASK_NAMED = 1u << 1,    /* data[0] holds a name (weft_spawn_opts.name) */
};

/* One queued unit of work; a cache line. Graph nodes embed one (not
 * pooled) so that running a graph allocates nothing. */
typedef struct weft__task {
    weft__node node;            /* queue link; first member */
    weft_fn fn;
    void *arg;
    weft__fiber *spawner;       /* fiber that spawned it: the inline-run rule */
    uint32_t flags;
    uint32_t pad_;
    uint64_t data[3];           /* the spawner's own use (parallel ranges) */
} weft__task;

_Static_assert(sizeof(weft__task) == 64, "task record is one cache line");

/* Records come in slabs; a worker's pool is owner-only. Free records are
 * kept as arrays of pointers, never as lists threaded through the records:
 * taking a record reads only the array, so a cold record costs a store
 * miss when its spawner fills it in, not a load miss on the way to the
 * next one. Spare records travel between pools in magazines of
 * WEFT__SLAB_TASKS, one magazine per slab (task.c). */
#define WEFT__SLAB_TASKS 64
#define WEFT__POOL_TASKS (2 * WEFT__SLAB_TASKS)

typedef struct weft__mag {
    struct weft__mag *next;     /* on a spare stack, under spare_lock */
    unsigned n;                 /* records in slot[0..n) */
    weft__task *slot[WEFT__SLAB_TASKS];
} weft__mag;

typedef struct weft__task_pool {
    unsigned n;                 /* free records in slot[0..n); slot[n-1] goes out next (LIFO: warm first) */
    void *slabs;                /* slabs this pool allocated (freed at destroy) */
    weft__task *slot[WEFT__POOL_TASKS];
} weft__task_pool;

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

/* ---- per-fiber state -------------------------------------------------
 * Lives on the fiber's own stack (the loop function's frame) and is found
 * through weft__fiber.host. */

typedef struct weft__worker weft__worker;

/* What a fiber blocks on and which task it runs, for stall reports
 * (stall.c). Kept only while the worker tracks (weft__worker.track):
 * written by the fiber's own thread, read by reports under the worker's
 * reg_lock while the fiber is listed. */
typedef struct weft__blocked {
    struct weft__blocked *prev, *next;  /* the worker's list, under reg_lock */
    weft__fiber *fiber;
    const char *what;           /* "event", "sleep", ...; NULL: not blocked */
    const void *obj;            /* the primitive, or wait_until's ctx */
    uint64_t deadline;          /* CLOCK_MONOTONIC ns; 0 = none */
    weft_fn task_fn;            /* the task running on the fiber; NULL = none */
    void *task_arg;
    const char *task_name;      /* its weft_spawn_opts.name, or NULL */
} weft__blocked;

typedef struct weft__fstate {
    weft__worker *w;            /* the worker this fiber is pinned to */
    unsigned depth;             /* inline runs nested in wait_until */
    bool (*pred)(void *);       /* while suspended in wait_until: the poll */
    void *pred_ctx;
    weft__fiber *poll_next;     /* link in the worker's poll list */
    weft__blocked blk;          /* stall reports */
    /* The graph whose task runs on this fiber, NULL = none: src/graph's,
     * set around a graph task's function (kept while the fiber is
     * suspended in it) so that weft_graph_wait can refuse a task of the
     * run it would wait for. Core never reads it. Owner only. */
    const void *graph;
    /* How deep user code runs nested on this fiber inside the task it
     * runs: +1 around a child run inline by a join (run_own_child), a
     * pinned task pumped (weft_run_pinned), a task a bound host runs
     * under its wait (weft__host_runs_one), a parallel loop's chunks
     * (src/graph). src/graph compares it with the depth a graph task's
     * function started at, so that work nested in the function is told
     * from the function itself (weft_task_fail, weft_task_current).
     * Core never reads it. Owner only. */
    unsigned nest;
    /* Work this fiber will run next without having queued it (a graph's
     * next root, the rest of a parallel loop), NULL = none. Before the
     * fiber can block (weft__suspend, weft_yield) it is submitted, so
     * another worker, or this worker's next fiber, can take it: a fiber
     * holds nothing privately while it cannot run. The holder takes it
     * back with weft__unhold once its task returns, if it is still here.
     * Owner only. */
    weft__task *held;
    /* Tracing: the wake-up arrow its waker drew, 0 = none; written by
     * the waker before the wake's release, taken at the resume. */
    _Atomic uint64_t wake_flow;
} weft__fstate;

/* The state of the fiber running on w now. Callable from: w's owner. */
static inline weft__fstate *weft__fstate_cur(weft__worker *w);

/* ---- timers ---------------------------------------------------------- */

typedef struct weft__timer {
    uint64_t deadline;          /* CLOCK_MONOTONIC ns */
    void (*fire)(struct weft__timer *t);   /* runs on the owning worker */
    unsigned index;             /* slot in the heap, while armed */
} weft__timer;

/* ---- stats: written by their worker only, read by anyone ------------ */

typedef struct weft__stats {
    _Atomic uint64_t lifo_runs, local_runs, global_runs, stolen_runs;   /* tasks_run: w->completed */
    _Atomic uint64_t steal_attempts, steals, offloads, global_grabs;
    _Atomic uint64_t parks, wakeups, fibers_created, fiber_switches;
} weft__stats;

/* Owner-only increment: a relaxed load and store, no locked instruction. */
#define WEFT__STAT(w, field, n)                                                \
    atomic_store_explicit(&(w)->stats.field,                                   \
        atomic_load_explicit(&(w)->stats.field, memory_order_relaxed) + (n),   \
        memory_order_relaxed)

/* ---- workers ----------------------------------------------------------- */

struct weft__worker {
    /* Read by thieves. */
    weft__deque deque;
    weft__node *_Atomic lifo;            /* LIFO slot (ck-free: C11 exchange) */
    weft__fiber *_Atomic inbox;          /* fibers made ready by other threads */
    atomic_uint wakers;                  /* other threads inside weft__ready for us */
    weft__node *_Atomic pins_in;         /* tasks pinned here by anyone, newest first (pin.c) */
    atomic_uint token;                   /* futex word: 1 = woken */
    atomic_bool sleeping;                /* a bound thread beside workers asleep on token (park.c) */
    atomic_bool in_idle;                 /* in the idle set (written under its lock) */
    weft__worker *idle_prev, *idle_next; /* idle set links, under idle_lock */

    /* Owner only. */
    struct weft_sched *s;
    unsigned index;                      /* 0..workers-1; bound: >= workers */
    unsigned bound_pos;                  /* bound: its slot in s->bound[] (under bound_lock) */
    bool bound;                          /* a bound thread, not a worker */
    bool track;                          /* keep blocked_list (stall.c); set at init */
    atomic_uchar hooks;                  /* trace.h's bits: track, trace, observe */
    bool searching;
    bool no_help;                        /* a bound thread that runs only its pinned tasks (WEFT_BIND_NO_HELP) */
    bool pins_closed;                    /* a bound thread unbinding: no more pins (under bound_lock) */
    bool prio_turn;                      /* which lower level the next starvation turn serves */
    bool placed;                         /* pick through pick_placed: a bound thread, or
                                            pinned tasks in pin_head (pin.c keeps it) */
    unsigned prio_left;                  /* picks until a starvation turn (pin.c) */
    weft__node *pin_head, *pin_tail;     /* owner's FIFO of pinned tasks, oldest first */
    unsigned tick;
    unsigned lifo_streak;
    uint64_t rng;
    uint64_t shuffle_rng;                /* shuffle mode: drawn only at real choices */
    weft__fiber *cur;                    /* fiber running now */
    weft__fiber host;                    /* the thread's own stack */
    weft__fstate bound_state;            /* the host fiber's state (bound threads) */
    unsigned deque_capacity;
    unsigned lifo_budget;                /* s->cfg's, read on every fiber switch */
    unsigned global_interval;
    bool shuffle;
    unsigned inline_depth;               /* how deep wait_until runs children inline:
                                            0 on bound threads beside workers and
                                            in shuffle mode */
    weft__fiber *idle_fibers;            /* parked at the loop, reusable */
    weft__fiber *ready_head, *ready_tail;/* owner's FIFO of resumable fibers */
    weft__fiber *run_next;               /* woken by the running fiber: runs next */
    unsigned next_streak;                /* run_next picks in a row (<= lifo_budget) */
    unsigned fiber_streak;               /* fiber resumptions since a task last ran */
    weft__fiber *pollers;                /* suspended in wait_until */
    weft__fiber *yield_head, *yield_tail;/* yielded, waiting for one task to run */
    unsigned blocked;                    /* fibers suspended in a task */
    unsigned global_left;                /* picks until pick_local looks at the global ring first
                                            (a countdown: no division per pick); fills a hole */
    weft__fiber_pool fibers;
    weft__timer **timers;                /* min-heap by deadline */
    unsigned ntimers, timer_cap;
    uint64_t spawned;                    /* tasks spawned here (atomic store) */
    uint64_t completed;                  /* tasks completed here (atomic store) */
    pthread_t thread;
    weft__stats stats;

    /* Stall reports (stall.c); untouched unless track. */
    weft__spin reg_lock;                 /* owner, and reports */
    weft__blocked *blocked_list;         /* fibers suspended in weft__suspend, under reg_lock */
    unsigned nblocked;                   /* its length, under reg_lock */
    _Atomic(uintptr_t) run_fn, run_arg;  /* the task running now, 0 = none */
    _Atomic(uintptr_t) run_name;         /* its name, 0 = none */

    /* Tracing (trace.c): owner only but tbuf, which start and stop set. */
    struct weft__tbuf *_Atomic tbuf;     /* this thread's buffer, NULL = none */
    uint64_t flow_seq;                   /* wake arrows this thread drew */
    const char *note_what;               /* what the fiber about to suspend waits on */
    const void *note_obj;

    /* Pinned tasks (pin.c). */
    uint64_t pinned_runs;                /* pinned tasks run here: owner only */
    unsigned pump_depth;                 /* weft_run_pinned's tasks on the host stack: owner only */
    unsigned io_waits;                   /* its fibers in an fd wait (poller.c): owner only */
    atomic_bool pin_waiting;             /* in weft_wait_pinned */
    weft_event pin_ev;                   /* what weft_wait_pinned waits on */

    /* Owner only: last, as its slot array is a kilobyte. */
    weft__task_pool pool;
} __attribute__((aligned(WEFT_CACHELINE)));

static inline weft__fstate *weft__fstate_cur(weft__worker *w)
{
    return w->cur->host;
}

/* ---- the scheduler ------------------------------------------------------ */

/* A wait parked outside every queue of s, holding no fiber (a graph
 * task's record in a semaphore's FIFO, attr.c). s's destroy calls end,
 * under parked_lock, to take it off what it waits on and queue its task
 * on s (sched.c, "Waits parked outside s"). Links under parked_lock. */
typedef struct weft__parked {
    struct weft__parked *next, *prev;
    /* true: ended, its task queued; false: not now (not queued yet, or
     * being handed what it waits for): destroy asks again. */
    bool (*end)(struct weft__parked *p);
} weft__parked;

struct weft_sched {
    weft_config cfg;                     /* checked; cfg.allocator resolved at
                                            create: every allocation of s,
                                            s included, and every free */
    unsigned nworkers;
    atomic_bool prio_used;               /* see prio_high: here among fields
                                            read on every pick and written
                                            once, off the lines parking and
                                            pushes write */
    weft__worker *workers;               /* nworkers of them */
    unsigned *coprimes;                  /* strides for victim order */
    unsigned ncoprimes;
    weft__inject global;
    /* Priorities (pin.c): HIGH and LOW tasks wait in rings of their own
     * (NORMAL ones where they always did); prio_used is set at the first
     * such submit and never cleared, so a scheduler that never uses
     * priorities pays one load of it per pick. */
    weft__inject prio_high, prio_low;

    /* Parking (park.c). */
    pthread_mutex_t idle_lock;
    weft__worker *idle_head;             /* the idle set, under idle_lock */
    atomic_uint nidle;
    atomic_uint nsearching;
    unsigned max_searching;
    bool spare_cpu;                      /* fewer workers than online CPUs:
                                            an outside waiter may spin */

    /* Spare task records, in magazines (task.c), for pools that run dry
     * and for threads without a pool. */
    pthread_mutex_t spare_lock;
    weft__mag *full;                     /* full magazines, under spare_lock */
    weft__mag *empty;                    /* empty magazines, under spare_lock */
    weft__mag *loose;                    /* threads without a pool take and give
                                            one record at a time here; under spare_lock */
    atomic_uint nfull;                   /* full's length: written under spare_lock, peeked without */
    void *spare_slabs;
    struct weft__scratch *scratch;       /* free scratch blocks, under spare_lock */

    /* Idle accounting: wait_idle and shutdown. */
    atomic_uint_fast64_t ext_spawned;    /* spawns from threads with no worker */
    atomic_uint ext_inflight;            /* external spawns between check and submit, and
                                            unbinds past leaving bound[] (sched.c);
                                            destroy waits for 0 */
    uint64_t retired_spawned;            /* counts of unbound threads, under bound_lock */
    uint64_t retired_completed;
    atomic_uint idle_gen;                /* futex word: bumped when work runs dry */
    atomic_uint idle_waiters;

    /* Bound threads. */
    pthread_mutex_t bound_lock;
    weft__worker **bound;                /* registered bound workers, in no order */
    unsigned nbound, bound_cap;
    /* Their ids (pin.c, "Thread ids"), all under bound_lock: by_id[id -
     * nworkers] is the thread holding id, NULL while it is free; ids from
     * nworkers + ids_top up were never given; id_free is a min-heap of
     * the free ids below that (nfree of them), with room for free_cap >=
     * ids_top, so that unbind never allocates; by_id has room for ids_cap. */
    weft__worker **by_id;
    unsigned *id_free;
    unsigned ids_top, ids_cap, nfree, free_cap;
    uint64_t bind_steps;                 /* heap levels and slots visited by binds and
                                            unbinds: a count for tests, under bound_lock */

    atomic_bool shutdown;                /* destroy started: external spawn refused */
    /* Waits parked outside the queues (weft__parked): under parked_lock. */
    pthread_mutex_t parked_lock;
    weft__parked *parked;                /* the list */
    bool parked_closed;                  /* destroy ended them: none may park now */
    atomic_uint parked_handoffs;         /* threads queueing a task whose wait they
                                            ended (weft__parked_handoff); destroy
                                            waits for 0 */
    atomic_bool exiting;                 /* workers may leave their loops */

    /* fd and pid waits (poller.c), the blocking pool (blocking.c): made
     * at first use, under io_lock; published with release, read with
     * acquire, freed by destroy. */
    pthread_mutex_t io_lock;
    struct weft__poller *_Atomic poller;
    struct weft__bpool *_Atomic bpool;
    atomic_uint io_waiters;              /* fd waits registered in the epoll set */
    weft__worker *_Atomic poll_owner;    /* the parked worker sleeping in epoll_wait, or NULL */

    /* Tracing and profiler hooks (trace.c). */
    pthread_mutex_t trace_lock;          /* start, stop, write, bind's and unbind's part */
    struct weft__trace *_Atomic trace;   /* made by the first start, freed by destroy */
    weft_observer obs;                   /* cfg.observer's copy (zero if none) */

    /* Stall reports (stall.c). */
    bool track;                          /* workers list their blocked fibers */
    struct weft__watchdog *watchdog;     /* NULL unless cfg.watchdog_ns */
    weft_sched *live_prev, *live_next;   /* every live scheduler, under stall.c's lock */

    /* Threads outside s that spawn to it keep a port of s (extspawn.c). */
    _Atomic uint64_t xid;                /* 0 until such a thread first spawns to s; then
                                            unique in the process, never reused */
    weft_sched *xprev, *xnext;           /* schedulers with an xid: extspawn.c's list, under its lock */
};

/* ---- steal order ------------------------------------------------------------ */

/* The k-th victim (0 <= k < n) of a search that starts at `start` and
 * steps by `stride`, coprime with n: k = 0..n-1 visits every worker once
 * (Go's steal order). */
static inline unsigned weft__victim(unsigned start, unsigned stride, unsigned k, unsigned n)
{
    return (unsigned)(((uint64_t)start + (uint64_t)k * stride) % n);
}

/* Fills out[] with the strides in 1..n coprime with n; returns how many. */
unsigned weft__coprimes(unsigned n, unsigned *out);

/* ---- cross-file interfaces ------------------------------------------------ */

/* The worker of the calling thread (worker or bound thread), else NULL. */
extern WEFT_TLS weft__worker *weft__tls_worker;

/* task.c */
weft__task *weft__task_alloc_slow(weft_sched *s, weft__worker *w);  /* NULL: ENOMEM */
void weft__task_free_slow(weft_sched *s, weft__worker *w, weft__task *t);
/* Frees p's slabs. Callable from: destroy, once no record is in use. */
void weft__task_pool_fini(weft_sched *s, weft__task_pool *p);
/* Hands p's slabs and free records to s's spares, leaving p empty: for a
 * pool whose owner leaves (unbind) while records of its slabs may be
 * queued or pooled elsewhere. Callable from: p's owner. */
void weft__task_pool_retire(weft_sched *s, weft__task_pool *p);
void weft__spares_fini(weft_sched *s);
bool weft__sched_is_idle(weft_sched *s);
/* Scratch memory for the layers above (parallel_reduce's partials): a
 * block of at least size bytes, 64-byte aligned, kept by s and reused,
 * so calls in steady state allocate nothing. *cap receives what to pass
 * back to put. NULL: ENOMEM. Callable from: any thread. */
void *weft__scratch_get(weft_sched *s, size_t size, size_t *cap);
void weft__scratch_put(weft_sched *s, void *p, size_t cap);
/* Queue a ready task from w (a worker or bound thread of s) or from
 * outside (w NULL: the global ring; a caller inside weft__outside_enter
 * uses weft__submit_outside, extspawn.h, instead). A bound thread's go
 * through its port of the global ring (extspawn.c), but for YIELD and a
 * task of its loop with no workers. */
void weft__submit(weft_sched *s, weft__worker *w, weft__task *t, weft_hint hint);
/* The global ring's locked push for t, counted on w (NULL: ext_spawned),
 * then the park check with a full fence. Callable from: w's owner, or
 * any thread with w NULL. */
void weft__submit_global(weft_sched *s, weft__worker *w, weft__task *t);
/* weft__submit from a thread with no worker of s, refused with
 * WEFT_ESHUTDOWN once destroy has started (the check weft_spawn makes).
 * For records the caller owns (graph nodes). Callable from: any thread
 * that is not a worker of s. */
int  weft__submit_external(weft_sched *s, weft__task *t, weft_hint hint);

/* worker.c, ready.c, block.c, waiting.c, timer.c */
void *weft__worker_thread(void *arg);
int  weft__worker_init(weft_sched *s, weft__worker *w, unsigned index, bool bound);
void weft__worker_fini(weft__worker *w);
/* Work-first help for a waiting task: runs the calling fiber's own
 * newest children inline while !pred(ctx), and returns pred(ctx) once
 * none is on top of w's deque (the rest were stolen, or others' work is
 * on top). Never suspends. Callable from: a task on w, its owner. */
bool weft__help_until(weft__worker *w, bool (*pred)(void *), void *ctx);
/* Suspends the current fiber of w until weft__ready(f). Callable
 * from: a fiber on its own worker. */
void weft__suspend(weft__worker *w);
/* Makes a fiber suspended by weft__suspend runnable again. Callable from:
 * any thread. */
void weft__ready(weft__fiber *f);
/* As weft__ready, but from f's own worker f runs next (ahead of the ready
 * FIFO), at most cfg.lifo_budget times in a row before other work gets a
 * turn. Callable from: any thread (elsewhere it is weft__ready). */
void weft__ready_next(weft__fiber *f);
/* Waits until no other thread is inside weft__ready for w: a waker from
 * outside touches w and its scheduler after the fiber it woke may have
 * finished. Callable from: destroy and unbind, before freeing w. */
void weft__worker_wait_wakers(weft__worker *w);
uint64_t weft__now_ns(void);
/* For a thread that is not a worker of s and waits for work it handed to
 * the workers: spins while !pred(ctx), up to cfg.spin_us, if a CPU is
 * spare for it (fewer workers than online CPUs), so a short wait costs no
 * sleep and no wakeup on either side. Returns pred(ctx); false means
 * block. Callable from: any thread. */
bool weft__spin_until(weft_sched *s, bool (*pred)(void *), void *ctx);
/* Blocking for fiber-aware primitives on workers and on bound threads in
 * single-threaded mode (src/fiber/wait.h). */
extern const weft__host weft__core_host;
bool weft__timer_arm(weft__worker *w, weft__timer *t);   /* false: out of memory, not armed */
bool weft__timer_disarm(weft__worker *w, weft__timer *t);

/* stall.c */
/* Test seam: schedulers created from now on track blocked fibers even
 * with the watchdog off, for weft__sched_dump_all (the test harness). */
extern bool weft__stall_track_all;
/* Lists s among the live schedulers and starts its watchdog thread if
 * cfg.watchdog_ns asks for one; ENOMEM leaves nothing behind. Callable
 * from: create, once the workers run. */
int  weft__stall_start(weft_sched *s);
/* Stops the watchdog and unlists s. Callable from: destroy, before the
 * workers are freed. */
void weft__stall_stop(weft_sched *s);
/* The tracking hooks, called only when w->track. Callable from: owner. */
void weft__track_note(weft__worker *w, const char *what, const void *obj, uint64_t deadline);
void weft__track_suspend(weft__worker *w, weft__fiber *self);
void weft__track_resume(weft__worker *w, weft__fiber *self);
void weft__track_run(weft__worker *w, weft_fn fn, void *arg, const char *name);
/* The running task goes on as another (a graph continuation): reports
 * show fn(arg) until the task that weft__track_run started returns. */
void weft__track_task(weft__worker *w, weft_fn fn, void *arg);
/* Lets a layer above name its tasks in reports: tasks whose function is
 * `entry` are shown as `kind` and, while blocked, by describe(arg, buf,
 * cap), called under the worker's reg_lock (so the task cannot end). At
 * most 4 entries. Callable from: any thread. */
typedef void (*weft__describe_fn)(void *arg, char *buf, size_t cap);
void weft__task_namer_add(weft_fn entry, const char *kind, weft__describe_fn describe);
/* The kind a layer registered for entry (weft__task_namer_add), NULL if
 * none: names in traces for functions no symbol table names. */
const char *weft__task_kind(weft_fn fn);
/* Stall reports show a fiber waiting on an object
 * whose waiter says `what` (compared as a string) with describe(obj, buf,
 * cap) after its address, called under the fiber's worker's reg_lock (so
 * the fiber is still waiting). At most 4. Callable from: any thread. */
void weft__wait_namer_add(const char *what, weft__describe_fn describe);
/* Writes the state of s (blocked fibers if tracked, workers, queues). */
void weft__sched_dump(weft_sched *s, FILE *out);
/* weft__sched_dump for every live scheduler; waits at most about a
 * second for any lock. For the test harness on a hang. Callable from:
 * any thread that is not a worker. */
void weft__sched_dump_all(FILE *out);

/* poller.c */
typedef struct weft__poller weft__poller;
/* s's poller, made now if it is not yet; NULL: out of memory or of
 * descriptors. Callable from: any thread. */
weft__poller *weft__poller_get(weft_sched *s);
/* A task's fd wait on its fiber: registers fd for events (EPOLL*) until
 * deadline (0 = none) and suspends. Returns the ready events (> 0),
 * WEFT_ETIMEDOUT, WEFT_ESHUTDOWN, WEFT_EINVAL (fd not open),
 * WEFT_ENOMEM, or 0: fd cannot be polled by epoll (a regular file), the
 * caller asks poll(2). Callable from: a fiber on its own worker w. */
int  weft__poller_wait(weft__worker *w, weft__poller *p, int fd, unsigned events,
                       uint64_t deadline, const char *what, const void *obj);
/* Parking in epoll_wait (park.c, step 3d): -1 if w may not (no fd wait
 * registered, or another worker sleeps there), else it slept until
 * readiness, deadline (0 = none), or its token: 1 if fibers of w were
 * made ready, 0 otherwise. Callable from: owner, in the idle set. */
int  weft__poller_sleep(weft__worker *w, uint64_t deadline);
/* Ends the epoll_wait of the worker sleeping there. Callable from: any
 * thread. */
void weft__poller_break(weft_sched *s);
/* A look without sleeping (epoll_wait, timeout 0): readiness found makes
 * its fibers ready. Callable from: owner. */
void weft__poller_poll(weft__worker *w);
/* Every pending wait returns WEFT_ESHUTDOWN; later ones do not wait.
 * Callable from: destroy, once shutdown is set. */
void weft__poller_shutdown(weft_sched *s);
/* Frees the poller. Callable from: destroy, after the workers left. */
void weft__poller_fini(weft_sched *s);

/* Are fd waits registered (a hint: relaxed)? Inline: the loop asks it
 * every global_interval picks. */
static inline bool weft__io_waiting(weft_sched *s)
{
    return atomic_load_explicit(&s->io_waiters, memory_order_relaxed) != 0;   /* relaxed: a hint; a wait's own worker parks or polls after registering it */
}

/* io.c. Test seam: true makes weft_wait_pid poll as without pidfd_open. */
extern atomic_bool weft__no_pidfd;

/* blocking.c. Test seam: how long an idle pool thread waits before it
 * leaves (10 s). */
extern uint64_t weft__bpool_keep_ns;
/* Waits for every call in flight on s's blocking pool, stops and joins
 * its threads, frees it. Callable from: destroy, after the workers left. */
void weft__bpool_fini(weft_sched *s);

/* park.c */
int  weft__park_init(weft_sched *s);
void weft__park_fini(weft_sched *s);
void weft__park_setup_fences(void);
/* Wakes one parked worker if none is searching (weft__notify_work's slow
 * half). */
void weft__notify_slow(weft_sched *s);
/* Wakes worker w if it is parked (after giving it a ready fiber). */
void weft__wake_worker(weft_sched *s, weft__worker *w);
void weft__wake_all(weft_sched *s);
/* Parks w until woken or until deadline (0 = none). */
void weft__park(weft__worker *w, uint64_t deadline);
/* Leave the searching state; the last searcher hands off. */
void weft__stop_searching(weft__worker *w);
bool weft__try_start_searching(weft__worker *w);

void weft__futex_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns);
void weft__futex_wake(atomic_uint *word, int n);

/* Is there anything w could run now (queues, inbox, lifo slots)? Used
 * by parking to re-check after announcing idle. */
bool weft__work_visible(weft__worker *w);
/* Is a task queued anywhere (global ring, any deque or LIFO slot)? */
bool weft__work_queued(weft_sched *s);

/* sched.c: waits parked outside s's queues ("Waits parked outside s").
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

/* pin.c: thread ids, pinned tasks, priorities, bound threads pumping. */
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
/* The next task pinned to w's thread, oldest first, or NULL. Callable
 * from: owner. */
weft__task *weft__take_pinned(weft__worker *w);
/* Lists w (a bound thread's worker, not listed) in s->bound[] under
 * the smallest free id >= nworkers, which it stores in w->index; O(log
 * n). WEFT_ENOMEM, nothing changed: no room could be made. Caller holds
 * bound_lock. */
int  weft__bound_add(weft_sched *s, weft__worker *w);
/* Takes w out of s->bound[] and frees its id; O(log n), allocates
 * nothing. Caller holds bound_lock. */
void weft__bound_remove(weft_sched *s, weft__worker *w);
/* Frees the tables of bound threads (destroy, nobody bound). */
void weft__bound_fini(weft_sched *s);
/* Unbind's first step: runs what is pinned to w and waits for the tasks
 * w started that are blocked, then closes w's box of pinned tasks (later
 * pins get WEFT_EINVAL). Callable from: w's owner, on its host fiber. */
void weft__bound_drain(weft__worker *w);
/* A bound thread beside workers with nothing to run sleeps until woken
 * (weft__wake_worker) or deadline (0 = none); it is never in the idle
 * set: work for any thread wakes a worker. Callable from: owner (park.c). */
void weft__bound_park(weft__worker *w, uint64_t deadline);
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

/* ---- inline fast paths ----------------------------------------------------------- */

/* Set once, before any worker exists (park.c): the parking side uses
 * membarrier(2), so submitters need only a compiler barrier. */
extern bool weft__use_membarrier;

/* The StoreLoad half a submitter pays after publishing work and before
 * reading the parking counters; pairs with the parker's fence (park.c). */
static inline void weft__fence_submit(void)
{
    if (WEFT_LIKELY(weft__use_membarrier))
        atomic_signal_fence(memory_order_seq_cst);   /* compiler only: pairs with membarrier in fence_park */
    else
        atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: pairs with fence_park */
}

/* After publishing work: whether a parked worker must be woken (none is
 * searching and some sleep), the submitter's side of the park protocol. */
static inline bool weft__notify_check(weft_sched *s)   /* after a StoreLoad fence */
{
    return atomic_load_explicit(&s->nsearching, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&s->nidle, memory_order_relaxed) != 0;
}

static inline bool weft__notify_needed(weft_sched *s)
{
    weft__fence_submit();
    return weft__notify_check(s);
}

/* After publishing work: wakes one parked worker if none is searching. */
static inline void weft__notify_work(weft_sched *s)
{
    if (weft__notify_needed(s))
        weft__notify_slow(s);
}

/* A ready task that the running task runs inline on its own fiber
 * instead of queueing it (a graph continuation): counts one spawn and one
 * completion, so wait_idle's sums stay balanced (and tasks_run, which is
 * `completed`, counts it).
 * The running task is still outstanding, so counting both at once never
 * makes the scheduler look idle early. Callable from: owner, inside a
 * task. Inline: a graph chain pays it at every node. */
static inline void weft__count_inline(weft__worker *w)
{
    __atomic_store_n(&w->spawned, w->spawned + 1, __ATOMIC_RELEASE);      /* release: pairs with acquire in is_idle */
    __atomic_store_n(&w->completed, w->completed + 1, __ATOMIC_RELEASE);  /* release: pairs with acquire in is_idle */
}

/* Takes the newest record on w's deque if it is a hook record for which
 * mine(rec, ctx) holds, for a layer that goes on with its own queued work
 * without a trip through the loop (a graph visit that reached a sink).
 * NULL otherwise: a record that is not the caller's goes back where it
 * was (it was the newest). Popped before it is looked at: a slot read
 * without taking it may name a record that has run and been freed.
 * The caller, not this, keeps what is per take out of its loop: it takes
 * nothing in shuffle mode (w->shuffle: the loop picks, in the order it
 * draws), counts each record it took as run with weft__count_runs, and
 * adds them to stats.local_runs. Callable from: owner, on a fiber
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
    __atomic_store_n(&w->completed, w->completed + n, __ATOMIC_RELEASE);  /* release: pairs with acquire in is_idle */
}

/* ---- work a fiber holds (weft__fstate.held) ------------------------------------- */

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

/* ---- fibers running short ------------------------------------------------------ */

/* Fibers held by tasks (blocked, yielded or polling) on one worker past
 * which it runs short: ready fibers then go before new tasks, pollers
 * are polled and yielded fibers let back in at every pick, and YIELD
 * spawns go depth first, so that the number of fibers stays bounded by
 * what the work needs, not by how many tasks were started. */
#define WEFT__FIBERS_SOFT 256

/* Callable from: owner. */
static inline bool weft__short_of_fibers(const weft__worker *w)
{
    return w->blocked >= WEFT__FIBERS_SOFT;
}

/* A bound thread of a scheduler without workers, running a task on one
 * of its loop's fibers (not its own code): what such a task spawns goes
 * on the thread's own deque and LIFO slot, as on a worker, so recursive
 * work runs depth first; the loop hands what is left there to the
 * global ring before the thread goes back to its own code (nobody else
 * may look at its deque). Callable from: owner. */
static inline bool weft__bound_runs_tasks(const weft__worker *w)
{
    return w->bound && w->s->nworkers == 0 && w->cur != &w->host;
}

/* Counts a spawn about to be queued, before its record is published:
 * on w (its owner, a plain store) or, w NULL, on the scheduler's outside
 * count (an RMW). Release: pairs with the acquire loads of the idle test
 * (task.c). */
static inline void weft__count_spawn(weft_sched *s, weft__worker *w)
{
    if (WEFT_LIKELY(w != NULL))
        __atomic_store_n(&w->spawned, w->spawned + 1, __ATOMIC_RELEASE);
    else
        atomic_fetch_add_explicit(&s->ext_spawned, 1, memory_order_release);
}

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

#endif /* WEFT_CORE_H */
