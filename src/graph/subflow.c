/* This file is private to weft: subflow tasks (a task that builds a
 * sub-graph while its function runs, joined before its successors go
 * on) and multi-condition tasks (a condition that picks several
 * successors).
 *
 * A subflow task has a record in its graph (weft__sfrec, graph.h: its
 * function, arg and sub-graph; the task's arg is its place in the
 * graph's sfrecs array), and the function's sf is that record. Its
 * sub-graph is a graph of its own, made (or taken from the graph's
 * spares) by the first add of a visit's function (sub_attach), not by
 * the task's add: a function that adds nothing (a recursion's leaf: half
 * of its calls) never touches a sub-graph, at its add or its visit, and
 * a recursion's memory holds sub-graphs for its inner calls only. Once
 * made, the record keeps it for the task's later visits. Each visit
 * empties the sub-graph it has and calls the task's function; the
 * function adds tasks and edges; when it returns, the visit starts the
 * sub-graph's run exactly as a module task starts its graph's (module.c:
 * sub->parent is the task, the task's visit is finished by whichever
 * thread ends the sub-graph's run, and no fiber waits). A function that
 * added nothing starts no run: the visit gives the record back and goes
 * on (weft__subflow_visit). So everything that crosses a module's edge
 * crosses a subflow's: a cancel of the outer run skips the sub-graph's
 * tasks, a failure in it fails the task with the same word (a user's
 * code stays the user's at any depth), a skip skips it. A subflow task
 * in a sub-graph nests: its own sub-graph hangs off its record.
 *
 * An explicit join (weft_subflow_join) runs the sub-graph as a run of
 * its own from the task's function, with sub->sf_up set to the task so
 * that cancels (claim, weft__module_cancelled) and weft_graph_wait's
 * refusal (weft__runs_within) see through it as through parent, and waits
 * for it on the function's fiber; then empties it. A record with no
 * sub-graph joins at once: nothing was added.
 *
 * Joining inline. The run's start queues its first root on the joining
 * worker's deque, and its visits queue the rest there. Before it parks,
 * the join runs, newest first, the records on top of its own deque that
 * are its sub-graph's work (sub_mine: nodes of the sub-graph, or of a
 * graph running inside it), on its own fiber, through core's
 * weft__help_hooks_until: work-first, as weft_group_join runs its own
 * members, with no switch, park or wake when nobody took any. It stops
 * at the first record that is not the sub-graph's (left where it was),
 * at an empty deque, or at core's inline depth bound (the one
 * weft_wait_until keeps, so a recursion of joins nests no deeper on one
 * fiber's stack), and parks only for what other workers took. Such a
 * record's walk does not hop to another graph's node (run.c,
 * weft__node_entry): only the sub-graph's work runs under the join. A
 * record run inline that blocks suspends the joining fiber with it, and
 * its worker goes on with the rest (the deque, other fibers): the join
 * waited for that record anyway. So the inline rule of weft_wait_until
 * holds as is: a sub-graph task must not block on what the function does
 * after the join returns, which a parked join would never reach either.
 * A bound thread does not help (as weft_group_join): it parks at once.
 *
 * Joining's start and end. A join starts its run in one hold of the
 * sub-graph's lock (series.c, weft__run_start_join: sf_up, the setup,
 * the trace mark; the first root queued after the unlock), where
 * weft_graph_run's start would take its short way anyway: no run in
 * flight, no module (whose check may let go of the lock), no pinned
 * task, a root, a worker of the graph's scheduler; anything else goes
 * through weft_graph_run as before. Its end reads the run's result and
 * failure, clears sf_up and empties the sub-graph in one hold too. Both
 * holds are the ones weft_graph_run, the read and weft__graph_clear took
 * one after the other; nothing is read or written outside the lock that
 * was not before.
 *
 * Solo builds. A sub-graph's adds and edges take its lock, and in a
 * recursion (fib: three adds and two edges a call) those five locked
 * exchanges were a seventh of a call's CPU time, though almost always no
 * other thread comes near the sub-graph while the function builds it.
 * Any thread may add while the function runs (graph.h), and a DOT dump,
 * a stall report, a name or an attribute may lock it at any time, so
 * the visit cannot know that nobody will; it builds without the lock
 * until somebody takes it, and that thread pays for the switch. The
 * visit holds the lock meanwhile in a word of its own: g's lock word is
 * WEFT__LOCK_SOLO (graph.h), which no plain lock ever sees as free. With
 * g the sub-graph (its lock word, solo_op, solo_fib, solo_revoked):
 *   A.  The task's visit arms g (solo_fib = its fiber; the word
 *       WEFT__LOCK_SOLO, stored with release as its unlock would store
 *       0): as it lets go of the lock after emptying g at its start or
 *       after a join, or at its first add (sub_arm, one hold of the
 *       lock), or before g is published at all (sub_attach: a thread
 *       reaches g through the outer graph's lock, after the
 *       publication). Not after a taker ended this build's solo
 *       (solo_revoked), nor where the light fence below would be a real
 *       fence (no membarrier: the lock stays; TSAN builds arm anyway,
 *       with seq_cst fences on both sides, to check the protocol).
 *   O1. An add or edge by that fiber (weft__solo_mine: the word is
 *       WEFT__LOCK_SOLO and solo_fib is the caller's fiber, so work
 *       nested in the function counts as the visit's: it runs between
 *       the visit's own steps, never beside them) stores solo_op = 1;
 *   O2. weft__fence_light (a compiler barrier; membarrier makes up the
 *       rest); loads the word: WEFT__LOCK_SOLO, it goes on without the
 *       lock; else it stores solo_op = 0 and takes the lock as before;
 *   O3. done, solo_op = 0 (release).
 *   R1. Any thread's exchange on the lock that reads WEFT__LOCK_SOLO
 *       (weft__graph_lock, weft__graph_lock_for) holds the lock now,
 *       the word 1; it sets solo_revoked; on the visit's own fiber that
 *       is all (it is not inside an op: a condition added, a name set, a
 *       join, the run's start after the function returned);
 *   R2. weft__fence_heavy (membarrier: a full barrier on every running
 *       thread);
 *   R3. waits, with the lock held, until solo_op reads 0 (acquire),
 *       and only then reads or writes g.
 *   E.  A visit whose function returned and that will not lock g (it
 *       added nothing, or failed) gives the word back (a compare and
 *       swap to 0, release: a taker may have it already). One that goes
 *       on to start g's run takes the word over at that lock (R1, on
 *       its own fiber).
 * Why no two touch g at once: O1-O2 and R1-R3 are Dekker's two halves
 * with R2 the fence of both (membarrier puts a full barrier between any
 * two of the visit's instructions that straddle it): either O2 reads the
 * taker's 1, and the op takes the lock, which the taker holds; or R3
 * reads O1's 1 and waits for O3, whose release hands it the op's writes.
 * An op that starts after R3 reads 1 (or 0) in O2. The word becomes
 * WEFT__LOCK_SOLO only from a hold of the lock (or before publication),
 * so a taker's acquiring exchange reads it or a later value. The op
 * runs no user code and takes no lock, so R3's wait is a few dozen
 * instructions (or the visit's thread preempted inside one), and every
 * wait ends. A switch costs its thread one membarrier; the visit goes
 * on under the lock for the rest of that build. A graph that is no
 * sub-graph never holds the word, and its lock is the one exchange it
 * was. The run's start, end and visits are unchanged: the visit's
 * unlocked writes precede its run's start on its own fiber, which the
 * start's lock and the queues publish as before.
 *
 * Memory. Emptying keeps what the sub-graph had: its node blocks, its
 * arrays, its arena chunks (spare_chunks), and the sub-graphs of the
 * subflow tasks it held (sf_spare, handed to the next subflow task of it
 * whose function adds). So a subflow that builds the same shape at every
 * visit allocates at its first visit only; names and attributes set on
 * its tasks are the exception (freed at each emptying, made again).
 *
 * A multi-condition task is a condition task (WEFT__CTL_COND: its edges
 * are weak) whose fn is weft__mcond_call (below) and whose arg is a
 * weft__mcond in its graph's arena holding the user's function: called
 * as any condition, it asks the user's for its picks, queues all but one
 * and answers that one, which the visit goes on with. So the condition
 * path tests nothing more for it.
 *
 * Synchronization
 *   record   task, fn, arg written by the add that makes the task, under
 *            the outer graph's lock, before any run can read them (the
 *            run's start publishes them); the array moves only while the
 *            outer graph is built, never while it runs.
 *   rec->sub  NULL until a visit's function (or a thread adding for it)
 *            first adds: sub_attach stores it (release) under the outer
 *            graph's lock, once; adds and the visit load it (acquire).
 *            Read under that lock by a DOT dump, a cancel (attr.c) and
 *            the outer graph's emptying and destroy (no run then).
 *   sf_fn, sf_arg, sf_task  written by sub_attach before the store of
 *            rec->sub; sf_task cleared by the give to the spares.
 *   sf_up    written under the sub-graph's lock by the join, before and
 *            after its run; read by that run's visits as parent is.
 *   sf_dirty  set under the lock by the end of a run of g that was not
 *            OK (series.c), cleared under it by an empty visit; read
 *            without it by the visit holding busy, which that run's end
 *            (before the release of busy, or on the joining fiber)
 *            happened before.
 *   n        read without the lock by the visit holding busy (is there
 *            anything to empty, to run?): only that visit writes it (the
 *            function's adds, the emptyings), others only read.
 *   busy     (the record's) a visit of the task holds the record, from
 *            before the emptying to the end of its sub-graph's run: an
 *            exchange (acquire) takes it, a store (release) gives it
 *            back, so a second visit of the same task at once (two
 *            conditions picked it) fails with EBUSY instead of emptying
 *            a sub-graph that is being built or run. An add reads it
 *            (relaxed) to refuse sf once the visit is over. In a graph without
 *            condition tasks no second visit can come at once, and the
 *            take is a relaxed store (weft__subflow_visit).
 *   sf_spare, sf_next, spare_chunks  under the owning graph's lock: the
 *            attach (take), the emptying (give), destroy (no run). A
 *            spare is emptied at its take under that lock alone: no task
 *            holds it, so nothing else can reach it. sf_spare is an
 *            atomic pointer (relaxed, under the lock) because a visit
 *            reads it without the lock, as a hint (sub_prefetch).
 *   prefetch hints  a visit reads, without any lock, its record's sub or
 *            its graph's first spare, and of that sub-graph its first
 *            block pointer (blocks_inl[0]) and its records' sub-graphs
 *            (sfrecs_inl[k].sub), with ck_pr loads (whole pointers, no
 *            ordering), only to prefetch what they point at: another
 *            thread may be taking and building that spare meanwhile, and
 *            a stale pointer costs a wasted fetch (a prefetch never
 *            faults). Nothing read so decides anything.
 *   lock word WEFT__LOCK_SOLO, solo_op, solo_fib, solo_revoked  a
 *            sub-graph's solo build ("Solo builds"): the word stored
 *            WEFT__LOCK_SOLO (release) by the building visit from a hold
 *            of the lock (or before publication), with solo_fib before
 *            it; taken by any taker's exchange (acquire), or given back
 *            by the visit's compare and swap (E); loaded relaxed by the
 *            visit's ops after the light fence. solo_op stored by the
 *            visit's ops (1 relaxed, 0 release), loaded (acquire) by a
 *            taker. solo_revoked stored under the lock by a taker and by
 *            the arming, by the visit at E; loaded relaxed by the
 *            visit's adds (a hint: the arming looks again under the
 *            lock).
 *   A sub-graph is emptied only with no run of it in flight: at the
 *   task's visit (its last run ended before the task's last visit did)
 *   and after a join's wait. Its lock orders the emptying against a DOT
 *   dump of the outer graph, which reads it under that lock.
 */
