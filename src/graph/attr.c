/* This file is private to weft: graph task attributes — priority, pin
 * and semaphore (weft_task_set_priority, _set_pin, _set_semaphore).
 *
 * A node is one full cache line (graph.h), so attributes live beside it:
 * g->attrs, an array by node index made at the first set call, and the
 * node's ctl bit ATTR says its entry is in use. A graph with no task
 * that has attributes pays nothing: it has no array, and its runs take
 * the plain walk (run.c), which never looks. A graph with one runs the
 * general walk (g->special), which asks weft__has_attr of each node it
 * reaches and comes here for those that have them.
 *
 * What a ready task with attributes goes through, in the general walk:
 *   1. spread  a root spreads where it is first met (run.c), before it
 *              goes anywhere else, so its range of roots never waits
 *              behind it; `spread` remembers it until its visit.
 *   2. place   with a priority other than NORMAL, or a pin, it runs
 *              only from a record queued through core's
 *              weft__submit_placed. A visit queues such successors that
 *              way rather than continue with them, and when one of them
 *              is HIGH it queues its continuation too, so that siblings
 *              ready at once are picked in priority order (run.c,
 *              visit_tail); a graph with HIGH tasks also leaves every
 *              pick to core's loop (the walk takes nothing back with
 *              weft__take_own). A task met otherwise (a continuation,
 *              the first root, a record queued without placement) is
 *              queued again that way here (weft__graph_queue, so a graph
 *              with condition tasks counts it in `pending` as any
 *              record). `placed` marks the record as placed, and the
 *              arrival that takes the mark (on the pinned thread, for a
 *              pin) is the task at its place. A pin to a thread that is
 *              gone: the task fails with WEFT_EINVAL, without running
 *              (run.c's visit, through vis->fail).
 *   3. unit    with a semaphore it takes a unit before its visit
 *              (weft__sem_take_or_queue), unless the visit is sure to
 *              skip it (cancelled, poisoned, the run cancelled): a
 *              skipped task takes no unit (vis->skip holds the visit to
 *              that). If none is free, its record waits in the
 *              semaphore's FIFO (rec) holding no fiber and no worker;
 *              the release that hands it a unit calls grant, which
 *              counts the unit in `granted` and queues the task again
 *              (placed, if it has a place). Its arrival takes the unit
 *              from `granted` and is visited holding it.
 *              A cancel (the run's, fail-fast's, the task's own, an
 *              outer run's for a module's graph) ends the wait at once:
 *              see "Ending a wait" below.
 *   4. visit   run.c gives the unit back (vis->unit) once the function
 *              has returned (failed too), or the claim skipped it after
 *              all (a cancel that raced), or it fails because its pinned
 *              thread left while it waited, before the successors' joins
 *              drop: the run, and so the semaphore, outlives the
 *              release. A module task holds its unit until its graph's
 *              run ends (module_unit).
 *
 * Synchronization
 *   attrs, attrs_cap, nattr, npinned, nhigh, an entry's settings (sem,
 *             thread, prio): written under g's lock while no run is in flight
 *             (the set calls return EBUSY otherwise, as build calls do);
 *             read by the run's visits without the lock: the run's start
 *             publishes them with the roots, as it publishes the graph.
 *   ATTR      ctl bit, set and cleared by RMW under g's lock between
 *             runs (weft_task_cancel may race: an RMW); relaxed.
 *   spread, module_unit  owned by whoever runs the task's record: the
 *             queues (and the semaphore's lock, for grant) order one
 *             holder after the next. Plain fields.
 *   placed    set (relaxed) before the placed submit, which publishes
 *             it with the record; taken by exchange at an arrival. With
 *             condition tasks a task may have two records in flight, and
 *             either may take the mark: the other is placed again.
 *   waiting   the task's rec is queued on its semaphore (exchange: a
 *             second record of the same task, with condition tasks, does
 *             not queue it twice: that pick merges into the waiting
 *             one); cleared by grant (release) before it queues the task.
 *   ended     set (relaxed) by destroy's park_end before it queues the
 *             task, which publishes it; taken by exchange at an arrival
 *             (take_unit), or cleared by one that fails the task.
 *   granted   units handed to rec and not yet taken by an arrival:
 *             fetch_add (release) by grant, CAS - 1 (acquire) by the
 *             arrival that takes it; pairs so the arrival sees what the
 *             releaser's thread saw.
 *   rec       the semaphore's while queued (sem.c).
 *   flat_epoch  g's: written by the first root's first arrival
 *             (weft__attr_place_roots), whose submits publish it to the
 *             root's next arrival, the only other reader.
 *
 * Ending a wait (cancel, fail-fast). A task waiting for its unit holds
 * no fiber: nothing in the run moves it until a release hands it a
 * unit, so a cancel must take it off the semaphore itself. Two sides:
 *   Waiter (take_unit)                    Canceller (end_wait's callers)
 *   W1. would_skip: no; waiting = true    C1. set the mark: cancel_epoch
 *       (exchange).                           (weft_graph_cancel, fail_task)
 *   W2. fence seq_cst.                        or CANCEL (weft_task_cancel);
 *   W3. under the semaphore's lock: drop      g's lock held (attrs stay put).
 *       reads the marks (would_skip);     C2. fence seq_cst.
 *       marked: not queued, skipped       C3. waiting? then withdraw under
 *       without a unit; else queued.          the semaphore's lock: taken
 *                                             off, waiting = false, t
 *                                             queued as grant does, with no
 *                                             unit; its arrival skips it.
 *   The fences order W1 before W3's reads and C1 before C3's read: either
 *   the canceller sees `waiting`, or the waiter's drop sees the mark. If
 *   it sees `waiting` before the record is queued, its withdrawal's lock
 *   comes first and W3, after it, sees the mark. A release that hands
 *   the record a unit unlinks it under the same lock: withdraw then
 *   finds nothing, and the arrival that takes the unit is skipped by its
 *   claim and gives the unit back. The waiter touches neither t nor g
 *   after W3 queued it: grant (or C3) may run it, and the run may end.
 *   A cancel of g's run ends the waits of the graphs running as its
 *   modules too, parent before child (module.c's lock order).
 *
 * Destroy. A waiting task is on no queue of the scheduler, so its
 * destroy would not see it, and a release after it would queue the task
 * on freed memory. So the record is also listed with the scheduler
 * (park; sched.c, "Waits parked outside s", has the protocol):
 *   D1. take_unit lists it (weft__parked_add) before it queues on the
 *       semaphore, and unlists it if it did not queue after all.
 *   D2. destroy, once it has set its shutdown mark, closes the list
 *       and calls park_end for each record: withdrawn as end_wait does,
 *       `ended` set, the task queued again with no unit; its arrival
 *       takes the mark and skips it. Not queued (not yet, or being
 *       handed a unit): destroy asks again. A task that would start a
 *       wait once the list is closed finds it closed: it takes a unit
 *       free at once and runs, else is skipped (nothing would end its
 *       wait).
 *   D3. grant and end_wait, which queue the task from another thread,
 *       unlist it and announce themselves (weft__parked_handoff) before
 *       they queue it, and leave after: destroy waits for them.
 */
