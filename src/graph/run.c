/* This file is private to weft: running task graphs — visiting nodes
 * (join counters, continuation, skipping), the walk a record of a graph
 * makes, and the spread of the roots. A run's start, end and the waiting
 * for it are series.c's; the cancel marks and a task's state inspect.c's;
 * the Synchronization below covers all three, as one protocol.
 *
 * Synchronization
 *   lock        g's spin lock: build calls, the start and the end of a run,
 *               the waiter queue, result. A spin lock and not a mutex
 *               because its release is one store: the finisher's unlock
 *               is the last time a worker touches g, after which a waiter
 *               may free it.
 *   run         epoch << 1 | running. Written under the lock by
 *               weft_graph_run (release) and by the finisher (release);
 *               read by cancel, state and visit (acquire, or relaxed where
 *               the queues already order it).
 *   join        per node: predecessors not yet visited. Decremented by
 *               each predecessor's visit (fetch_sub acq_rel); the one that
 *               takes it to 0 owns the node's dispatch. Reset to npred by
 *               the node's own visit, when no predecessor can touch it.
 *   ctl         per node: cancel mark, poison, last visit and its epoch.
 *               The claim is a CAS (acq_rel), or only its load where it
 *               would write what it read (see below); cancel and reset are RMWs
 *               (acq_rel); poison is a fetch_or (relaxed: the queue or
 *               the continuation that makes the node ready publishes it).
 *               A skipped predecessor of a node with several marks the
 *               join word instead (WEFT__JOIN_POISON, an RMW: the drop
 *               that ends the count reads it in the value).
 *   done        per node: epoch in which fn last returned (store-release
 *               by the visit; load-acquire by get_state).
 *   sinks_left  sinks whose visit has not been counted yet this run:
 *               fetch_sub acq_rel, once per record for all the sinks its
 *               fiber visited; the one that takes it to 0 ends the run.
 *   skipped     set (relaxed) by a visit that skips; read by the finisher,
 *               which the join and sinks_left release chains order after.
 *   fail_err, failed  the run's first failure (a word that says whose
 *               code it is: graph.h's WEFT__FAIL_*) and its task: CAS
 *               (relaxed) by the failing visit, the first by completion
 *               wins; read by the finisher as skipped is; cleared by the
 *               start under the lock; read under the lock by
 *               weft_graph_fail_code and failed_task (inspect.c).
 *   cancel_epoch  stored by weft_graph_cancel (relaxed), read at each claim;
 *               then weft__cancel_gen is bumped, so that runs inside this
 *               one stop trusting their up_clear (module.c).
 *   parent, sf_up, inside  the task of another graph a run is part of
 *               (a module's, a subflow's, a join's: module.c, subflow.c);
 *               inside caches "either is set" for the claims, written by
 *               the run's start, which the queues publish.
 *   attributes  a task's priority, pin and semaphore, and what its visit
 *               holds of them: attr.c's, asked by the general walk only
 *               (walk_special); vis->unit, vis->skip, vis->fail are the
 *               fiber's own.
 *   fstate.upper  per fiber (core's weft__fstate): the graph whose record
 *               the fiber is running, set and restored by weft__node_entry
 *               and read by weft_graph_wait on the same fiber. With it the
 *               visit keeps fstate.nest as it was when the walk began: a
 *               deeper nest is work nested in a task's function (an
 *               inline child, a loop's chunk), which weft_task_fail and
 *               weft_task_current do not take for the task. Owner only:
 *               no atomics.
 *
 * A run, as numbered steps:
 *   1. weft_graph_run, under the lock: refuse if running; check the graph
 *      where the build left something to check (graph.c); epoch++; sinks_left = nsinks; skipped = false;
 *      run = epoch << 1 | 1 (release). Unlock.
 *   2. Queue roots[0] (from a worker of s: on its deque; from outside: on
 *      the global ring). Each root, before its visit, queues the roots
 *      that head the halves of its range and holds the next one to visit
 *      after itself (the spread, graph.h): held in the fiber's state
 *      (core's weft__hold), so that if the root's function blocks, the
 *      held root is queued before the fiber leaves. A fiber keeps no
 *      work to itself while it cannot run it. A run where a root has a
 *      priority or a pin does not spread: its first root queues every
 *      root where it goes, itself too, so that the roots, ready at the
 *      same moment, are picked by priority (attr.c, weft__attr_place_roots).
 *   3. Visit(t): claim t (CAS ctl to this epoch, RAN or SKIPPED: SKIPPED
 *      if cancelled, poisoned, or the run is cancelled); reset t's join;
 *      run fn; store done. For each successor v: drop v's join, marked
 *      poisoned first if t was skipped or failed; the drop that ends the
 *      count poisons v itself (ctl) when the mark is in the count (a node
 *      with one predecessor skips the atomics: its only predecessor is
 *      the one visiting, and poisons it directly). The first v that becomes
 *      ready is returned and visited next on this fiber (a loop, not
 *      recursion); the others go to this worker's deque.
 *   4. Visited sinks drop sinks_left (one fetch_sub for all the sinks one
 *      record's visits reached); at 0 the run is over: lock, set
 *      result, detach the waiters and write the result into each, run =
 *      epoch << 1 (release), unlock — the last touch of g — then wake the
 *      detached waiters (they live in their own frames until woken).
 *      When a waiter is a plain thread and the end is its record's last
 *      act (a tail walk: the worker only goes back to its loop), the
 *      worker first counts itself searching (core's park protocol, step
 *      4), so the thread's next run, queued at once, wakes no other.
 *   Why nothing touches g after step 4: the fiber running a record holds
 *   back the count of the sinks it visited until it has nothing more to
 *   visit, so the run cannot end while it still touches g. And a visit's
 *   reads of successors happen before their join decrements: until then
 *   each such successor is unvisited, so some sink is too. A root's
 *   spread reads g before the root's own visit, for the same reason.
 *
 * Cancel against claim: both are RMWs on ctl, so one comes first. If the
 * cancel mark is set first, the claim sees it and skips; if the claim
 * comes first, cancel sees RAN with that run's epoch, and returns false
 * if that run is still in flight when cancel reads `run` afterwards. The
 * read cannot be stale: every write to ctl during a run is an RMW, so a
 * claim before the mark heads a release sequence that cancel's acquiring
 * fetch_or reads from, and the store that started the claim's run
 * happens before that claim; cancel's later read of `run` sees that
 * store or a later one. So when it reads "no run in flight", every run
 * that starts afterwards claims t after the mark, and skips it.
 *
 * In the condition walk a claim that would write what it read writes
 * nothing: t was claimed RAN in this run already (only claims write an
 * epoch) and carries no mark: a loop's next visit of it. The argument
 * above still holds, as the run's first claim of t was a CAS and heads
 * the sequence cancel reads. A mark that happens before the load is seen
 * (coherence); one the load misses comes after this claim, as a cancel
 * after the CAS did, and skips t's next visit (weft.h: a task that ran in
 * the run in flight is skipped at its later visits). A loop saves a
 * locked instruction per task and iteration.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <ck_pr.h>

#include "graph.h"

/* How far ahead in build order a visit prefetches (see visit). */
#define WEFT__PREFETCH_AHEAD 16