#include <stddef.h>
#include <string.h>

#include <ck_pr.h>

#include "graph.h"
#include "solo.h"

/* The nodes of a sub-graph's first block that a visit prefetches: a
 * recursion's call adds a few (fib: 3). */
#define WEFT__SF_PREFETCH_NODES 4

/* How many graphs up a join looks from a queued node for its own
 * sub-graph (sub_mine): a node deeper inside it than this is left to the
 * loop, and the join parks for it. */
#define WEFT__SF_HELP_UP 8

void weft__subflow_mark(void *sub)
{
    (void)sub;   /* never called: the visit calls the task's function with its record */
}

/* ---- adding ----------------------------------------------------------------- */

weft_task *weft_graph_add_subflow(weft_graph *g, weft_subflow_fn fn, void *arg)
{
    if (!fn)
        return NULL;
    weft__sf_init init = { fn, arg };
    weft_task *t;
    return weft__graph_add_node(g, weft__subflow_mark, &init, 0, &t) == WEFT_OK ? t : NULL;
}

weft_task *weft_graph_add_cond(weft_graph *g, weft_cond_fn fn, void *arg)
{
    weft_task *t;
    if (!fn)
        return NULL;   /* a condition must answer */
    /* Stored as a weft_fn and called back as what it is (run.c). */
    weft_fn as_fn;
    memcpy(&as_fn, &fn, sizeof as_fn);
    return weft__graph_add_node(g, as_fn, arg, WEFT__CTL_COND, &t) == WEFT_OK ? t : NULL;
}