#include <stddef.h>
#include <string.h>

#include "graph.h"
#include "sem.h"

typedef struct weft__attr {
    weft__sem_rec rec;          /* on sem's queue while the task waits for a unit */
    weft__parked park;          /* on the scheduler's list meanwhile (core.h) */
    weft_task *t;
    weft_sem *sem;              /* NULL: none */
    weft_sem *module_unit;      /* a module task's unit, held until its graph's run ends */
    int32_t thread;             /* -1: unpinned */
    uint8_t prio;               /* a weft_priority */
    bool spread;                /* a root that spread and went to its place or semaphore */
    atomic_bool placed;
    atomic_bool waiting;
    atomic_bool ended;          /* its scheduler's destroy ended its wait (D2) */
    atomic_uint granted;
} weft__attr;

static inline weft__attr *attr_of(const weft_task *t)
{
    return &t->g->attrs[t->index];   /* t has ATTR: its entry exists */
}

static inline bool needs_place(const weft__attr *a)
{
    return a->prio != WEFT_PRIORITY_NORMAL || a->thread >= 0;
}

/* ---- setting -------------------------------------------------------------------- */

static void grant(weft__sem_rec *r);
static bool drop(weft__sem_rec *r);
static bool park_end(weft__parked *p);

/* Makes room for index i in g->attrs. Caller holds the lock, no run in
 * flight. false: out of memory, nothing changed. */