/* ---- visiting a node ---------------------------------------------------------- */

/* What a copy of the walk (walk, below) may meet, three constants: sp,
 * condition tasks; all, also nested runs, a run inside another graph's,
 * hooks, small blocks; at, attributes (a priority, a pin, a semaphore:
 * attr.c) and, where all, condition tasks. sp and not all: the
 * condition walk, of a graph whose only special kind is the condition
 * task. all and not at: the nest walk (WEFT__WALK_NEST), of a graph with
 * nested runs or inside one, but with no task that has attributes and no
 * condition task: a subflow's sub-graph, as a recursion builds it. */
static inline __attribute__((always_inline))
bool conds(const weft_graph *g, const bool sp, const bool all, const bool at)
{
    return sp && (!all || (at && g->has_cond));
}

/* Claims t for this run: RAN, or SKIPPED if t is cancelled, poisoned or
 * the run is cancelled, or skip_now (attr.c decided so). true: run it.
 * sp: a task may be visited twice in a run (condition tasks). */
static inline __attribute__((always_inline))
bool claim(weft_graph *g, weft_task *t, uint32_t epoch, const bool sp, const bool all, bool skip_now)
{
    bool every = skip_now || atomic_load_explicit(&g->cancel_epoch, memory_order_relaxed) == epoch ||
                 (all && g->inside && weft__module_cancelled(g));
    uint32_t c = atomic_load_explicit(&t->ctl, memory_order_relaxed);
    /* Visited again in this run, RAN, no mark: no write (the essay says
     * why). The condition walk only: the others keep their code. */
    if (sp && !all && !every &&
        (c & ~(uint32_t)(WEFT__CTL_KEEP & ~WEFT__CTL_CANCEL)) ==
            ((epoch << WEFT__CTL_EPOCH_SHIFT) | ((uint32_t)WEFT__VISIT_RAN << WEFT__CTL_VISIT_SHIFT)))
        return true;
    for (;;) {
        bool skip = every || (c & (WEFT__CTL_CANCEL | WEFT__CTL_POISON));
        uint32_t visit = skip ? WEFT__VISIT_SKIPPED : WEFT__VISIT_RAN;
        uint32_t n = (epoch << WEFT__CTL_EPOCH_SHIFT) | (visit << WEFT__CTL_VISIT_SHIFT) |
                     (c & WEFT__CTL_KEEP);
        if (atomic_compare_exchange_weak_explicit(&t->ctl, &c, n,
                memory_order_acq_rel, memory_order_relaxed))   /* acq_rel: pairs with the fetch_or in weft_task_cancel */
            return !skip;
    }
}

static void queue_again(weft_graph *g, weft__worker *w, weft_task *v);

/* Submits rec, a record that visits v: a task with attributes goes
 * where its priority and pin say (attr.c), in the general walk only. */