weft_task *weft_graph_add_multi_cond(weft_graph *g, weft_multi_cond_fn fn, void *arg)
{
    if (!fn)
        return NULL;
    weft__mcond mc = { fn, arg };
    weft_task *t;
    weft_cond_fn call = weft__mcond_call;
    weft_fn as_fn;
    memcpy(&as_fn, &call, sizeof as_fn);   /* stored as a weft_fn, called back as a condition (run.c) */
    return weft__graph_add_node_x(g, as_fn, NULL, WEFT__CTL_COND, &mc, sizeof mc, &t) == WEFT_OK ? t : NULL;
}

bool weft__subflow_grow(weft_graph *g)
{
    uint32_t n = g->subflows_cap ? g->subflows_cap * 2 : 4;
    if (n <= g->nsubflows)
        return false;   /* past 2^32 records */
    weft__sfrec *nn = weft__alloc(sizeof *nn * n);
    if (!nn)
        return false;
    if (g->sfrecs) {
        memcpy(nn, g->sfrecs, sizeof *nn * g->nsubflows);   /* no run: plain copies of the atomics are fine */
        if (g->sfrecs != g->sfrecs_inl)
            weft__free(g->sfrecs, sizeof *nn * g->subflows_cap);
    }
    g->sfrecs = nn;
    g->subflows_cap = n;
    return true;
}

