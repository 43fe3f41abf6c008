/* This file is private to weft: the allocator hook (weft_set_allocator),
 * blocks freed late in checked builds, and handing free pages back.
 *
 * Synchronization
 *   allocator  written by weft_set_allocator before any weft object
 *              exists (documented), read anywhere after.
 *   hooks      written by constructors before main (nothing else runs),
 *              read by weft_set_allocator.
 *   late       (checked builds) the blocks freed late, under late_lock.
 *   freed_untrimmed  a tally of bytes freed, atomic (relaxed: no data
 *              rides on it); emptied by the thread that trims.
 *
 * fork(2): late_lock is process-wide, so a thread the child does not have
 * could hold it at the fork, mid-way through a ring update, and the
 * child's next late free would wait for it for ever. pthread_atfork (from
 * a constructor, before any weft call) takes it around fork, so the child
 * inherits it free and the ring whole; it is a leaf lock (nothing is
 * taken under it), so taking it in prepare cannot wait on a thread that
 * waits for us.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "os.h"

static void *default_alloc(size_t size, void *ctx)
{
    (void)ctx;
    if (size >= WEFT_CACHELINE)
        return weft__os_alloc_aligned(WEFT_CACHELINE, size);
    return malloc(size ? size : 1);
}

static void default_free(void *ptr, size_t size, void *ctx)
{
    (void)ctx;
    if (size >= WEFT_CACHELINE)
        weft__os_free_aligned(ptr);   /* default_alloc's choice, by the same size */
    else
        free(ptr);
}

/* Written once before any weft object exists (documented), read anywhere. */
static weft_allocator allocator = { default_alloc, default_free, NULL };

/* Layers that keep blocks of the allocator in force (alloc.h). */
static void (*hooks[WEFT__ALLOCATOR_HOOKS])(void);
static unsigned nhooks;

void weft__on_allocator_change(void (*fn)(void))
{
    if (nhooks == WEFT__ALLOCATOR_HOOKS)
        weft__panic("on_allocator_change: more than %d hooks", WEFT__ALLOCATOR_HOOKS);
    hooks[nhooks++] = fn;
}

bool weft__allocator_is_default(void)
{
    return allocator.alloc == default_alloc;
}

/* Blocks freed late (alloc.h, weft__free_late): in checked builds a ring
 * of the last WEFT__LATE_SLOTS, each given back through the allocator
 * when a later one pushes it out, or all of them when weft_set_allocator
 * changes the allocator (they were made by the one in force). Under
 * late_lock; what is pushed out is freed after the unlock. */
#ifdef WEFT_DEBUG
#define WEFT__LATE_SLOTS 4096u
static pthread_mutex_t late_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { void *p; size_t size; } late[WEFT__LATE_SLOTS];
static unsigned late_next;

/* fork(2) (see the top): the child inherits late_lock free. */
static void late_fork_prepare(void)
{
    pthread_mutex_lock(&late_lock);
}

static void late_fork_release(void)
{
    pthread_mutex_unlock(&late_lock);   /* parent and child alike: the ring is whole */
}

__attribute__((constructor)) static void late_fork_register(void)
{
    /* No registration (ENOMEM at start-up): fork stays as safe as it was,
     * which is for a child that only calls exec. */
    (void)weft__os_atfork(late_fork_prepare, late_fork_release, late_fork_release);
}
#endif

void weft__free_late(void *p, size_t size)
{
#ifdef WEFT_DEBUG
    pthread_mutex_lock(&late_lock);
    void *old = late[late_next].p;
    size_t old_size = late[late_next].size;
    late[late_next].p = p;
    late[late_next].size = size;
    late_next = (late_next + 1) % WEFT__LATE_SLOTS;
    pthread_mutex_unlock(&late_lock);
    if (old)
        weft__free(old, old_size);
#else
    weft__free(p, size);
#endif
}

#if defined(__GLIBC__)
/* Bytes freed (weft__trim_freed) since free pages were last handed back. */
static _Atomic size_t freed_untrimmed;
#endif

void weft__trim_freed(size_t bytes)
{
#if defined(__GLIBC__)
    if (!weft__allocator_is_default())
        return;   /* a user's allocator decides what it keeps */
    size_t sum = atomic_fetch_add_explicit(&freed_untrimmed, bytes, memory_order_relaxed) + bytes;   /* relaxed: a tally, no data to order */
    if (sum < WEFT__TRIM_AFTER)
        return;
    /* One thread trims for the tally it empties; another that freed
     * meanwhile counts from 0 again. */
    if (atomic_exchange_explicit(&freed_untrimmed, 0, memory_order_relaxed) < WEFT__TRIM_AFTER)   /* relaxed: as above */
        return;
    weft__os_trim_heap();
#else
    (void)bytes;
#endif
}

void weft_set_allocator(const weft_allocator *a)
{
    /* Kept blocks go back to the allocator that made them (the one in
     * force) before another takes over. */
    for (unsigned i = 0; i < nhooks; i++)
        hooks[i]();
#ifdef WEFT_DEBUG
    /* Blocks freed late likewise. */
    pthread_mutex_lock(&late_lock);
    for (unsigned i = 0; i < WEFT__LATE_SLOTS; i++) {
        if (late[i].p)
            allocator.free(late[i].p, late[i].size, allocator.ctx);
        late[i].p = NULL;
    }
    pthread_mutex_unlock(&late_lock);
#endif
    if (a && a->alloc && a->free)
        allocator = *a;
    else
        allocator = (weft_allocator){ default_alloc, default_free, NULL };
}

void *weft__alloc_with(const weft_allocator *a, size_t size)
{
    if (!a)
        a = &allocator;
    return a->alloc(size, a->ctx);
}

void *weft__calloc_with(const weft_allocator *a, size_t size)
{
    void *p = weft__alloc_with(a, size);
    if (p)
        memset(p, 0, size);
    return p;
}

void weft__free_with(const weft_allocator *a, void *ptr, size_t size)
{
    if (!a)
        a = &allocator;
    if (ptr)
        a->free(ptr, size, a->ctx);
}

void *weft__alloc(size_t size)
{
    return weft__alloc_with(NULL, size);
}

void *weft__calloc(size_t size)
{
    return weft__calloc_with(NULL, size);
}

void weft__free(void *ptr, size_t size)
{
    weft__free_with(NULL, ptr, size);
}

int weft__allocator_resolve(weft_allocator *a, const weft_allocator *user)
{
    if (user && (user->alloc || user->free)) {
        if (!user->alloc || !user->free)
            return WEFT_EINVAL;
        *a = *user;
    } else {
        *a = allocator;
    }
    return WEFT_OK;
}