static inline __attribute__((always_inline))
void submit_node(weft_graph *g, weft__worker *w, weft__task *rec, weft_task *v, const bool at)
{
    if (at && WEFT_UNLIKELY(weft__has_attr(v)))
        weft__attr_submit(g, w, rec, v);
    else
        weft__submit(g->sched, w, rec, WEFT_HINT_NONE);
}

/* Queues v as a record of its own. A graph with condition tasks counts
 * it in `pending` first (the run ends when that count of records queued
 * or running drops to 0), unless counted (attr.c counted a task waiting
 * for its semaphore). */
static inline __attribute__((always_inline))
void queue_node_counted(weft_graph *g, weft__worker *w, weft_task *v, const bool sp, const bool all,
                        const bool at, bool counted)
{
    if (conds(g, sp, all, at)) {
        if (!counted)
            atomic_fetch_add_explicit(&g->pending, 1, memory_order_relaxed);   /* before the submit, which publishes the record */
        if (atomic_fetch_or_explicit(&v->ctl, WEFT__CTL_QUEUED, memory_order_relaxed) & WEFT__CTL_QUEUED) {
            queue_again(g, w, v);   /* its own record is queued already */
            return;
        }
    }
    submit_node(g, w, weft__node_rec(v), v, at);
}

static inline __attribute__((always_inline))
void queue_node(weft_graph *g, weft__worker *w, weft_task *v, const bool sp, const bool all, const bool at)
{
    queue_node_counted(g, w, v, sp, all, at, false);
}

void weft__graph_queue(weft__worker *w, weft_task *v, bool counted)
{
    queue_node_counted(v->g, w, v, true, true, true, counted);
}

/* A record of core's that visits a node whose own record was queued
 * already (condition tasks can pick a task again before it ran). */
static void node_again(void *v)
{
    weft__graph_walk(weft__tls_worker, v, NULL);
}

/* queue_node for a node already queued: through a task record from the
 * worker's pool. If none can be had (out of memory), the pick joins the
 * queued one: the node runs once for both (weft.h). */
static void queue_again(weft_graph *g, weft__worker *w, weft_task *v)
{
    weft__task *r = weft__task_alloc(g->sched, w);
    if (!r) {
        atomic_fetch_sub_explicit(&g->pending, 1, memory_order_relaxed);   /* the caller's own record keeps it above 0 */
        return;
    }
    r->fn = node_again;
    r->arg = v;
    r->spawner = NULL;   /* nobody's child: never run inline by a join */
    submit_node(g, w, r, v, true);
}

/* t fails with fail (a failure word: its function's weft_task_fail, or
 * weft's code): t is FAILED, the run's first failure is remembered, word
 * and all, and a fail-fast graph cancels the rest of the run. Callable
 * from: t's visit, after fn returned (or instead of it). */
static __attribute__((noinline, cold)) void fail_task(weft_graph *g, weft_task *t, uint32_t epoch, uint64_t fail)
{
    /* The run's first failure and fail-fast's cancel before t shows
     * FAILED: whoever sees FAILED and then fails or starts a task is
     * after them (the fetch_or releases them). */
    uint64_t none = 0;
    if (atomic_compare_exchange_strong_explicit(&g->fail_err, &none, fail,
            memory_order_relaxed, memory_order_relaxed))   /* the first by completion; the join and sinks_left chains order it before the end */
        atomic_store_explicit(&g->failed, t->index, memory_order_relaxed);
    if (g->fail_fast) {
        atomic_store_explicit(&g->cancel_epoch, epoch, memory_order_relaxed);   /* as weft_graph_cancel */
        weft__cancel_bump();
        if (g->nattr || g->has_nested) {
            /* As weft_graph_cancel: tasks waiting for semaphore units
             * are skipped now, not once a unit comes (attr.c). */
            weft__graph_lock(g);
            weft__attr_end_waits(g);
            weft__graph_unlock(g);
        }
    }
    atomic_fetch_or_explicit(&t->ctl, (uint32_t)WEFT__VISIT_FAILED << WEFT__CTL_VISIT_SHIFT,
                             memory_order_acq_rel);   /* RAN -> FAILED; acq_rel: as the claim */
}

/* The end of t's visit, once its function has run (ran: and neither
 * failed nor was skipped; pick: a condition's answer): its successors'
 * joins drop. Returns the successor to visit next on this fiber, or
 * NULL. first: t's first successor's node, or NULL. */