weft_graph *weft__subflow_take(weft_graph *g)
{
    weft_graph *sub = atomic_load_explicit(&g->sf_spare, memory_order_relaxed);   /* under lock */
    if (sub) {
        atomic_store_explicit(&g->sf_spare, sub->sf_next, memory_order_relaxed);   /* under lock; a prefetch reads it unlocked */
        sub->sf_next = NULL;
        weft__graph_clear_locked(sub);   /* a spare: under g's lock, which gave it to the list */
        return sub;
    }
    if (weft_graph_create(&sub) != WEFT_OK)
        return NULL;
    weft__graph_small_blocks(sub);   /* most hold a few tasks (graph.h) */
    return sub;
}

void weft__subflow_give(weft_graph *g, weft_graph *sub)
{
    sub->sf_task = NULL;
    sub->sf_next = atomic_load_explicit(&g->sf_spare, memory_order_relaxed);   /* under lock */
    atomic_store_explicit(&g->sf_spare, sub, memory_order_relaxed);   /* under lock; a prefetch reads it unlocked */
}

/* ---- multi-condition tasks ------------------------------------------------------ */

/* A multi-condition task's function as its node holds it:
 * asks the user's for its picks, queues every successor it picks but one
 * as a condition's pick is (each once, counted in `pending`), and returns
 * that one, which the visit goes on with on this fiber as a plain
 * condition's pick. -1: none, or t failed (weft_task_fail in the user's
 * function: it picks nothing). The visit's state comes from the fiber
 * (its vis->cur is t), so the condition path itself tells the two kinds
 * apart by nothing. Callable from: t's visit, as its function. */
int weft__mcond_call(void *arg)
{
    const weft__mcond *mc = arg;
    weft__worker *w = weft__tls_worker;
    weft__visiting *vis = (weft__visiting *)weft__fstate_cur(w)->upper;
    weft_task *t = vis->cur;
    weft_graph *g = t->g;
    int picks[WEFT_MULTI_COND_MAX];
    size_t cap = t->nsucc < WEFT_MULTI_COND_MAX ? t->nsucc : WEFT_MULTI_COND_MAX;
    size_t k = cap ? mc->fn(mc->arg, picks, cap) : 0;
    if (k > cap)
        k = cap;
    if (vis->fail)
        return -1;
    const uint32_t *succ = weft__succ(t);
    int keep = -1;
    for (size_t i = 0; i < k; i++) {
        int p = picks[i];
        if (p < 0 || (size_t)p >= cap)
            continue;   /* only the first WEFT_MULTI_COND_MAX can be picked */
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = picks[j] == p;
        if (seen)
            continue;   /* a repeat runs the successor once */
        if (keep < 0)
            keep = p;
        else
            weft__graph_queue(w, weft__graph_node(g, succ[p]), false);   /* run.c: as a visit queues a ready successor */
    }
    return keep;
}

/* ---- the subflow's calls ------------------------------------------------------ */

/* The task's sub-graph for an add, taken at the visit's first add (from
 * the outer graph's spares, else made) and kept by the record from then
 * on. NULL: out of memory. Under the outer graph's lock: adds from other
 * threads race only here, and a DOT dump or a cancel of the outer graph
 * reads the record's sub-graph under that lock. */
