/* This file is private to weft: task groups (weft_group_*).
 *
 * A group lives in its caller's frame: a scheduler, a wait group counting
 * the members not yet ended (and holding the threads that join asleep),
 * and a cancel flag.
 *
 * Members. One spawned on a thread of the group's scheduler (a worker, or
 * a bound thread) is a record of that thread's own task pool (core's, as
 * weft_spawn's), holding (group, fn, arg) in its data words. Core gives a
 * pooled record back before it calls the record's function, and a member
 * still has to read its own: so the spawn takes the record's POOLED mark
 * off while it is queued, and member_run puts it back and frees the
 * record to the pool of the thread that runs it once it has read it,
 * before fn runs: a member that spawns members reuses it. A member spawned
 * from any other thread is a cell of src/flow's pool (pool.h) holding its
 * own record and (group, fn, arg), given back as early.
 *
 * Joining. A task (on a worker) first runs its own members that nobody
 * has taken, newest first, inline (core's weft__help_until: they are its
 * children, the record's spawner being its fiber); whatever others run
 * it then waits for on the wait group, which suspends its fiber only.
 * Any other thread waits on the wait group at once (a bound thread runs
 * other tasks meanwhile).
 *
 * Synchronization
 *   wg        the wait group's own protocol, through its inline common
 *             cases (src/sync/wg.h): add1 per spawn, before the record
 *             is queued (the queue's push publishes the member); done
 *             per member, its last touch of the group (acq_rel: the
 *             member's writes reach the join). The join's test that every
 *             member ended (weft__wg_ended: count at zero and no member
 *             still inside done waking sleepers; acquire) lets the join
 *             return without touching wg again: the caller may free it.
 *   cancelled relaxed: a hint members read at their start (a member that
 *             misses a cancel runs, which a cancel allows).
 *   skip      set by weft_group_set_skip (release), read by a skipped
 *             member (acquire): the caller sets it before the spawns it
 *             concerns, and the spawn's push publishes it anyway.
 *   a member's record: written by its spawner before the push, read by
 *             the thread that runs it (the queues order the two); freed
 *             by that thread to its own pool (owner only) or, with none,
 *             as core frees records from outside.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "core_api.h"
#include "pool.h"
#include "wg.h"

typedef struct group_impl {
    weft_waitgroup wg;
    weft_sched *s;
    atomic_bool cancelled;
    _Atomic(weft_fn) skip;   /* called with a skipped member's arg, or NULL */
} group_impl;

_Static_assert(sizeof(group_impl) <= sizeof(weft_group), "group fits its public body");
_Static_assert(_Alignof(group_impl) <= _Alignof(weft_group), "group alignment");

/* A member spawned from outside the scheduler's threads (see the top). */
typedef struct member {
    weft__task rec;
    group_impl *g;
    weft_fn fn;
    void *arg;
} member;

static weft__flow_pool member_pool = WEFT__FLOW_POOL_INIT(sizeof(member));

__attribute__((constructor)) static void member_pool_register(void)
{
    weft__flow_pool_register(&member_pool);   /* fork and weft_set_allocator find it (pool.c) */
}

static group_impl *impl(const weft_group *gr)
{
    return (group_impl *)(void *)gr;
}

/* What every member does once its record is given back. */
static void member_body(group_impl *g, weft_fn fn, void *a)
{
    if (!atomic_load_explicit(&g->cancelled, memory_order_relaxed)) {   /* see the top */
        fn(a);
    } else {
        weft_fn skip = atomic_load_explicit(&g->skip, memory_order_acquire);   /* see the top */
        if (skip)
            skip(a);
    }
    weft__wg_done(&g->wg);   /* the member's last touch of g */
}

/* A member in a pool record: data[0..2] hold (g, fn, arg). */
static void member_run(void *arg)
{
    weft__task *t = arg;
    group_impl *g = (group_impl *)(uintptr_t)t->data[0];
    weft_fn fn = (weft_fn)(uintptr_t)t->data[1];
    void *a = (void *)(uintptr_t)t->data[2];
    weft__worker *w = weft__tls_worker;   /* a thread of g->s runs it */
    t->flags |= WEFT__TASK_POOLED;   /* read out: back to a pool (see the top) */
    weft__task_free(g->s, w && weft__worker_sched(w) == g->s ? w : NULL, t);
    member_body(g, fn, a);
}

