/* This file is private to weft: core's cross-file interfaces, the
 * prototypes its files call each other by (scheduler, workers, placing
 * and picking work, pins and bound threads, fibers, blocking, timers,
 * the poller, tracing hooks). core.h includes it after the types they
 * name and before its inline fast paths; include core.h, not this. */
#ifndef WEFT_CORE_CALLS_H
#define WEFT_CORE_CALLS_H

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

/* worker_life.c */
void *weft__worker_thread(void *arg);
int  weft__worker_init(weft_sched *s, weft__worker *w, unsigned index, bool bound);
void weft__worker_fini(weft__worker *w);
/* worker.c, ready.c, suspend.c, wait_until.c, timer.c */
/* The loop every fiber of a worker runs (worker.c): returns only on the
 * host fiber when the scheduler exits. Callable from: owner. */
void weft__worker_loop(weft__worker *w);
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
#ifdef WEFT_TEST_SEAMS
extern bool weft__stall_track_all;
#endif
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

/* io.c. Test seam: true makes weft_pid_wait_for poll as without pidfd_open. */
extern atomic_bool weft__no_pidfd;

#ifdef WEFT_TEST_SEAMS
/* blocking_pool.c. Test seam: how long an idle pool thread waits before it
 * leaves (10 s). */
extern uint64_t weft__bpool_keep_ns;
#endif
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

/* Is there anything w could run now (queues, inbox, lifo slots)? Used
 * by parking to re-check after announcing idle. */
bool weft__work_visible(weft__worker *w);
/* Is a task queued anywhere (global ring, any deque or LIFO slot)? */
bool weft__work_queued(weft_sched *s);

/* config.c: a config as a scheduler takes it.
 * Replaces c's zeros by their defaults (workers AUTO by ncpu), checks
 * it (WEFT_EINVAL: a rule of WEFT_CONFIG_TABLE broken), then stores
 * WEFT_WORKERS_NONE and WEFT_SPIN_NONE as 0, what src/core reads, and
 * resolves the allocator. Callable from: any thread. */
int  weft__config_take(weft_config *c, unsigned ncpu);

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
/* Unbind's first step: closes w's box of pinned tasks to every thread
 * but w (their pins get WEFT_EINVAL from now on). Callable from: w's
 * owner. */
void weft__bound_close(weft__worker *w);
/* Unbind's second step, after weft__bound_close: runs what is pinned to
 * w and waits for the tasks w started that are blocked, until none is
 * left. Callable from: w's owner, on its host fiber. */
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

#endif /* WEFT_CORE_CALLS_H */