static void solo_arm_unpublished(weft_graph *sub);

static __attribute__((noinline)) weft_graph *sub_attach(weft__sfrec *rec)
{
    weft_graph *g = rec->task->g;
    weft__graph_lock(g);
    weft_graph *sub = atomic_load_explicit(&rec->sub, memory_order_relaxed);   /* under lock */
    if (!sub) {
        sub = weft__subflow_take(g);
        if (sub) {
            sub->sf_fn = rec->fn;
            sub->sf_arg = rec->arg;
            sub->sf_task = rec->task;
            const weft__visiting *vis = weft__visiting_fn();
            if (vis && vis->cur == rec->task)
                solo_arm_unpublished(sub);   /* the task's visit adds first: it builds solo, armed before anyone can reach sub */
            atomic_store_explicit(&rec->sub, sub, memory_order_release);   /* release: pairs with the adds' acquire */
        }
    }
    weft__graph_unlock(g);
    return sub;
}

/* ---- solo builds ----------------------------------------------------------------- */

/* May a visit build solo here? With membarrier the building side's fence
 * is a compiler barrier; without it, a seq_cst fence costs what the
 * lock's exchange did, so the lock stays (nothing armed) but under TSAN,
 * where both sides' fences are seq_cst and the protocol is checked. */
static inline bool solo_allowed(void)
{
#if defined(WEFT_TSAN)
    return true;
#else
    return weft__fences_asymmetric();
#endif
}

/* Step A, the visit running on this fiber starts building sub solo,
 * as it lets go of sub's lock: the word becomes WEFT__LOCK_SOLO instead
 * of 0 (release, as an unlock), so every later taker's exchange reads it.
 * Caller holds sub's lock. */
static void solo_unlock_arm(weft_graph *sub)
{
    const weft__worker *w = weft__tls_worker;
    if (!solo_allowed() || !w) {
        weft__graph_unlock(sub);
        return;
    }
    atomic_store_explicit(&sub->solo_fib, weft__worker_fiber(w), memory_order_relaxed);   /* published by the release below */
    atomic_store_explicit(&sub->solo_revoked, 0, memory_order_relaxed);   /* under lock */
    atomic_store_explicit(&sub->lock.v, WEFT__LOCK_SOLO, memory_order_release);   /* release: as weft__graph_unlock */
}

/* Step A for a sub-graph nobody can reach yet (sub_attach, before it
 * publishes sub: a taker reaches it through the outer graph's lock,
 * after the publication, which orders this before). Its lock is free. */
static void solo_arm_unpublished(weft_graph *sub)
{
    const weft__worker *w = weft__tls_worker;
    if (!solo_allowed() || !w)
        return;
    atomic_store_explicit(&sub->solo_fib, weft__worker_fiber(w), memory_order_relaxed);
    atomic_store_explicit(&sub->solo_revoked, 0, memory_order_relaxed);
    atomic_store_explicit(&sub->lock.v, WEFT__LOCK_SOLO, memory_order_relaxed);   /* the publication's release orders it */
}

/* Step E: the visit is done building sub and will not lock it now (its
 * function returned having added nothing, or failed): the solo build
 * lets go of the lock (release, as an unlock, for the next taker),
 * unless a taker ended it already (then the word is that taker's). A
 * visit that goes on to lock sub (the run's start, a join) takes the
 * word over through its exchange instead (weft__solo_revoke, on its own
 * fiber). Callable from: the visit, not inside an op. */
static inline void solo_end(weft_graph *sub)
{
    uint32_t solo = WEFT__LOCK_SOLO;
    if (atomic_load_explicit(&sub->lock.v, memory_order_relaxed) == WEFT__LOCK_SOLO)
        atomic_compare_exchange_strong_explicit(&sub->lock.v, &solo, 0, memory_order_release,
                                                memory_order_relaxed);   /* release: as weft__graph_unlock */
    atomic_store_explicit(&sub->solo_revoked, 0, memory_order_relaxed);   /* the next build may arm again */
}

