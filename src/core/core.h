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
 * FIFO, run_next), suspend.c (suspending fibers, the host primitives block
 * through), wait_until.c (wait_until, yield), timer.c (the timer heap,
 * sleep), park.c (two-phase parking), task.c (records, spawn, wait_idle),
 * stall.c (what blocked fibers wait on, the stall watchdog, state dumps),
 * poller.c (the epoll set of fd waits, and parking in it), io.c
 * (weft_fd_wait_for, weft_pid_wait_for), blocking_pool.c (the blocking pool,
 * weft_call_blocking), pin.c (priorities, pinned tasks, thread ids),
 * global_ring.c (the global ring and its per-thread ports), extspawn.c
 * (spawns from outside the workers, through those ports).
 * worker.h holds what the worker files share among themselves.
 *
 * Headers: this one holds the types every file of core shares (task
 * records, per-fiber state, the worker, the scheduler). Each file's
 * interface for the rest of core is a header named for it (task.h,
 * loop.h for worker.c, worker_life.h, ready.h, suspend.h, timer.h,
 * park.h, stall.h, poller.h, io.h, blocking_pool.h, pin.h, config.h,
 * steal.h for the steal order, trace.h, global_ring.h, extspawn.h,
 * deque.h); iface/core_api.h is what the layers above call, and core's
 * files include it for the same calls. Each .c includes what it uses.
 */
#ifndef WEFT_CORE_H
#define WEFT_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "deque.h"
#include "fiber.h"
#include "global_ring.h"
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
    /* The layer above's slot (core_api.h, "The layer above's slot"):
     * core never reads or writes it, and frees nothing it points at.
     * Owner only. */
    void *upper;
    /* How deep user code runs nested on this fiber inside the task it
     * runs: +1 around a child run inline by a join (run_own_child), a
     * pinned task pumped (weft_pinned_run), a task a bound host runs
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

/* Tasks a bound thread's side fiber takes back from its port at once
 * (wait_until.c): one fence each time. */
#define WEFT__SIDE_BATCH 32

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
    bool placed;                         /* pick through pick_placed: a bound thread beside
                                            workers, or pinned tasks in pin_head (pin.c keeps it) */
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
    unsigned spin_scans;                 /* the spin's learnt budget, in scans (worker.c,
                                            weft__spin_for_work); 0: probes only */
    unsigned slot_spin_scans;            /* the same for spins in place on a channel's slot */
    unsigned spin_skipped;               /* spins skipped since the last probe */
    weft__fiber_pool fibers;
    struct weft__timer **timers;         /* min-heap by deadline (timer.h) */
    unsigned ntimers, timer_cap;
    _Atomic uint64_t spawned;            /* tasks spawned here: owner-only writes (relaxed load, release store) */
    _Atomic uint64_t completed;          /* tasks completed here: likewise */
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
    weft__inject_port *port;             /* a bound thread: its port of s->global, where what it
                                            queues for the workers goes (extspawn.c); claimed at
                                            its first such submit, given back at unbind; owner only */
    unsigned port_retry;                 /* no port could be had: submits until the next try */
    /* A bound thread beside workers whose spawn found its port full runs
     * the task on a fiber of its own (wait_until.c, weft__host_run):
     * that fiber, kept between such runs (NULL: none yet, or it is held
     * by a task that blocked), and the task handed to it (NULL once it
     * has come back). Owner only. */
    weft__fiber *side_fiber;
    weft__task *side_task;
    unsigned side_i, side_n;             /* side_batch[side_i, side_n): taken back from the
                                            port, not run yet */
    weft__node *side_batch[WEFT__SIDE_BATCH];
    bool side_run;
    unsigned pump_depth;                 /* weft_pinned_run's tasks on the host stack: owner only */
    unsigned io_waits;                   /* its fibers in an fd wait (poller.c): owner only */
    atomic_bool pin_waiting;             /* in weft_pinned_wait_for */
    weft_event pin_ev;                   /* what weft_pinned_wait_for waits on */

    /* A bound thread of a scheduler with no workers: its own spawns past
     * a full deque, oldest first, in spill[spill_head, spill_n) (spawn_bound.c,
     * "Spawns of a bound thread with no workers"), under s->bound_lock; nspill mirrors
     * the count, stored under the lock, read by the owner (relaxed) as a
     * hint. Freed with the worker. */
    weft__node **spill;
    unsigned spill_head, spill_n, spill_cap;
    atomic_uint nspill;

    /* Owner only: last, as its slot array is a kilobyte. */
    weft__task_pool pool;
} __attribute__((aligned(WEFT_CACHELINE)));

/* A recording (trace.c): made by the first weft_trace_start, freed by
 * destroy; its own fields say who writes them. */
struct weft__trace {
    atomic_bool on;
    _Atomic unsigned gen;           /* bumped at each start */
    _Atomic uint64_t t0;            /* clock at start (ticks) */
    uint64_t t0_ns;                 /* CLOCK_MONOTONIC at start */
    uint64_t t_end;                 /* ticks at stop, 0 while recording */
    uint64_t t_end_ns;
    double us_per_tick;             /* a stopped recording's clock rate, fixed
                                       by its first write (0: not yet) */
    uint64_t cap;                   /* buffers' capacity, a power of two */
    uint64_t lost_bind;             /* bound threads that got no buffer */
    struct weft__tbuf *bufs;              /* every buffer made, newest first */
};

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
    atomic_bool side_burst;              /* a bound thread's spawns ran tasks of its own
                                            (spawn_bound.c, "Spawns of a bound thread beside
                                            workers") since it last waited in weft: set
                                            and cleared by bound threads, on changes
                                            only; read by a worker about to park
                                            (worker.c). Relaxed: a hint. */
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
    atomic_uint nbound_seen;             /* nbound, stored (relaxed) under bound_lock at every
                                            change; read without it by a bound thread's spawn
                                            with no workers ("Spawns of a bound thread with no workers", spawn_bound.c) */
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

    /* fd and pid waits (poller.c), the blocking pool (blocking_pool.c): made
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

#endif /* WEFT_CORE_H */