static bool attrs_reserve(weft_graph *g, uint32_t i)
{
    if (i < g->attrs_cap)
        return true;
    uint32_t n = g->attrs_cap ? g->attrs_cap : 64;
    while (n <= i) {
        if (n > UINT32_MAX / 2)
            return false;
        n *= 2;
    }
    weft__attr *nn = weft__calloc(sizeof *nn * n);
    if (!nn)
        return false;
    if (g->attrs) {
        /* Entries in use have no record queued (no run is in flight), so
         * moving them moves nothing anyone points at. */
        memcpy(nn, g->attrs, sizeof *nn * g->attrs_cap);
        weft__free(g->attrs, sizeof *nn * g->attrs_cap);
    }
    g->attrs = nn;
    g->attrs_cap = n;
    return true;
}

enum { SET_PRIO, SET_PIN, SET_SEM };

/* One setting of t's: EBUSY during a run, ENOMEM if the array cannot
 * grow; nothing changed then. A task whose settings are all back to the
 * defaults loses its ATTR bit (its entry stays, unused). */
static int attr_set(weft_task *t, int what, int value, weft_sem *sem)
{
    weft_graph *g = t->g;
    weft__graph_lock(g);
    if (atomic_load_explicit(&g->run, memory_order_relaxed) & 1u) {   /* under lock */
        weft__graph_unlock(g);
        return WEFT_EBUSY;
    }
    bool had = weft__has_attr(t);
    weft__attr *a = had ? attr_of(t) : NULL;
    int prio = a ? a->prio : WEFT_PRIORITY_NORMAL, thread = a ? a->thread : -1;
    weft_sem *s = a ? a->sem : NULL;
    if (what == SET_PRIO)
        prio = value;
    else if (what == SET_PIN)
        thread = value;
    else
        s = sem;
    bool any = prio != WEFT_PRIORITY_NORMAL || thread >= 0 || s != NULL;
    if (!had && !any) {
        weft__graph_unlock(g);
        return WEFT_OK;   /* defaults stay defaults: no array needed */
    }
    if (!had && !attrs_reserve(g, t->index)) {
        weft__graph_unlock(g);
        return WEFT_ENOMEM;
    }
    a = &g->attrs[t->index];
    if (!had) {
        memset(a, 0, sizeof *a);
        a->rec.grant = grant;
        a->rec.drop = drop;
        a->park.end = park_end;
        a->t = t;
        a->thread = -1;
        atomic_init(&a->placed, false);
        atomic_init(&a->waiting, false);
        atomic_init(&a->ended, false);
        atomic_init(&a->granted, 0);
    }
    g->npinned += (thread >= 0) - (a->thread >= 0);
    g->nhigh += (prio == WEFT_PRIORITY_HIGH) - (a->prio == WEFT_PRIORITY_HIGH);
    a->prio = (uint8_t)prio;
    a->thread = thread;
    a->sem = s;
    if (any && !had) {
        g->nattr++;
        atomic_fetch_or_explicit(&t->ctl, WEFT__CTL_ATTR, memory_order_relaxed);   /* no run now; a cancel may race: an RMW */
    } else if (!any && had) {
        g->nattr--;
        atomic_fetch_and_explicit(&t->ctl, ~(uint32_t)WEFT__CTL_ATTR, memory_order_relaxed);   /* as above */
    }
    weft__graph_unlock(g);
    return WEFT_OK;
}

void weft_task_set_priority(weft_task *t, weft_priority p)
{
    if (t && (unsigned)p <= WEFT_PRIORITY_LOW)
        (void)attr_set(t, SET_PRIO, (int)p, NULL);   /* during a run, or out of memory: ignored */
}

int weft_task_set_pin(weft_task *t, int thread)
{
    if (!t || thread < -1)
        return WEFT_EINVAL;
    return attr_set(t, SET_PIN, thread, NULL);
}

int weft_task_set_semaphore(weft_task *t, weft_sem *sem)
{
    if (!t)
        return WEFT_EINVAL;
    return attr_set(t, SET_SEM, 0, sem);
}