void weft__solo_revoke(weft_graph *g)
{
    /* R1 was the caller's exchange: the word is 1, so O2 reads no
     * WEFT__LOCK_SOLO from now on; and no arming until the next build. */
    atomic_store_explicit(&g->solo_revoked, 1, memory_order_relaxed);   /* under lock */
    const weft__worker *w = weft__tls_worker;
    if (w && atomic_load_explicit(&g->solo_fib, memory_order_relaxed) == weft__worker_fiber(w))
        return;   /* the building visit's own fiber (a condition added, a name set, a join): not inside an op */
    /* R2: pairs with O1-O2's light fence: either the visit's O2 reads
     * the word this thread wrote (and it takes the lock, held here), or
     * R3 reads its O1. */
    weft__fence_heavy();
    /* R3: wait out an op under way (a few dozen instructions; the visit
     * runs no user code inside one). */
    weft__backoff b = WEFT__BACKOFF_INIT;
    while (atomic_load_explicit(&g->solo_op, memory_order_acquire))   /* acquire: pairs with O3's release */
        weft__backoff_step(&b);
}

static inline weft_graph *sub_for_add(weft_subflow *sf)
{
    weft__sfrec *rec = (weft__sfrec *)(void *)sf;
    /* No visit holds the record: the function has returned and its
     * sub-graph has run (an add then would wait, unrun, for the next
     * visit to empty it). Misuse, told by NULL as graph.h says;
     * relaxed: an add racing the visit's end is the caller's race. */
    if (WEFT_UNLIKELY(!atomic_load_explicit(&rec->busy, memory_order_relaxed)))
        return NULL;
    weft_graph *sub = atomic_load_explicit(&rec->sub, memory_order_acquire);   /* acquire: pairs with sub_attach */
    return WEFT_LIKELY(sub != NULL) ? sub : sub_attach(rec);
}

/* The caller's add to sub with no solo build: if it is the visit of
 * sf's task itself and no taker ended one in this build, arms it (step
 * A) as it lets go of the lock. true: armed. */
static __attribute__((noinline)) bool sub_arm(weft_subflow *sf, weft_graph *sub)
{
    weft__visiting *vis = weft__visiting_fn();
    if (!solo_allowed() || !vis || vis->cur != ((weft__sfrec *)(void *)sf)->task)
        return false;   /* another thread, or work nested in the function: the lock */
    weft__graph_lock(sub);
    if (atomic_load_explicit(&sub->solo_revoked, memory_order_relaxed)) {   /* under lock */
        weft__graph_unlock(sub);
        return false;
    }
    solo_unlock_arm(sub);
    return true;
}

/* The adds below go to graph.c's add itself, not through the public
 * weft_graph_add* (one call a task instead of two or three). */
/* An add to sub for sf's record: solo if the caller is the visit building
 * it so (arming it first if the visit has not: its first add since the
 * sub-graph was made or emptied without), else under the lock. */
static inline int sub_add(weft_subflow *sf, weft_graph *sub, weft_fn fn, void *arg, weft_task **t)
{
    if (WEFT_LIKELY(weft__solo_mine(sub)) ||
        (!atomic_load_explicit(&sub->solo_revoked, memory_order_relaxed) && sub_arm(sf, sub))) {
        if (weft__solo_enter(sub)) {
            int rc = weft__graph_add_node_solo(sub, fn, arg, t);
            weft__solo_exit(sub);
            return rc;
        }
    }
    return weft__graph_add_node(sub, fn, arg, 0, t);
}

weft_task *weft_subflow_add(weft_subflow *sf, weft_fn fn, void *arg)
{
    weft_graph *sub = sf ? sub_for_add(sf) : NULL;
    weft_task *t;
    return sub && sub_add(sf, sub, fn, arg, &t) == WEFT_OK ? t : NULL;
}

weft_task *weft_subflow_add_cond(weft_subflow *sf, weft_cond_fn fn, void *arg)
{
    weft_graph *sub = sf && fn ? sub_for_add(sf) : NULL;
    return sub ? weft_graph_add_cond(sub, fn, arg) : NULL;
}

weft_task *weft_subflow_add_multi_cond(weft_subflow *sf, weft_multi_cond_fn fn, void *arg)
{
    weft_graph *sub = sf && fn ? sub_for_add(sf) : NULL;
    return sub ? weft_graph_add_multi_cond(sub, fn, arg) : NULL;
}

weft_task *weft_subflow_add_subflow(weft_subflow *sf, weft_subflow_fn fn, void *arg)
{
    weft_graph *sub = sf && fn ? sub_for_add(sf) : NULL;
    weft__sf_init init = { fn, arg };
    weft_task *t;
    return sub && sub_add(sf, sub, weft__subflow_mark, &init, &t) == WEFT_OK ? t : NULL;
}

weft_subflow *weft_subflow_current(void)
{
    weft__visiting *vis = weft__visiting_fn();
    if (!vis || !weft__is_subflow(vis->g, vis->cur))
        return NULL;
    return (weft_subflow *)(void *)weft__sfrec_of(vis->cur);
}

