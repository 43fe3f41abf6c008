/* This file is private to weft: src/flow's cell pools (pool.h).
 *
 * A get takes the head of its stripe's free list; an empty stripe takes
 * the whole list of the first other stripe that has one before a new slab
 * is made, so cells freed on one stripe and taken on another (an outside
 * thread spawning what workers release) circulate instead of the taker's
 * stripe allocating for ever. A slab's first cell is its header (the
 * link in the pool's slab list); the other WEFT__FLOW_SLAB_CELLS - 1 are
 * handed out.
 *
 * Synchronization
 *   stripe[i].head  under stripe[i].lock (a weft__spin: held for a few
 *                   loads and stores, never across a call out). A cell's
 *                   link word is written only while the cell is on a
 *                   list; the lock's release/acquire orders the user's
 *                   last writes to a freed cell before the next owner's.
 *   slabs           under slab_lock. Pools register themselves on
 *                   pools_head (a CAS push, never popped) from their
 *                   file's constructor, for give_back and fork.
 *   give_back       runs in weft_set_allocator, while no weft object
 *                   exists (documented), so no cell is in use and no other
 *                   thread touches a pool.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "core_api.h"
#include "os.h"
#include "pool.h"

static _Atomic(weft__flow_pool *) pools_head;

static void *link_of(void *c)
{
    void *n;
    memcpy(&n, c, sizeof n);
    return n;
}

static void set_link(void *c, void *n)
{
    memcpy(c, &n, sizeof n);
}

/* weft_set_allocator is about to change the allocator: every slab goes
 * back to the one that made it (see the top: no cell is in use). */
static void give_back(void)
{
    for (weft__flow_pool *p = atomic_load_explicit(&pools_head, memory_order_acquire); p;
         p = p->next_pool) {   /* acquire: pairs with the push's release */
        for (unsigned i = 0; i < WEFT__FLOW_STRIPES; i++)
            p->stripe[i].head = NULL;
        void *s = p->slabs;
        p->slabs = NULL;
        while (s) {
            void *next = link_of(s);
            weft__free(s, p->cell * WEFT__FLOW_SLAB_CELLS);
            s = next;
        }
    }
}

__attribute__((constructor)) static void pools_register(void)
{
    weft__on_allocator_change(give_back);
}

static unsigned stripe_index(void)
{
    weft__worker *w = weft__tls_worker;
    if (w)
        return weft__worker_id(w) % WEFT__FLOW_STRIPES;
    char here;
    uintptr_t a = (uintptr_t)&here >> 12;   /* threads' stacks lie pages apart */
    return (unsigned)((a ^ (a >> 7)) % WEFT__FLOW_STRIPES);
}

static void *pop_locked(weft__flow_stripe *st)
{
    void *c = st->head;
    if (c)
        st->head = link_of(c);
    return c;
}

/* fork(2): the pools are process-wide, and a thread the child does not
 * have could hold a stripe's or the slab list's lock at the fork; the
 * child's first async or group member would spin on it for ever. Every
 * lock of every pool is taken around fork (all leaves: none is taken under
 * another), so the child inherits them free and the lists whole. A pool is
 * on pools_head from its file's constructor (weft__flow_pool_register), so
 * none is missed before its first slab. */
static void pools_fork_prepare(void)
{
    for (weft__flow_pool *p = atomic_load_explicit(&pools_head, memory_order_acquire); p;
         p = p->next_pool) {   /* acquire: pairs with the push's release */
        weft__spin_lock(&p->slab_lock);
        for (unsigned i = 0; i < WEFT__FLOW_STRIPES; i++)
            weft__spin_lock(&p->stripe[i].lock);
    }
}

static void pools_fork_release(void)
{
    for (weft__flow_pool *p = atomic_load_explicit(&pools_head, memory_order_acquire); p;
         p = p->next_pool) {   /* acquire: as above */
        for (unsigned i = WEFT__FLOW_STRIPES; i-- > 0;)
            weft__spin_unlock(&p->stripe[i].lock);
        weft__spin_unlock(&p->slab_lock);
    }
}

__attribute__((constructor)) static void pools_fork_register(void)
{
    (void)weft__os_atfork(pools_fork_prepare, pools_fork_release, pools_fork_release);   /* as block_cache.c's */
}

/* Puts p on pools_head once (registered, under slab_lock): next_pool is
 * set before the pool is published, and pools are never removed. */
static void push_pool(weft__flow_pool *p)
{
    weft__spin_lock(&p->slab_lock);
    bool first = !p->registered;
    p->registered = true;
    weft__spin_unlock(&p->slab_lock);
    if (!first)
        return;
    weft__flow_pool *h = atomic_load_explicit(&pools_head, memory_order_relaxed);
    do
        p->next_pool = h;
    while (!atomic_compare_exchange_weak_explicit(&pools_head, &h, p, memory_order_release,
                                                  memory_order_relaxed));   /* release: publishes next_pool */
}

void weft__flow_pool_register(weft__flow_pool *p)
{
    push_pool(p);
}

/* Every stripe was empty: a new slab. Its cells but the one returned go
 * on stripe st. */
static void *new_slab(weft__flow_pool *p, weft__flow_stripe *st)
{
    char *slab = weft__alloc(p->cell * WEFT__FLOW_SLAB_CELLS);
    if (!slab)
        return NULL;
    push_pool(p);   /* already, from its constructor: kept for a pool without one */
    weft__spin_lock(&p->slab_lock);
    set_link(slab, p->slabs);
    p->slabs = slab;
    weft__spin_unlock(&p->slab_lock);
    weft__spin_lock(&st->lock);
    for (unsigned i = 2; i < WEFT__FLOW_SLAB_CELLS; i++) {
        void *c = slab + (size_t)i * p->cell;
        set_link(c, st->head);
        st->head = c;
    }
    weft__spin_unlock(&st->lock);
    return slab + p->cell;
}

void *weft__flow_get(weft__flow_pool *p)
{
    unsigned k = stripe_index();
    weft__flow_stripe *st = &p->stripe[k];
    weft__spin_lock(&st->lock);
    void *c = pop_locked(st);
    weft__spin_unlock(&st->lock);
    if (WEFT_LIKELY(c != NULL))
        return c;
    /* Take another stripe's whole list. */
    for (unsigned i = 1; i < WEFT__FLOW_STRIPES; i++) {
        weft__flow_stripe *o = &p->stripe[(k + i) % WEFT__FLOW_STRIPES];
        weft__spin_lock(&o->lock);
        void *list = o->head;
        o->head = NULL;
        weft__spin_unlock(&o->lock);
        if (!list)
            continue;
        void *rest = link_of(list);
        if (rest) {
            /* The rest onto our stripe: a walk to its tail, paid once per
             * cell it brings. */
            void *tail = rest;
            while (link_of(tail))
                tail = link_of(tail);
            weft__spin_lock(&st->lock);
            set_link(tail, st->head);
            st->head = rest;
            weft__spin_unlock(&st->lock);
        }
        return list;
    }
    return new_slab(p, st);
}

void weft__flow_put(weft__flow_pool *p, void *c)
{
    weft__flow_stripe *st = &p->stripe[stripe_index()];
    weft__spin_lock(&st->lock);
    set_link(c, st->head);
    st->head = c;
    weft__spin_unlock(&st->lock);
}