static inline __attribute__((always_inline))
weft_task *visit_tail_joins(weft__worker *w, weft_graph *g, weft_task *t, uint32_t epoch, const bool sp,
                            const bool all, const bool at, bool ran, int pick, weft_task *first, uint32_t *sinks)
{
    if (ran)
        atomic_store_explicit(&t->done, epoch, memory_order_release);      /* release: pairs with acquire in get_state */
    else if (!atomic_load_explicit(&g->skipped, memory_order_relaxed))
        atomic_store_explicit(&g->skipped, true, memory_order_relaxed);    /* ordered before the end by the release chains */

    uint32_t n = t->nsucc;
    if (n == 0) {
        ++*sinks;
        return NULL;
    }

    const uint32_t *succ = weft__succ(t);
    if (conds(g, sp, all, at) && weft__is_cond(t)) {
        if (!ran || pick < 0 || (uint32_t)pick >= n)
            return NULL;
        return pick == 0 ? first : weft__graph_node(g, succ[pick]);   /* first: looked up already */
    }
    /* The first successor is the visit's `first`, found before fn: its
     * node is not looked up again (a chain's link has only it). */
    weft_task *next = NULL;
    bool high = false;   /* attr.c: a HIGH successor was queued */
    weft_task *v = first;
    for (uint32_t i = 1;; i++) {
        bool ready;
        if (v->npred == 1) {
            ready = true;   /* its only predecessor is this one */
            if (!ran)
                atomic_fetch_or_explicit(&v->ctl, WEFT__CTL_POISON, memory_order_relaxed);   /* published by the queue or the continuation */
        } else {
            /* The poison rides in the join word, so only the visit the
             * count makes ready sees it: a count that never ends (a
             * branch not taken, in a loop) leaves no poison for a
             * condition's pick of v (weft.h), and v's next visit resets
             * the word. The bit is in the value every later RMW reads. */
            if (!ran)
                atomic_fetch_or_explicit(&v->join, WEFT__JOIN_POISON, memory_order_relaxed);   /* read by the decrement that ends the count */
            uint32_t old = atomic_fetch_sub_explicit(&v->join, 1, memory_order_acq_rel);       /* acq_rel: the last one sees every predecessor's writes */
            ready = (old & ~WEFT__JOIN_POISON) == 1;
            if (ready && (old & WEFT__JOIN_POISON))
                atomic_fetch_or_explicit(&v->ctl, WEFT__CTL_POISON, memory_order_relaxed);   /* published by the queue or the continuation */
        }
        if (ready) {
            /* Asked of every ready successor, not only while no
             * continuation is chosen: a HIGH one met after it must still
             * send the continuation to the queues (below). */
            bool placed = at && WEFT_UNLIKELY(weft__has_attr(v)) && weft__attr_placed(v, &high);
            if (!next && !placed)
                next = v;   /* continuation: no queue trip */
            else
                queue_node(g, w, v, sp, all, at);   /* a task with a priority or pin is queued where it goes, never continued */
        }
        if (i == n)
            break;
        v = weft__graph_node_sp(g, succ[i], all);
    }
    if (at && WEFT_UNLIKELY(high) && next) {
        /* Siblings ready at once run HIGH first: the continuation waits
         * its turn in the queues rather than go ahead of them. */
        queue_node(g, w, next, sp, all, at);
        next = NULL;
    }
    return next;
}

/* visit_tail_joins, except on a bound thread that runs only its pinned
 * tasks (WEFT_BIND_NO_HELP): it goes on with none of t's successors
 * inline (any may be unpinned); the one it would have gone on with is
 * queued where it goes. The general walk only: no other is pinned. */
static inline __attribute__((always_inline))
weft_task *visit_tail(weft__worker *w, weft_graph *g, weft_task *t, uint32_t epoch, const bool sp,
                      const bool all, const bool at, bool ran, int pick, weft_task *first, uint32_t *sinks)
{
    weft_task *next = visit_tail_joins(w, g, t, epoch, sp, all, at, ran, pick, first, sinks);
    if (all && WEFT_UNLIKELY(next != NULL && weft__only_pinned(w))) {
        queue_node(g, w, next, sp, all, at);
        return NULL;
    }
    return next;
}

/* Marks a claimed t as SKIPPED after all (a module whose run was
 * cancelled): RAN -> SKIPPED, with the claim's ordering. */
static void unrun(weft_task *t)
{
    atomic_fetch_xor_explicit(&t->ctl, (uint32_t)(WEFT__VISIT_RAN ^ WEFT__VISIT_SKIPPED) << WEFT__CTL_VISIT_SHIFT,
                              memory_order_acq_rel);
}

/* Sentinel: a visit that continues later (a module's run started). */
#define WEFT__DEFERRED ((weft_task *)(uintptr_t)1)

/* Step 3. Returns the successor to visit next on this fiber, NULL, or
 * WEFT__DEFERRED if t is a module task whose graph's run started: t's
 * visit finishes when that run ends (weft__module_end), and t is not a
 * sink of this record's. A visited sink is counted in *sinks, for the
 * caller to drop sinks_left by all of them at once (step 4) when it has
 * nothing more to visit: the run cannot end before that, so g stays
 * valid until then. A condition task's visit schedules the one successor
 * its answer picks, outright (a weak edge: no join), as the next to
 * visit here (a multi-condition's function queued the others first:
 * weft__mcond_call). Callable from: a worker (or bound thread) of the run's
 * scheduler. */
/* A traced or observed task begins: its name is read under g's lock (a
 * rename may free it) into a copy the hooks use during the call (the
 * recording copies it again into its own arena, by content). */
static __attribute__((noinline)) void hook_begin(weft__worker *w, weft_task *t)
{
    weft_graph *g = t->g;
    char name[WEFT__TNAME_MAX + 1];
    bool named = false;
    weft__graph_lock(g);
    if (g->names && t->index < g->names_cap && g->names[t->index]) {
        snprintf(name, sizeof name, "%s", g->names[t->index]);
        named = true;
    }
    weft__graph_unlock(g);
    weft__hook_task_begin(w, named ? name : NULL, t->fn, true);
}