/* Starts fetching, all at once, the lines a visit that builds in
 * sub-graph sub touches first: its header, its first node block's first
 * lines, and the line of each of its last visit's sub-graphs that its
 * emptying writes (weft__subflow_give). A recursion's sub-graphs are kept
 * from run to run (a fib(22) holds 28 000 of them, 40 MB), so by the
 * next run each is out of cache, and its emptying, adds and run start
 * would miss on those lines one after another. sub may be a spare that
 * another thread takes and builds meanwhile: the pointers read here are
 * hints (ck_pr loads of whole pointers: a stale one only wastes a fetch;
 * a prefetch never faults), and nothing else of sub is read. */
_Static_assert(offsetof(weft_graph, sf_task) / WEFT_CACHELINE == offsetof(weft_graph, sf_next) / WEFT_CACHELINE,
               "the give writes one line of a kept sub-graph");
static inline void sub_prefetch(const weft_graph *sub)
{
    weft__graph_prefetch(sub);
    const char *b = (const char *)ck_pr_load_ptr(&sub->blocks_inl[0]);   /* a small sub-graph's first block */
    if (b)
        for (size_t off = 0; off < WEFT__SF_PREFETCH_NODES * sizeof(weft_task); off += WEFT_CACHELINE)
            __builtin_prefetch(b + off, 1);
    for (int k = 0; k < WEFT__INL_SUBFLOWS; k++) {
        const char *kid = (const char *)ck_pr_load_ptr((void *const *)&sub->sfrecs_inl[k].sub);
        if (kid)
            __builtin_prefetch(kid + offsetof(weft_graph, sf_next), 1);   /* the give writes sf_task, sf_next */
    }
}

weft_graph *weft__subflow_visit(weft__visiting *vis, weft_task *t)
{
    weft__sfrec *rec = weft__sfrec_of(t);
    /* The sub-graph this visit builds in, if it adds: the one it kept, or
     * the head of its graph's spares, which its first add takes (sub_attach)
     * unless another task of the graph takes it first (then the fetch is
     * wasted). Read without the lock: a hint. */
    {
        weft_graph *next = atomic_load_explicit(&rec->sub, memory_order_relaxed);
        if (!next)
            next = atomic_load_explicit(&t->g->sf_spare, memory_order_relaxed);
        if (next)
            sub_prefetch(next);
    }
    /* Only a graph with condition tasks can visit t twice at once (two
     * picks of it): there the exchange tells the second it is busy.
     * Elsewhere each run visits t once, runs of one graph do not
     * overlap (EBUSY), and the last visit's end happened before this
     * visit (the join, sinks_left and queue chains of the runs between
     * them): a plain store, not a locked instruction per subflow task. */
    if (WEFT_UNLIKELY(t->g->has_cond)) {
        if (atomic_exchange_explicit(&rec->busy, true, memory_order_acquire)) {   /* acquire: pairs with the release */
            vis->fail = weft__fail_weft(WEFT_EBUSY);   /* another visit of t has it */
            return NULL;
        }
    } else {
        atomic_store_explicit(&rec->busy, true, memory_order_relaxed);
    }
    /* The last visit's sub-graph, if one added: its run has ended. n is
     * read without the lock, as only the visit holding busy writes it
     * (its adds, its emptyings). */
    weft_graph *sub = atomic_load_explicit(&rec->sub, memory_order_acquire);   /* acquire: an add from another thread made it */
    if (sub && sub->n != 0) {
        weft__graph_lock(sub);
        weft__graph_clear_locked(sub);
        solo_unlock_arm(sub);   /* the function's adds build it solo ("Solo builds") */
    }
    rec->fn((weft_subflow *)(void *)rec, rec->arg);
    sub = atomic_load_explicit(&rec->sub, memory_order_acquire);   /* the function's adds happened before its return */
    if (sub && (sub->n == 0 || vis->fail))
        solo_end(sub);   /* no run's start takes the lock from the solo build (step E) */
    if (!vis->fail) {
        if (sub && sub->n != 0)
            return sub;   /* n read as above: the visit's own */
        /* What a module's start of an empty graph leaves (module.c): no
         * failure of an earlier run shows. Written only if one does:
         * sf_dirty says so (set by the end of every run that was not OK,
         * series.c), so that a leaf does not touch the run's lines for
         * nothing. */
        if (sub && WEFT_UNLIKELY(sub->sf_dirty)) {
            weft__graph_lock(sub);
            sub->result = WEFT_OK;
            atomic_store_explicit(&sub->fail_err, 0, memory_order_relaxed);   /* under lock, no run in flight */
            atomic_store_explicit(&sub->failed, WEFT__NO_TASK, memory_order_relaxed);
            sub->sf_dirty = false;
            weft__graph_unlock(sub);
        }
    }
    /* Added nothing (done now, no run to start: a recursion's leaves), or
     * its function failed it (weft_task_fail: nothing runs). */
    atomic_store_explicit(&rec->busy, false, memory_order_release);   /* as weft__subflow_release */
    return NULL;
}