int weft__attr_check(weft_graph *g, weft_sched *s)
{
    uint32_t n = g->n < g->attrs_cap ? g->n : g->attrs_cap;
    for (uint32_t i = 0; i < n; i++) {
        const weft__attr *a = &g->attrs[i];
        if (a->thread >= 0 && weft__has_attr(weft__graph_node(g, i)) && !weft__thread_valid(s, a->thread))
            return WEFT_EINVAL;
    }
    return WEFT_OK;
}

bool weft__attr_roots_placed(const weft_graph *g)
{
    for (uint32_t i = 0; i < g->nroots; i++) {
        const weft_task *t = weft__graph_node((weft_graph *)g, g->roots[i]);
        if (weft__has_attr(t) && needs_place(attr_of(t)))
            return true;
    }
    return false;
}

void weft__attr_clear(weft_graph *g)
{
    if (g->attrs)
        memset(g->attrs, 0, sizeof *g->attrs * g->attrs_cap);   /* as made: none */
    g->nattr = g->npinned = g->nhigh = 0;
}

void weft__attr_free(weft_graph *g)
{
    if (g->attrs)
        weft__free(g->attrs, sizeof *g->attrs * g->attrs_cap);
    g->attrs = NULL;
    g->attrs_cap = 0;
}

/* ---- running ---------------------------------------------------------------------- */

bool weft__attr_spread(weft_task *t)
{
    weft__attr *a = attr_of(t);
    if (a->spread)
        return false;   /* it spread where it was first met */
    a->spread = true;
    return true;
}

bool weft__attr_placed(const weft_task *t, bool *high)
{
    const weft__attr *a = attr_of(t);
    if (a->prio == WEFT_PRIORITY_HIGH)
        *high = true;
    return needs_place(a);
}

void weft__attr_submit(weft_graph *g, weft__worker *w, weft__task *rec, weft_task *v)
{
    weft__attr *a = attr_of(v);
    if (needs_place(a)) {
        atomic_store_explicit(&a->placed, true, memory_order_relaxed);   /* published with the record by the submit */
        if (weft__submit_placed(g->sched, w, rec, a->prio, a->thread) == WEFT_OK)
            return;
        /* Nothing queued: the pinned thread is gone (its arrival fails
         * v), or the scheduler is being destroyed and we are outside it
         * (a grant from a plain thread). Queued plainly instead. */
        atomic_store_explicit(&a->placed, false, memory_order_relaxed);
    }
    weft__submit(g->sched, w, rec, WEFT_HINT_NONE);
}

/* Does root v have a place (a priority other than NORMAL, or a pin)? */
static bool root_placed(const weft_task *v)
{
    bool high;
    return weft__has_attr(v) && weft__attr_placed(v, &high);
}

/* The spread's stand-in where a root has a place (g->flat_roots): the
 * roots of one run are ready at the same moment, and a spread would visit
 * some of them (the first, each held one) before the others were queued,
 * so a NORMAL root could go ahead of a HIGH one and a LOW one of a NORMAL
 * one. Instead the first root, at its first arrival, queues every root
 * (itself too) where it goes, and visits none: the thread's next picks
 * then take them by priority. Roots with a place go first, in array order
 * (the priority rings and pin lists are FIFO); the others last first (a
 * worker pops its deque newest first), so each level runs in array
 * order at one worker. */
bool weft__attr_place_roots(weft__worker *w, weft_graph *g, weft_task *t)
{
    uint32_t epoch = atomic_load_explicit(&g->run, memory_order_relaxed) >> 1;   /* as in run.c's visit */
    if (atomic_load_explicit(&t->join, memory_order_relaxed) != 0 || g->flat_epoch == epoch)
        return false;   /* not the first root, or the first one arriving again */
    g->flat_epoch = epoch;   /* published to its next arrival by the submit below */
    /* Counted first: once the last root is queued the run may end
     * elsewhere and g be freed, so neither pass reads g after its own
     * last queueing (the roots not yet queued keep the run from ending). */
    const uint32_t n = g->nroots;
    uint32_t placed = 0;
    for (uint32_t i = 0; i < n; i++)
        placed += root_placed(weft__graph_node(g, g->roots[i]));
    uint32_t left = placed;
    for (uint32_t i = 0; left != 0; i++) {
        weft_task *v = weft__graph_node(g, g->roots[i]);
        if (root_placed(v)) {
            left--;
            weft__graph_queue(w, v, false);
        }
    }
    left = n - placed;
    for (uint32_t i = n; left != 0;) {
        weft_task *v = weft__graph_node(g, g->roots[--i]);
        if (!root_placed(v)) {
            left--;
            weft__graph_queue(w, v, false);   /* the first root last: the nearest pop */
        }
    }
    return true;
}

