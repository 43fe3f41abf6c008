/*
 * weft/flow.h: Work without a graph object: dependent async tasks,
 * pipelines, and task groups.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_FLOW_H
#define WEFT_PUBLIC_FLOW_H

#include "defs.h"
#include "errors.h"

WEFT_BEGIN_DECLS

/** @file
 * Three ways to give a scheduler work that a graph would make heavy:
 *  - a dependent async task is spawned with the handles of the tasks it
 *    must follow (finished or not) and gives back a handle of its own, to
 *    wait on, read a result from, or name as the predecessor of the next;
 *  - a pipeline moves tokens through a list of stages on a fixed number
 *    of lines (tokens in flight), each stage serial (tokens in order) or
 *    parallel, until its first stage stops it;
 *  - a task group, embedded in the caller's frame, spawns tasks and joins
 *    them, and can cancel those not yet started.
 * Tasks of all three may block, on each other too, in any order that a
 * sequential program could wait in.
 *
 * See docs/reference/flow.md for handle lifetimes and pooling, how a
 * predecessor that finishes while a successor is attached is counted,
 * the pipeline's scheduling rules and per-line data, and how a join
 * helps. */

/* ---- dependent async ----------------------------------------------------- */

/** A dependent async task's handle: reference-counted, opaque. */
typedef struct weft_async weft_async;
/** A dependent async task's function: its return value is the task's
 * result (weft_async_result). */
typedef void *(*weft_async_fn)(void *arg);

/** Spawns fn(arg) on s to run once each of the n handles in preds has
 * finished (already finished ones count as finished; n 0: at once). With
 * out non-NULL, *out receives a handle the caller owns and gives back with
 * weft_async_release; with out NULL the task runs unobserved. preds are
 * only read during the call: the caller keeps its references. Returns 0;
 * WEFT_EINVAL: s or fn NULL, preds NULL with n > 0, a NULL handle in
 * preds, or a handle of another scheduler; WEFT_ENOMEM: no handle could
 * be had; WEFT_ESHUTDOWN: s is being destroyed and the caller is not one
 * of its threads. Nothing is spawned on failure.
 * Callable from: any thread. */
WEFT_API int  weft_async_spawn(weft_sched *s, weft_async_fn fn, void *arg,
                               weft_async *const *preds, size_t n, weft_async **out);

/** Has h's function returned? Callable from: any thread. */
WEFT_API bool weft_async_done(const weft_async *h);

/** Waits until h's function has returned. Returns WEFT_OK, WEFT_ENOMEM
 * at once from a task whose worker has no fiber to go on with, or
 * WEFT_ENOTBOUND when h runs on a scheduler with no workers and the
 * caller is neither its bound thread nor its task (nobody would run h).
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_async_wait(weft_async *h);

/** As weft_async_wait, for at most timeout_ns (relative, monotonic; 0
 * only polls): WEFT_OK, WEFT_ETIMEDOUT, WEFT_ENOMEM or WEFT_ENOTBOUND.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_async_wait_for(weft_async *h, uint64_t timeout_ns);

/** The value h's function returned; NULL until it has.
 * Callable from: any thread (after a wait or a true weft_async_done). */
WEFT_API void *weft_async_result(const weft_async *h);

/** Takes one more reference to h, for another owner to release.
 * Callable from: any thread. */
WEFT_API void weft_async_retain(weft_async *h);

/** Gives back one reference to h; the handle goes back to its pool once
 * no owner is left and its task has finished. NULL is a no-op.
 * Callable from: any thread. */
WEFT_API void weft_async_release(weft_async *h);

/* ---- pipelines ---------------------------------------------------------- */

/** A pipeline: lines and stages, made once and run any number of times. */
typedef struct weft_pipeline weft_pipeline;
/** What a stage's function is given: which line, stage and token. */
typedef struct weft_pipe weft_pipe;
/** A stage's function. */
typedef void (*weft_pipe_fn)(weft_pipe *pf, void *arg);

/** How a stage takes its tokens. */
typedef enum weft_pipe_kind {
    WEFT_PIPE_SERIAL = 0,   /**< one token at a time, in token order */
    WEFT_PIPE_PARALLEL      /**< any tokens at once, in any order */
} weft_pipe_kind;

/** One stage of a pipeline. */
typedef struct weft_pipe_stage {
    weft_pipe_kind kind;   /**< the first stage must be SERIAL */
    weft_pipe_fn fn;       /**< called once per token */
    void *arg;             /**< passed to fn */
} weft_pipe_stage;

/** Makes a pipeline of `lines` lines (at most that many tokens in flight)
 * through the n stages of `stages` (copied). Returns 0 and sets *out;
 * WEFT_EINVAL: out or stages NULL, lines or n 0, more than 65536 of either,
 * a stage with fn NULL or a kind out of range, or a first stage that is
 * not serial; WEFT_ENOMEM. Callable from: any thread. */
WEFT_API int  weft_pipeline_create(size_t lines, const weft_pipe_stage *stages, size_t n,
                                   weft_pipeline **out);