void weft__subflow_release(weft_task *t)
{
    atomic_store_explicit(&weft__sfrec_of(t)->busy, false, memory_order_release);   /* the next visit sees this one's writes */
}

/* A join's help (weft__help_hooks_until): is the sub-graph's run over? */
static bool sub_done(void *sub)
{
    return weft_graph_done(sub);   /* acquire: the run's writes are seen */
}

/* Is rec (a hook record: a node) work the join waits for: a node of its
 * sub-graph, or of a graph running inside one of those (a subflow or
 * module task's, at any depth, through parent and sf_up)? Each graph up
 * the chain has a run in flight (the one below keeps its task's visit
 * open), so none can be freed while this reads it; the fields read were
 * written by the runs' starts, which the queues that delivered rec
 * published. */
static bool sub_mine(weft__task *rec, void *sub)
{
    const weft_graph *g = ((const weft_task *)(const void *)rec)->g;   /* a hook record is a node (graph.h) */
    if (g->nhigh != 0 || g->flat_roots)
        return false;   /* the loop picks its records by priority and place, as a walk's takes leave them (run.c) */
    for (unsigned k = 0; k < WEFT__SF_HELP_UP && g; k++) {
        if (g == sub)
            return true;
        const weft_task *up = weft__graph_up(g);
        g = up ? up->g : NULL;
    }
    return false;
}

int weft_subflow_join(weft_subflow *sf)
{
    weft__sfrec *rec = (weft__sfrec *)(void *)sf;
    if (!rec)
        return WEFT_EINVAL;
    weft__visiting *vis = weft__visiting_fn();
    if (!vis || vis->cur == NULL || vis->cur != rec->task)
        return WEFT_EINVAL;   /* only the task's own function joins its sub-graph */
    weft_graph *sub = atomic_load_explicit(&rec->sub, memory_order_acquire);   /* as an add's */
    if (!sub)
        return WEFT_OK;   /* nothing added yet: empty */
    WEFT__GRAPH_CHECK(sub, "weft_subflow_join");
    weft__worker *w = weft__tls_worker;   /* vis: a task of the graph runs here */
    weft_sched *s = vis->g->sched;
    /* The start in one hold of the lock ("Joining's start and end",
     * above); else as weft_graph_run. */
    int rc = weft__run_start_join(s, sub, w);
    if (rc == WEFT__JOIN_EMPTY)
        return WEFT_OK;
    if (rc == WEFT__JOIN_GENERAL) {
        weft__graph_lock(sub);
        bool empty = sub->n == 0;
        if (!empty)
            sub->sf_up = sub->sf_task;   /* cancels and waits see through it (module.c) */
        weft__graph_unlock(sub);
        if (empty)
            return WEFT_OK;
        rc = weft_graph_run(s, sub);
    }
    if (rc == WEFT_OK) {
        bool done = !weft__worker_is_bound(w) && weft__worker_sched(w) == s &&
                    weft__help_hooks_until(w, sub_done, sub_mine, sub);   /* "Joining inline", above */
        if (!done) {
            rc = weft_graph_wait(sub);   /* what others took */
            if (!weft_graph_done(sub))
                return rc;   /* the wait was refused (no fiber to go on with): it runs on, joined when fn returns */
        }
        /* The result, the failure and the emptying in one hold. */
        weft__graph_lock(sub);
        if (done)
            rc = sub->result;   /* what weft_graph_wait would return, without its look up the chain of runs */
        uint64_t fail = atomic_load_explicit(&sub->fail_err, memory_order_relaxed);   /* under lock, no run */
        sub->sf_up = NULL;
        weft__graph_clear_locked(sub);
        solo_unlock_arm(sub);   /* the function's adds after the join build it solo again */
        if (fail != 0 && vis->fail == 0)
            vis->fail = fail;   /* the task fails as the run did, word and all */
        return rc;
    }
    weft__graph_lock(sub);
    sub->sf_up = NULL;   /* not started: as before the call */
    weft__graph_unlock(sub);
    return rc;
}
