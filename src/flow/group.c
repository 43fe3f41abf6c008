/* This file is private to weft: task groups (weft_group_*).
 *
 * A group lives in its caller's frame: a scheduler, a count of members
 * not yet ended, a wait group for the threads that join asleep, and a
 * cancel flag. Each member is a pool cell (pool.h) holding its own queue
 * record and (group, fn, arg); the member gives its cell back before it
 * calls fn, so a member that spawns members reuses it.
 *
 * Joining. A task (on a worker) first runs its own members that nobody
 * has taken, newest first, inline (core's weft__help_until: they are its
 * children, the record's spawner being its fiber); whatever others run
 * it then waits for on the wait group, which suspends its fiber only.
 * Any other thread waits on the wait group at once (a bound thread runs
 * other tasks meanwhile).
 *
 * Synchronization
 *   left      fetch_add (relaxed: the spawner's record push publishes the
 *             member) per spawn; fetch_sub (release) as a member ends; the
 *             join's load (acquire) sees every ended member's writes.
 *   wg        add(1) per spawn, done() per member, after left: a join
 *             that sees left at zero may return without touching wg
 *             again, and its wait sees the members' writes through wg.
 *   cancelled relaxed: a hint members read at their start (a member that
 *             misses a cancel runs, which a cancel allows).
 *   skip      set by weft_group_set_skip (release), read by a skipped
 *             member (acquire): the caller sets it before the spawns it
 *             concerns, and the spawn's push publishes it anyway.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "core_api.h"
#include "pool.h"

typedef struct group_impl {
    weft_waitgroup wg;
    weft_sched *s;
    atomic_llong left;
    atomic_bool cancelled;
    _Atomic(weft_fn) skip;   /* called with a skipped member's arg, or NULL */
} group_impl;

_Static_assert(sizeof(group_impl) <= sizeof(weft_group), "group fits its public body");
_Static_assert(_Alignof(group_impl) <= _Alignof(weft_group), "group alignment");

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

static void member_entry(void *arg)
{
    member *m = arg;
    group_impl *g = m->g;
    weft_fn fn = m->fn;
    void *a = m->arg;
    weft__flow_put(&member_pool, m);
    if (!atomic_load_explicit(&g->cancelled, memory_order_relaxed)) {   /* see the top */
        fn(a);
    } else {
        weft_fn skip = atomic_load_explicit(&g->skip, memory_order_acquire);   /* see the top */
        if (skip)
            skip(a);
    }
    atomic_fetch_sub_explicit(&g->left, 1, memory_order_release);   /* see the top */
    weft_waitgroup_done(&g->wg);   /* the member's last touch of g */
}

int weft_group_init(weft_group *gr, weft_sched *s)
{
    if (!gr || !s)
        return WEFT_EINVAL;
    group_impl *g = impl(gr);
    memset(gr, 0, sizeof *gr);
    weft_waitgroup_init(&g->wg, 0);
    g->s = s;
    atomic_init(&g->left, 0);
    atomic_init(&g->cancelled, false);
    atomic_init(&g->skip, NULL);
    return WEFT_OK;
}

int weft_group_spawn(weft_group *gr, weft_fn fn, void *arg)
{
    if (!gr || !fn)
        return WEFT_EINVAL;
    group_impl *g = impl(gr);
    if (atomic_load_explicit(&g->cancelled, memory_order_relaxed))
        return WEFT_ECANCELED;
    weft__worker *w = weft__tls_worker;
    if (w && weft__worker_sched(w) != g->s)
        w = NULL;
    if (!w && weft__sched_closing(g->s))
        return WEFT_ESHUTDOWN;
    member *m = weft__flow_get(&member_pool);
    if (!m)
        return WEFT_ENOMEM;
    memset(&m->rec, 0, sizeof m->rec);
    m->rec.fn = member_entry;
    m->rec.arg = m;
    m->rec.spawner = w ? weft__worker_fiber(w) : NULL;   /* its spawner's child: a join may run it inline */
    m->g = g;
    m->fn = fn;
    m->arg = arg;
    atomic_fetch_add_explicit(&g->left, 1, memory_order_relaxed);
    weft_waitgroup_add(&g->wg, 1);
    if (w) {
        weft__submit(g->s, w, &m->rec, WEFT_HINT_NONE);
        return WEFT_OK;
    }
    int rc = weft__submit_external(g->s, &m->rec, WEFT_HINT_NONE);
    if (rc != WEFT_OK) {
        atomic_fetch_sub_explicit(&g->left, 1, memory_order_relaxed);
        weft_waitgroup_add(&g->wg, -1);
        weft__flow_put(&member_pool, m);
    }
    return rc;
}

static bool all_ended(void *ctx)
{
    return atomic_load_explicit(&((group_impl *)ctx)->left, memory_order_acquire) == 0;   /* see the top */
}

int weft_group_join(weft_group *gr)
{
    group_impl *g = impl(gr);
    weft__worker *w = weft__tls_worker;
    if (atomic_load_explicit(&g->left, memory_order_acquire) != 0 && weft__sched_unserved_here(g->s))
        return WEFT_ENOTBOUND;   /* members left and nobody here would run them (core_api.h) */
    if (w && weft__worker_sched(w) == g->s && !weft__worker_is_bound(w))
        (void)weft__help_until(w, all_ended, g);
    int rc = weft_waitgroup_wait(&g->wg);
    if (rc != WEFT_OK)
        return rc;
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
    while (weft_waitgroup_wait(&g->wg) != WEFT_OK)
        weft_yield();
    weft_waitgroup_destroy(&g->wg);
}