/** Runs pl on s until its first stage calls weft_pipe_stop and every
 * token before that one has passed every stage; returns once they have.
 * Tokens are numbered from 0 at every run. Returns WEFT_OK; WEFT_EINVAL:
 * s or pl NULL; WEFT_EBUSY: pl is running; WEFT_ESHUTDOWN: s is being
 * destroyed and the caller is not one of its threads; WEFT_ENOTBOUND: s
 * has no workers and the caller is neither its bound thread nor its task.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_pipeline_run(weft_sched *s, weft_pipeline *pl);

/** How many tokens the last finished run of pl took through all stages
 * (the token stopped at the first stage not counted).
 * Callable from: any thread, not during a run. */
WEFT_API uint64_t weft_pipeline_tokens(const weft_pipeline *pl);

/** A graph's task type (weft/graph.h); repeated here so that this header
 * stands alone. */
typedef struct weft_graph weft_graph;
/** A task of a graph (weft/graph.h). */
typedef struct weft_task weft_task;

/** Adds to g a task that runs pl on the scheduler running g, as
 * weft_pipeline_run does, and fails with its code if that fails (EBUSY:
 * pl was running). pl must outlive every run of g. Returns the task, or
 * NULL: g or pl NULL, or weft_graph_add's failures.
 * Callable from: any thread, several at once. */
WEFT_API weft_task *weft_graph_add_pipeline(weft_graph *g, weft_pipeline *pl);

/** Frees pl. WEFT_EBUSY (nothing freed): pl is running; NULL is a no-op.
 * Callable from: any thread. */
WEFT_API int  weft_pipeline_destroy(weft_pipeline *pl);

/** The line running this call, 0..lines-1: the index of per-line data
 * (a token keeps its line through every stage).
 * Callable from: a stage's function, with its pf. */
WEFT_API size_t weft_pipe_line(const weft_pipe *pf);

/** The stage running this call, 0..n-1.
 * Callable from: a stage's function, with its pf. */
WEFT_API size_t weft_pipe_stage_index(const weft_pipe *pf);

/** The token this call works on: 0, 1, 2, ... in the order the first
 * stage made them. Callable from: a stage's function, with its pf. */
WEFT_API uint64_t weft_pipe_token(const weft_pipe *pf);

/** Stops the pipeline: the current token goes no further and no other
 * token is made; those made before it finish every stage. Ignored outside
 * the first stage. Callable from: a stage's function, with its pf. */
WEFT_API void weft_pipe_stop(weft_pipe *pf);

/* ---- task groups -------------------------------------------------------- */

/** A task group: embedded by the caller; every field is private. */
typedef struct weft_group { uint64_t private_[12]; } weft_group;

/** Initializes gr to spawn tasks on s. WEFT_EINVAL: gr or s NULL.
 * Callable from: any thread. */
WEFT_API int  weft_group_init(weft_group *gr, weft_sched *s);

/** Spawns fn(arg) as a member of gr. Returns 0; WEFT_EINVAL: gr or fn
 * NULL; WEFT_ENOMEM; WEFT_ECANCELED: gr was cancelled (nothing spawned);
 * WEFT_ESHUTDOWN: as weft_spawn. Callable from: any thread. */
WEFT_API int  weft_group_spawn(weft_group *gr, weft_fn fn, void *arg);

/** Waits until every member spawned so far has ended (run, or skipped by
 * a cancel); a task first runs its own queued children that no thread has
 * taken yet (its members, and tasks it spawned otherwise), as
 * weft_wait_until does. Returns WEFT_OK, WEFT_ECANCELED when gr was cancelled since its
 * init or last join (the join clears it), WEFT_ENOMEM at once from a
 * task whose worker has no fiber to go on with, or WEFT_ENOTBOUND when
 * members are left, gr's scheduler has no workers and the caller is
 * neither its bound thread nor its task (nobody would run them).
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_group_join(weft_group *gr);

/** Cancels gr: members not yet started are skipped, later spawns are
 * refused until the next join; running members go on (they may poll
 * weft_group_cancelled). Callable from: any thread. */
WEFT_API void weft_group_cancel(weft_group *gr);

/** Sets the function a member skipped by a cancel calls instead of its
 * fn, with the member's arg (to free what arg owns); NULL (the default
 * after weft_group_init): a skipped member calls nothing. Set it before
 * the spawns it concerns. Callable from: any thread. */
WEFT_API void weft_group_set_skip(weft_group *gr, weft_fn skip);

/** Has gr been cancelled since its init or last join?
 * Callable from: any thread. */
WEFT_API bool weft_group_cancelled(const weft_group *gr);

/** Ends gr's life: it joins first, so no member outlives it (it cannot
 * refuse: on a scheduler with no workers, a thread that is neither its
 * bound thread nor its task waits until the bound thread runs the
 * members left; weft_group_join there says WEFT_ENOTBOUND instead).
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API void weft_group_destroy(weft_group *gr);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_FLOW_H */