static inline __attribute__((always_inline))
weft_task *visit(weft__worker *w, weft__visiting *vis, weft_task *t, uint32_t *sinks, const bool sp,
                 const bool all, const bool at)
{
    weft_graph *g = t->g;
    /* The first successor's fields are read after fn: start fetching its
     * line now, so that the miss overlaps the claim and fn instead of
     * following them (a chain of nodes out of cache is otherwise one miss
     * per visit, paid in full). */
    weft_task *first = NULL;   /* read only where t has successors (visit_tail) */
    if (t->nsucc) {
        first = weft__graph_node_sp(g, weft__succ(t)[0], all);   /* node addresses never move */
        __builtin_prefetch(first, 1);
    }
    /* And the node 16 places on in build order: graphs are mostly built in
     * the order they run (chains, rows), so this keeps a memory-latency
     * worth of nodes in flight where the successor pointer alone gives
     * one (chain of 2^20 nodes at 1 worker, best of 5, three alternating
     * runs: 10.9-12.3 -> 8.2-9.1 ns per node; 8 places on gave about half
     * of that, 32 no more than 16). In a graph built in another order it
     * costs a useless prefetch. */
    if (t->index + WEFT__PREFETCH_AHEAD < g->n)
        __builtin_prefetch(weft__graph_node_sp(g, t->index + WEFT__PREFETCH_AHEAD, all), 1);
    /* Relaxed: the run's start reached this thread through the queue that
     * delivered a root, and every node after it through join's chain. */
    uint32_t epoch = atomic_load_explicit(&g->run, memory_order_relaxed) >> 1;
    bool ran = claim(g, t, epoch, sp, all, at && vis->skip);   /* attr.c: a task it let through without a unit is skipped */
    if (at)
        vis->skip = false;
    if (conds(g, sp, all, at))
        atomic_store_explicit(&t->done, WEFT__NO_EPOCH, memory_order_relaxed);   /* a loop's next visit reads RUNNING again */
    if (t->npred > 1)
        atomic_store_explicit(&t->join, t->npred, memory_order_relaxed);   /* every predecessor is done with it; the run's end publishes it */
    int pick = -1;
    if (at && WEFT_UNLIKELY(vis->fail != 0)) {
        /* attr.c: t fails before its function starts (its pinned thread
         * is gone), as weft_task_fail would have it. */
        if (ran)
            fail_task(g, t, epoch, vis->fail);
        vis->fail = 0;
        ran = false;
    } else if (ran && t->fn) {
        vis->cur = t;
        /* Traced or observed: the walk is the special one (node_entry). */
        const bool hooked = all && WEFT_UNLIKELY(weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE));
        if (hooked)
            hook_begin(w, t);
        if (all && WEFT_UNLIKELY(g->has_nested) && weft__is_nested(g, t)) {
            if (weft__nested_start(w, vis, t, hooked))
                return WEFT__DEFERRED;   /* its graph runs: t finishes when it ends */
        } else if (conds(g, sp, all, at) && weft__is_cond(t)) {
            weft_cond_fn f;
            memcpy(&f, &t->fn, sizeof f);   /* stored as a weft_fn (graph.c); a multi-condition's is weft__mcond_call */
            pick = f(t->arg);
        } else if (t->fn) {
            t->fn(t->arg);
        }
        if (hooked)
            weft__hook_task_end(w);
        if (WEFT_UNLIKELY(vis->fail)) {   /* 0 between failures: reset here, not per visit */
            fail_task(g, t, epoch, vis->fail);
            vis->fail = 0;
            ran = false;   /* its dependents are skipped; a condition picks nothing */
        }
    }
    if (at && WEFT_UNLIKELY(vis->unit != NULL)) {
        /* attr.c: t's semaphore unit goes back once fn has returned (or
         * t was skipped after all), before the joins drop: the run, and
         * so the semaphore's life, cannot end before. */
        weft_sem_release(vis->unit);
        vis->unit = NULL;
    }
    return visit_tail(w, g, t, epoch, sp, all, at, ran, pick, first, sinks);
}

/* A module task's visit, finished now that its graph's run ended with
 * end (weft__graph_walk's completion): done (0), failed with the graph's
 * first failure, its word as is (so a user's code stays the user's up
 * to any depth), or skipped (WEFT__FAIL_SKIPPED), and its successors go
 * on. */
static inline __attribute__((always_inline))
weft_task *module_done(weft__worker *w, weft_task *t, uint64_t end, uint32_t *sinks, const bool at)
{
    weft_graph *g = t->g;
    uint32_t epoch = atomic_load_explicit(&g->run, memory_order_relaxed) >> 1;   /* t's run is in flight: t is not done */
    bool ran = true;
    if (end == WEFT__FAIL_SKIPPED) {
        unrun(t);
        ran = false;
    } else if (end != 0) {
        fail_task(g, t, epoch, end);
        ran = false;
    }
    if (at && weft__has_attr(t))
        weft__attr_module_done(t);   /* attr.c: gives back the unit it held while its graph ran */
    weft_task *first = t->nsucc ? weft__graph_node(g, weft__succ(t)[0]) : NULL;
    return visit_tail(w, g, t, epoch, true, true, at, ran, -1, first, sinks);
}