/* Would t's visit skip it (claim's test, without claiming)? Then it
 * takes no unit, and the visit skips it whatever happens meanwhile
 * (vis->skip: a weft_task_reset racing this must not let it run without
 * its unit). A cancel after this is still seen by the claim, which then
 * skips a task that holds a unit: the visit gives it back. */
static bool would_skip(weft_graph *g, weft_task *t)
{
    uint32_t epoch = atomic_load_explicit(&g->run, memory_order_relaxed) >> 1;   /* the run in flight: as in visit */
    return atomic_load_explicit(&g->cancel_epoch, memory_order_relaxed) == epoch ||
           (g->parent != NULL && weft__module_cancelled(g)) ||
           (atomic_load_explicit(&t->ctl, memory_order_relaxed) & (WEFT__CTL_CANCEL | WEFT__CTL_POISON));
}

/* Takes one unit that grant counted, if any. */
static bool take_granted(weft__attr *a)
{
    unsigned n = atomic_load_explicit(&a->granted, memory_order_relaxed);   /* relaxed: the CAS decides */
    while (n) {
        if (atomic_compare_exchange_weak_explicit(&a->granted, &n, n - 1,
                memory_order_acquire, memory_order_relaxed))   /* acquire: pairs with grant's release */
            return true;
    }
    return false;
}

/* Step 3: t at its place. true: visit it now. */
static bool take_unit(weft__visiting *vis, weft_graph *g, weft__attr *a)
{
    if (take_granted(a)) {
        vis->unit = a->sem;
        return true;
    }
    if (WEFT_UNLIKELY(atomic_load_explicit(&a->ended, memory_order_relaxed)) &&
        atomic_exchange_explicit(&a->ended, false, memory_order_relaxed)) {   /* relaxed: the queue that delivered t ordered park_end's store */
        vis->skip = true;   /* its wait was ended by destroy (D2): skipped as a cancelled task */
        return true;
    }
    if (would_skip(g, a->t)) {
        vis->skip = true;
        return true;
    }
    if (atomic_exchange_explicit(&a->waiting, true, memory_order_acquire))   /* acquire: pairs with grant's and withdraw's release */
        return false;   /* already waiting (a second pick): the picks merge */
    /* Waiting, the task is a record of its run: with condition tasks the
     * run ends when `pending` drops to 0, so it counts until grant (or
     * withdraw) queues it (counted). */
    if (g->has_cond)
        atomic_fetch_add_explicit(&g->pending, 1, memory_order_relaxed);   /* this record's own unit keeps it above 0 meanwhile */
    /* StoreLoad: `waiting` is set before drop reads the cancel marks
     * (Ending a wait, step W2); pairs with the fence in end_wait's
     * callers (step C2). */
    atomic_thread_fence(memory_order_seq_cst);
    /* Listed with the scheduler before it queues (Destroy, D1): its
     * destroy ends the wait if no unit comes first. */
    weft_sched *s = g->sched;
    weft__sem_took took;
    if (weft__parked_add(s, &a->park)) {
        took = weft__sem_take_or_queue(a->sem, &a->rec);
        if (took == WEFT__SEM_QUEUED)
            return false;   /* grant (or withdraw) queues it again; t and g are not ours to touch now */
        weft__parked_remove(s, &a->park);
    } else {
        /* s is being destroyed and has ended the waits (D2): nothing
         * would end this one. A unit free now is taken; else skipped. */
        took = weft_sem_try_acquire(a->sem) ? WEFT__SEM_TAKEN : WEFT__SEM_DROPPED;
    }
    atomic_store_explicit(&a->waiting, false, memory_order_relaxed);   /* never queued: nothing to publish */
    if (g->has_cond)
        atomic_fetch_sub_explicit(&g->pending, 1, memory_order_relaxed);
    if (took == WEFT__SEM_DROPPED) {
        vis->skip = true;   /* a cancel landed since would_skip, or s is going: skipped without a unit */
        return true;
    }
    vis->unit = a->sem;
    return true;
}