/* A member in a cell of member_pool. */
static void member_cell_run(void *arg)
{
    member *m = arg;
    group_impl *g = m->g;
    weft_fn fn = m->fn;
    void *a = m->arg;
    weft__flow_put(&member_pool, m);
    member_body(g, fn, a);
}

int weft_group_init(weft_group *gr, weft_sched *s)
{
    if (!gr || !s)
        return WEFT_EINVAL;
    group_impl *g = impl(gr);
    weft_waitgroup_init(&g->wg, 0);
    g->s = s;
    atomic_init(&g->cancelled, false);
    atomic_init(&g->skip, NULL);
    return WEFT_OK;
}

/* weft_group_spawn from a thread that is none of g->s's. */
static int spawn_outside(group_impl *g, weft_fn fn, void *arg)
{
    if (weft__sched_closing(g->s))
        return WEFT_ESHUTDOWN;
    member *m = weft__flow_get(&member_pool);
    if (!m)
        return WEFT_ENOMEM;
    memset(&m->rec, 0, sizeof m->rec);
    m->rec.fn = member_cell_run;
    m->rec.arg = m;
    m->g = g;
    m->fn = fn;
    m->arg = arg;
    weft__wg_add1(&g->wg);
    int rc = weft__submit_external(g->s, &m->rec, WEFT_HINT_NONE);
    if (rc != WEFT_OK) {
        weft_waitgroup_add(&g->wg, -1);
        weft__flow_put(&member_pool, m);
    }
    return rc;
}

int weft_group_spawn(weft_group *gr, weft_fn fn, void *arg)
{
    if (!gr || !fn)
        return WEFT_EINVAL;
    group_impl *g = impl(gr);
    if (atomic_load_explicit(&g->cancelled, memory_order_relaxed))
        return WEFT_ECANCELED;
    weft__worker *w = weft__tls_worker;
    if (!w || weft__worker_sched(w) != g->s)
        return spawn_outside(g, fn, arg);
    weft__task *t = weft__task_alloc(g->s, w);
    if (!t)
        return WEFT_ENOMEM;
    t->fn = member_run;
    t->arg = t;
    t->spawner = weft__worker_fiber(w);   /* its spawner's child: a join may run it inline */
    t->flags &= ~(uint32_t)WEFT__TASK_POOLED;   /* until member_run has read it (see the top) */
    t->data[0] = (uintptr_t)g;
    t->data[1] = (uintptr_t)fn;
    t->data[2] = (uintptr_t)arg;
    weft__wg_add1(&g->wg);
    weft__submit(g->s, w, t, WEFT_HINT_NONE);
    return WEFT_OK;
}

/* Every member ended, and none is still inside g (see the top). */
static bool all_ended(void *ctx)
{
    return weft__wg_ended(&((group_impl *)ctx)->wg);
}

int weft_group_join(weft_group *gr)
{
    group_impl *g = impl(gr);
    weft__worker *w = weft__tls_worker;
    /* all_ended first: a group whose members all ended joins without
     * touching its scheduler, which may be destroyed by then. */
    if (!all_ended(g) && weft__sched_unserved_here(g->s))
        return WEFT_ENOTBOUND;   /* members left and nobody here would run them (core_api.h) */
    if (!(w && weft__worker_sched(w) == g->s && !weft__worker_is_bound(w) && weft__help_until(w, all_ended, g))) {
        int rc = weft_waitgroup_wait(&g->wg);
        if (rc != WEFT_OK)
            return rc;
    }
    if (!atomic_load_explicit(&g->cancelled, memory_order_relaxed))
        return WEFT_OK;   /* no locked instruction when nothing was cancelled */
    bool was = atomic_exchange_explicit(&g->cancelled, false, memory_order_relaxed);
    return was ? WEFT_ECANCELED : WEFT_OK;
}

void weft_group_set_skip(weft_group *gr, weft_fn skip)
{
    atomic_store_explicit(&impl(gr)->skip, skip, memory_order_release);   /* see the top */
}

void weft_group_cancel(weft_group *gr)
{
    atomic_store_explicit(&impl(gr)->cancelled, true, memory_order_relaxed);
}

bool weft_group_cancelled(const weft_group *gr)
{
    return atomic_load_explicit(&impl(gr)->cancelled, memory_order_relaxed);
}

void weft_group_destroy(weft_group *gr)
{
    group_impl *g = impl(gr);
    while (!weft__wg_ended(&g->wg) && weft_waitgroup_wait(&g->wg) != WEFT_OK)
        weft_yield();
    weft_waitgroup_destroy(&g->wg);
}