/* The spread. The root at place p owns the places [p, p + len), len the
 * lowest set bit of p (for p = 0: the whole array, rounded up to a power
 * of two). It queues the roots at p + len/2, p + len/4, ..., p + 2, each
 * owning the next half down, and returns the one at p + 1 for this fiber
 * to visit after t (NULL if none). The owner pops them back nearest
 * first, so roots are visited in array order (memory order, for graphs
 * built in order); thieves steal the largest ranges; about half the
 * roots never touch a queue. Callable from: the worker visiting root t,
 * before t's visit. */
static inline __attribute__((always_inline))
weft_task *spread(weft__worker *w, weft_task *t, const bool sp, const bool all, const bool at)
{
    weft_graph *g = t->g;
    uint64_t p = atomic_load_explicit(&t->join, memory_order_relaxed);   /* a root's place; fixed during a run */
    uint64_t n = g->nroots;
    uint64_t len = p & (~p + 1);
    if (p == 0)
        for (len = 1; len < n; len *= 2)
            ;
    for (uint64_t half = len / 2; half >= 2; half /= 2)
        if (p + half < n)
            queue_node(g, w, weft__graph_node_sp(g, g->roots[p + half], all), sp, all, at);
    return len >= 2 && p + 1 < n ? weft__graph_node_sp(g, g->roots[p + 1], all) : NULL;
}

/* A visit that reached a sink goes on with the newest node on its
 * worker's deque, if that is one of the same graph's (mostly the sibling
 * its own visit queued; anything else goes back), at most this many
 * times per record: the sinks
 * it counts drop sinks_left once, and the trip through the worker's loop
 * is saved (binary tree 2^20 at 1 worker: a third of the run). The
 * bound lets the loop look at ready fibers and the global ring as
 * usual. */
#define WEFT__TAKE_OWN_MAX 64

static bool same_graph(weft__task *rec, void *g)
{
    return ((weft_task *)(void *)rec)->g == g;   /* a hook record is a node (graph.h) */
}

/* The general walk's test, when it may go on in another graph (hop,
 * below): any node. */
static bool any_graph(weft__task *rec, void *g)
{
    (void)rec;
    (void)g;
    return true;   /* a hook record is a node (graph.h) */
}

/* Callable from: run_task on a worker (or bound thread) of the run's
 * scheduler, as the record's fn. */
static void walk_special(weft__worker *w, weft_task *t, const uint64_t *completion);
static weft_task *walk_hop(weft__worker *w, weft_task *t, uint32_t *left);
static void walk_nest(weft__worker *w, weft_task *t, const uint64_t *completion);
static weft_task *walk_nest_hop(weft__worker *w, weft_task *t, uint32_t *left);
static void walk_cond(weft__worker *w, weft_task *t);
static void walk_plain(weft__worker *w, weft_task *t);

/* A record's walk. A general walk that found nothing more of its graph
 * may take a node of another graph off the deque instead (hop: a module
 * or subflow task's visit queued its graph's first root there), ending
 * its own walk first; the loop here then walks that one as if core had
 * run its record, without the trip through core's loop. Only here, at
 * the bottom of the fiber's stack: a walk that finishes a module task
 * (weft__graph_walk, nested in the run end of the graph under it) does
 * not hop, so the stack stays as deep as the graphs nest. The walks of
 * one record share one bound on takes, hops included
 * (WEFT__TAKE_OWN_MAX), so the worker's loop still looks at ready fibers
 * and the global ring as often. A record run nested in a task's function
 * (a join's inline runs, subflow.c) walks without hops. Only graphs with module or subflow tasks,
 * or running inside one, hop (walk_hop, a copy of the walk of its own;
 * walk_nest_hop for a graph that runs WEFT__WALK_NEST). A graph whose
 * only special kind is the condition task (WEFT__WALK_COND) has one too
 * (walk_cond), untraced: a loop's visits ask less there. */
void weft__node_entry(void *arg)
{
    weft_task *t = arg;
    /* Fibers are pinned: a fn that blocks resumes on this worker. */
    weft__worker *w = weft__tls_worker;
    uint32_t left = WEFT__TAKE_OWN_MAX;   /* takes and hops, for all the walks of this record */
    for (;;) {
        if (WEFT_UNLIKELY(t->g->special || (weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE)))) {
            if (t->g->has_cond)
                atomic_fetch_and_explicit(&t->ctl, ~(uint32_t)WEFT__CTL_QUEUED, memory_order_relaxed);   /* its record is out of the queues: it may go in again */
            /* Nested in a task's function (a subflow join runs its
             * sub-graph's records inline: weft__help_hooks_until), the
             * walk does not hop: a node of another graph is no work the
             * join waits for, and must not run under it. */
            if ((!t->g->has_nested && !t->g->inside) || weft__fstate_cur(w)->upper != NULL) {
                if (t->g->special == WEFT__WALK_COND && !(weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE)))
                    walk_cond(w, t);
                else if (t->g->special == WEFT__WALK_NEST)
                    walk_nest(w, t, NULL);
                else
                    walk_special(w, t, NULL);
                return;
            }
            t = t->g->special == WEFT__WALK_NEST ? walk_nest_hop(w, t, &left) : walk_hop(w, t, &left);
            if (WEFT_LIKELY(t == NULL))
                return;
            if (WEFT_UNLIKELY(weft__worker_tracks(w)))
                weft__track_task(w, weft__node_entry, t);   /* stall reports name the node visited now */
        } else {
            walk_plain(w, t);
            return;
        }
    }
}