bool weft__attr_ready(weft__worker *w, weft__visiting *vis, weft_task *t, bool fresh)
{
    weft_graph *g = t->g;
    weft__attr *a = attr_of(t);
    if (needs_place(a)) {
        bool placed = fresh && atomic_exchange_explicit(&a->placed, false, memory_order_relaxed);   /* the queue that delivered it ordered the store */
        if (!placed || (a->thread >= 0 && (int)weft__worker_id(w) != a->thread)) {
            if (a->thread >= 0 && !weft__thread_valid(g->sched, a->thread)) {
                vis->fail = weft__fail_weft(WEFT_EINVAL);   /* the visit fails it without running it: weft's code */
                /* A unit handed to it while it waited (its thread left
                 * meanwhile) is given back by the visit, as after a run. */
                if (a->sem && take_granted(a))
                    vis->unit = a->sem;
                atomic_store_explicit(&a->ended, false, memory_order_relaxed);   /* failed: the mark is moot */
                a->spread = false;
                return true;
            }
            weft__graph_queue(w, t, false);
            return false;
        }
    }
    if (a->sem && !take_unit(vis, g, a))
        return false;
    a->spread = false;   /* visited now: the next run spreads it again */
    return true;
}

#ifdef WEFT_TEST_SEAMS
void (*weft__attr_grant_seam)(void);
#endif

/* A release handed a unit to t's rec. Callable from: the releasing
 * thread, any thread, after its last access to the semaphore. t's run is
 * in flight (t has not been visited), so t and g are valid. */
static void grant(weft__sem_rec *r)
{
    weft__attr *a = WEFT_CONTAINER_OF(r, weft__attr, rec);
    weft_task *t = a->t;
    weft_sched *s = t->g->sched;
    weft__parked_handoff(s, &a->park);   /* D3: off s's list; s stays until _done */
#ifdef WEFT_TEST_SEAMS
    if (WEFT_UNLIKELY(weft__attr_grant_seam != NULL))
        weft__attr_grant_seam();   /* tests: hold a hand-off here */
#endif
    atomic_fetch_add_explicit(&a->granted, 1, memory_order_release);   /* release: pairs with take_granted */
    atomic_store_explicit(&a->waiting, false, memory_order_release);   /* release: rec is free again; pairs with take_unit's exchange */
    weft__worker *w = weft__tls_worker;
    if (w && weft__worker_sched(w) != s)
        w = NULL;   /* a thread of another scheduler queues from outside */
    weft__graph_queue(w, t, true);
    weft__parked_handoff_done(s);   /* t, g and a may be gone now: s only */
}

/* ---- ending a wait: cancel, fail-fast ---------------------------------------------- */

/* Asked by the semaphore, under its lock, just before t's record queues
 * (step W3): true if t's visit would skip it now. Callable from: the
 * thread in take_unit; t's run is in flight (it waits for this record). */
static bool drop(weft__sem_rec *r)
{
    weft__attr *a = WEFT_CONTAINER_OF(r, weft__attr, rec);
    return would_skip(a->t->g, a->t);
}

/* Step C3: takes t's record off its semaphore if it waits there and
 * queues t again, as grant does but with no unit: its arrival sees the
 * cancel (would_skip) and skips it. Caller holds g's lock (the
 * attributes stay put) and has fenced after its cancel mark. */
static void end_wait(weft__attr *a)
{
    if (!atomic_load_explicit(&a->waiting, memory_order_relaxed))   /* after the caller's fence: step C2 */
        return;   /* not waiting, or not yet queued: its drop sees the mark */
    if (!weft__sem_withdraw(a->sem, &a->rec))
        return;   /* a release handed it a unit (grant queues it: its visit skips it and gives the unit back), drop kept it out, or destroy withdrew it */
    weft_task *t = a->t;
    weft_sched *s = t->g->sched;
    weft__parked_handoff(s, &a->park);   /* D3, as grant */
    atomic_store_explicit(&a->waiting, false, memory_order_release);   /* release: rec is free again; pairs with take_unit's exchange */
    weft__worker *w = weft__tls_worker;
    if (w && weft__worker_sched(w) != s)
        w = NULL;   /* a thread of another scheduler queues from outside */
    weft__graph_queue(w, t, true);   /* counted in `pending` by take_unit, as for grant */
    weft__parked_handoff_done(s);
}