void weft__graph_walk(weft__worker *w, weft_task *t, const uint64_t *completion)
{
    const bool hooked = weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE);
    if (completion || t->g->special || hooked) {
        if (!completion && t->g->special == WEFT__WALK_COND && !hooked)
            walk_cond(w, t);   /* node_again's record */
        else if (t->g->special == WEFT__WALK_NEST)
            walk_nest(w, t, completion);
        else
            walk_special(w, t, completion);
    } else {
        walk_plain(w, t);
    }
}

/* The walk, made six times: sp false for graphs with no condition or
 * module task, no task with attributes (attr.c), that do not run as a
 * module (g->special, fixed for a run), whose visits then test none of
 * it; sp true and all false for the condition walk (conds, above); all
 * true with at true (the general walk) or false (the nest walk: no
 * attribute, no condition task, so none of attr.c's tests, fixed for the
 * run as nattr and has_cond are: attributes and adds are refused while a
 * graph runs); hop true (node_entry's walks of graphs with nested runs)
 * for a walk that may end in a node of another graph's, returned (left:
 * the takes the record has left, shared with its hops), of either
 * kind. A subflow recursion's visits are almost all the nest walk's
 * (fib: 1123 -> 1058 instructions a call in the sum form; the study
 * issue35-walk). */
static inline __attribute__((always_inline))
weft_task *walk(weft__worker *w, weft_task *t, const uint64_t *completion, const bool sp, const bool all,
                const bool at, const bool hop, uint32_t *left)
{
    weft_graph *g = t->g;
    /* Read now: once this record has visited its last node, g may have
     * been freed by the run's end elsewhere (a record with no sink of its
     * own drops nothing and must not touch g). */
    const bool cond_mode = conds(g, sp, all, at);
    const bool flat = at && WEFT_UNLIKELY(g->flat_roots);   /* no root spreads: weft__attr_place_roots */
    /* How many records this one may take off the deque (weft__take_own):
     * none in shuffle mode, where the loop picks in the order it draws,
     * nor with HIGH tasks (attr.c), where the loop picks by priority.
     * Nor with roots that have a place (weft__attr_place_roots): they too are the
     * loop's to pick. All fixed for the run: asked once here, not at
     * every take. */
    uint32_t take_max = (at && g->nhigh != 0) || flat || weft__worker_shuffles(w) ? 0 : WEFT__TAKE_OWN_MAX;
    uint32_t sinks = 0, taken = 0;
    uint64_t units = 1;     /* with condition tasks: records of `pending` this one ends (itself first) */
    /* While g's tasks run on this fiber, weft_graph_wait(g) from here
     * would wait for its own end: it reads this. Saved and put back, as a
     * task of ours may run another graph's tasks nested on this fiber
     * (weft_wait_until runs the fiber's own children inline, and a run
     * started here spreads its roots as such). The fiber keeps it while a
     * task blocks; other fibers have their own. */
    weft__fstate *st = weft__fstate_cur(w);
    void *outer = st->upper;
    weft__visiting vis = { g, NULL, st->nest, 0, NULL, false, hop ? left : NULL, NULL };
    st->upper = &vis;
    bool fresh = !completion;   /* attr.c: t came off a queue, not as a continuation */
    /* Whether this walk is all that is left of its record, so that a run
     * it ends is the record's last act (step 4's waker, series.c): not a
     * hop (another graph's walk may follow), nor a module's continuation
     * (completion: the walk under it goes on), nor nested in a task's
     * function (outer, nest). */
    const bool tail = !hop && !completion && !outer && vis.nest == 0;
    if (hop && *left < take_max)
        take_max = *left;   /* node_entry: what this record's earlier walks left */
    for (;;) {
        /* A root spreads before its visit: the run cannot end before it.
         * The next root is held, not kept in a local: if t's function
         * blocks, it is queued before the fiber leaves (weft__hold), so
         * a root that t waits for is never stuck behind t. A root with
         * attributes spreads where it is first met, before it is sent to
         * its place or its semaphore: its range never waits behind it. */
        const bool attr = at && !completion && WEFT_UNLIKELY(weft__has_attr(t));
        weft_task *root = !completion && !flat && weft__is_root(t) && (!attr || weft__attr_spread(t))
                              ? spread(w, t, sp, all, at) : NULL;
        if (root) {
            if (WEFT_UNLIKELY(cond_mode))
                atomic_fetch_add_explicit(&g->pending, 1, memory_order_relaxed);   /* counted as if queued: it may be */
            weft__hold(w, weft__node_rec(root));
        }
        weft_task *next;
        if (flat && !completion && weft__is_root(t) && weft__attr_place_roots(w, g, t)) {
            next = NULL;   /* every root queued, t too: the loop picks them by priority */
        } else if (all && WEFT_UNLIKELY(completion != NULL)) {
            next = module_done(w, t, *completion, &sinks, at);   /* spread at its first visit */
            completion = NULL;
        } else if (attr && !weft__attr_ready(w, &vis, t, fresh)) {
            next = NULL;   /* attr.c sent t to its place or its semaphore: it comes back as a record */
        } else {
            next = visit(w, &vis, t, &sinks, sp, all, at);
            if (all && WEFT_UNLIKELY(next == WEFT__DEFERRED))
                next = NULL;   /* a module's run started: t finishes when it ends */
        }
        if (root && !weft__unhold(w, weft__node_rec(root)))
            root = NULL;   /* queued while t blocked: it runs as a task of its own */
        if (root) {
            /* Two to go on with: the successor stays (locality), the
             * root is queued. */
            if (next) {
                weft__submit(weft__worker_sched(w), w, weft__node_rec(root), WEFT_HINT_NONE);   /* counted at the hold */
            } else {
                next = root;
                units++;
            }
        }
        if (!next) {
            if (taken == take_max)
                break;
            next = (weft_task *)(void *)weft__take_own(w, hop ? any_graph : same_graph, g);
            if (!next)
                break;
            if (hop && next->g != g) {
                /* Its graph's walk goes on after this one ends (node_entry). */
                vis.other = next;
                taken++;
                weft__count_runs(w, 1);   /* as a take below */
                break;
            }
            if (WEFT_UNLIKELY(cond_mode))
                atomic_fetch_and_explicit(&next->ctl, ~(uint32_t)WEFT__CTL_QUEUED, memory_order_relaxed);   /* as in weft__node_entry */
            taken++;
            units++;
            /* Counted as run now, before its visit, as weft__count_inline
             * counts a continuation: this walk's own record is counted
             * only when the walk returns, so the sums cannot balance
             * early; and the watchdog sees progress at every take. */
            weft__count_runs(w, 1);
            fresh = true;
        } else {
            weft__count_inline(w);
            fresh = false;
        }
        t = next;
        if (sp && !all) {
            /* Hooks read at each visit, as the general walk does: a trace
             * started in a long loop shows it. t goes to the general walk
             * through the queues (node_entry), counted as run twice. */
            const unsigned h = weft__hooks(w);
            if (WEFT_UNLIKELY(h != 0)) {
                if (h & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE)) {
                    queue_node(g, w, t, sp, all, at);
                    break;
                }
                weft__track_task(w, weft__node_entry, t);   /* HOOK_TRACK: as below */
            }
        } else if (WEFT_UNLIKELY(weft__worker_tracks(w))) {
            weft__track_task(w, weft__node_entry, t);   /* stall reports name the node visited now */
        }
    }
    if (hop)
        *left -= taken;
    if (taken)
        weft__count_local_runs(w, taken);   /* once per record; before the run can end, so a waiter sees them */
    st->upper = outer;   /* before the run can end: g may be freed then */
    /* Step 4, for every sink this fiber visited; the last touch of g
     * unless it ends the run. With condition tasks not every task is
     * visited (and some more than once): the run ends when no record of
     * it is queued or running. */
    if (WEFT_UNLIKELY(cond_mode)) {
        if (atomic_fetch_sub_explicit(&g->pending, units, memory_order_acq_rel) == units)   /* acq_rel: as sinks_left */
            weft__run_ended(w, g, tail);
    } else if (sinks && atomic_fetch_sub_explicit(&g->sinks_left, sinks, memory_order_acq_rel) == sinks) {   /* acq_rel: the last drop sees every visit */
        weft__run_ended(w, g, tail);
    }
    return hop ? vis.other : NULL;
}

static __attribute__((noinline)) void walk_special(weft__worker *w, weft_task *t, const uint64_t *completion)
{
    (void)walk(w, t, completion, true, true, true, false, NULL);
}

static __attribute__((noinline)) weft_task *walk_hop(weft__worker *w, weft_task *t, uint32_t *left)
{
    return walk(w, t, NULL, true, true, true, true, left);
}

static __attribute__((noinline)) void walk_nest(weft__worker *w, weft_task *t, const uint64_t *completion)
{
    (void)walk(w, t, completion, true, true, false, false, NULL);
}

static __attribute__((noinline)) weft_task *walk_nest_hop(weft__worker *w, weft_task *t, uint32_t *left)
{
    return walk(w, t, NULL, true, true, false, true, left);
}

static __attribute__((noinline)) void walk_cond(weft__worker *w, weft_task *t)
{
    (void)walk(w, t, NULL, true, false, false, false, NULL);
}

static void walk_plain(weft__worker *w, weft_task *t)
{
    (void)walk(w, t, NULL, false, false, false, false, NULL);
}