/* The scheduler's destroy ends t's wait (D2): called under its
 * parked_lock, p unlinked. Takes t's record off its semaphore if it is
 * queued there and queues t again with no unit, as end_wait does, marked
 * `ended`: its arrival skips it (take_unit). false: not queued (not yet, or a
 * release is handing it a unit: grant's handoff takes it off the list);
 * destroy asks again. Callable from: destroy's thread. */
static bool park_end(weft__parked *p)
{
    weft__attr *a = WEFT_CONTAINER_OF(p, weft__attr, park);
    if (!weft__sem_withdraw(a->sem, &a->rec))
        return false;
    weft_task *t = a->t;
    atomic_store_explicit(&a->ended, true, memory_order_relaxed);   /* published with t by the queue below */
    atomic_store_explicit(&a->waiting, false, memory_order_release);   /* release: rec is free again; pairs with take_unit's exchange */
    weft__worker *w = weft__tls_worker;
    if (w && weft__worker_sched(w) != t->g->sched)
        w = NULL;   /* destroy from a plain thread: the global ring */
    weft__graph_queue(w, t, true);   /* counted in `pending` by take_unit; t, g and a are not ours after this */
    return true;
}

void weft__attr_end_waits(weft_graph *g)
{
    /* StoreLoad (step C2): the run's cancel mark before the waiting
     * flags; pairs with take_unit's fence (W2). */
    atomic_thread_fence(memory_order_seq_cst);
    if (!(atomic_load_explicit(&g->run, memory_order_relaxed) & 1u))   /* under lock */
        return;   /* no run: nobody waits */
    uint32_t n = g->n < g->attrs_cap ? g->n : g->attrs_cap;
    for (uint32_t i = 0; g->nattr && i < n; i++) {
        weft__attr *a = &g->attrs[i];
        if (a->sem && weft__has_attr(weft__graph_node(g, i)))
            end_wait(a);
    }
    /* The graphs running as g's modules are cancelled with it (their
     * claims ask weft__module_cancelled): their waits end too. Parent
     * before child, the order modules lock in; sub->parent is read under
     * sub's lock (module.c). */
    for (uint32_t k = 0; k < g->nmodules + g->nsubflows; k++) {
        weft_task *m;
        weft_graph *sub;
        if (k < g->nmodules) {
            m = weft__graph_node(g, g->modules[k]);
            sub = m->arg;
        } else {
            /* subflow.c: the same, where a visit's add made its sub-graph
             * (made under g's lock, which the caller holds) */
            const weft__sfrec *rec = &g->sfrecs[k - g->nmodules];
            m = rec->task;
            sub = atomic_load_explicit(&((weft__sfrec *)rec)->sub, memory_order_relaxed);
            if (!sub)
                continue;
        }
        weft__graph_lock(sub);
        if (weft__graph_up(sub) == m)
            weft__attr_end_waits(sub);
        weft__graph_unlock(sub);
    }
}

void weft__attr_cancel_task(weft_task *t)
{
    weft_graph *g = t->g;
    weft__graph_lock(g);
    /* StoreLoad (step C2): the task's cancel mark (the caller's fetch_or)
     * before its waiting flag; pairs with take_unit's fence (W2). */
    atomic_thread_fence(memory_order_seq_cst);
    if ((atomic_load_explicit(&g->run, memory_order_relaxed) & 1u) && weft__has_attr(t)) {   /* under lock */
        weft__attr *a = attr_of(t);
        if (a->sem)
            end_wait(a);
    }
    weft__graph_unlock(g);
}

void weft__attr_module_unit(weft__visiting *vis, weft_task *t, bool keep)
{
    if (keep && vis->unit) {
        attr_of(t)->module_unit = vis->unit;   /* published to module_done by the module's run */
        vis->unit = NULL;
    } else if (!keep && vis->unit == NULL && weft__has_attr(t)) {
        vis->unit = attr_of(t)->module_unit;
        attr_of(t)->module_unit = NULL;
    }
}

void weft__attr_module_done(weft_task *t)
{
    weft__attr *a = attr_of(t);
    if (a->module_unit) {
        weft_sem_release(a->module_unit);
        a->module_unit = NULL;
    }
}
