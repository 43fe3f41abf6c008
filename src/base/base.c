/* This file is private to weft: panics, errors, the allocator hook, the
 * kept blocks, handing free pages back, and the brief-mutex helper.
 *
 * Synchronization
 *   allocator  written by weft_set_allocator before any weft object
 *              exists (documented), read anywhere after.
 *   kept       the kept blocks' list and count, under kept.lock.
 *   late       (checked builds) the blocks freed late, under kept.lock.
 *   freed_untrimmed  a tally of bytes freed, atomic (relaxed: no data
 *              rides on it); emptied by the thread that trims.
 *
 * fork(2): kept.lock is process-wide, so a thread the child does not have
 * could hold it at the fork, mid-way through an unlink, and the child's
 * first graph block would wait for it for ever. pthread_atfork (from a
 * constructor, before any weft call) takes it around fork, so the child
 * inherits it free and the list whole; it is a leaf lock (nothing is
 * taken under it but the C library's malloc, which fork handles itself),
 * so taking it in prepare cannot wait on a thread that waits for us.
 */
#define _GNU_SOURCE   /* PTHREAD_MUTEX_ADAPTIVE_NP */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "os.h"

const char *weft_strerror(int err)
{
    switch (err) {
    case WEFT_OK: return "success";
#define WEFT__ERR_MSG(name, value, msg) case WEFT_##name: return msg;
    WEFT_ERRNO_MAP(WEFT__ERR_MSG)
#undef WEFT__ERR_MSG
    default: return "unknown error";
    }
}

const char *weft_err_name(int err)
{
    switch (err) {
    case WEFT_OK: return "OK";
#define WEFT__ERR_NAME(name, value, msg) case WEFT_##name: return #name;
    WEFT_ERRNO_MAP(WEFT__ERR_NAME)
#undef WEFT__ERR_NAME
    default: return "UNKNOWN";
    }
}

void weft__panic(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "weft: %s\n", buf);
    fflush(stderr);
    abort();
}

void weft__misuse(const char *call, const char *kind, const void *obj, uint32_t tag)
{
    weft__panic("%s: %s %p %s", call, kind, obj,
                tag == WEFT__TAG_DEAD ? "used after it was destroyed"
                                      : "used before it was initialized (or overwritten)");
}

static void *default_alloc(size_t size, void *ctx)
{
    (void)ctx;
    void *p = NULL;
    if (size >= WEFT_CACHELINE)
        return posix_memalign(&p, WEFT_CACHELINE, size) == 0 ? p : NULL;
    return malloc(size ? size : 1);
}

static void default_free(void *ptr, size_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    free(ptr);
}

/* Written once before any weft object exists (documented), read anywhere. */
static weft_allocator allocator = { default_alloc, default_free, NULL };

/* Kept blocks (base.h), linked through their first word; only ever made
 * by default_alloc. */
static struct {
    pthread_mutex_t lock;
    void *head;
    size_t n;
} kept = { PTHREAD_MUTEX_INITIALIZER, NULL, 0 };

/* fork(2) (see the top): the child inherits kept.lock free. */
static void kept_fork_prepare(void)
{
    pthread_mutex_lock(&kept.lock);
}

static void kept_fork_release(void)
{
    pthread_mutex_unlock(&kept.lock);   /* parent and child alike: the list is whole */
}

__attribute__((constructor)) static void kept_fork_register(void)
{
    /* No registration (ENOMEM at start-up): fork stays as safe as it was,
     * which is for a child that only calls exec. */
    (void)pthread_atfork(kept_fork_prepare, kept_fork_release, kept_fork_release);
}

/* Blocks freed late (base.h, weft__free_late): in checked builds a ring
 * of the last WEFT__LATE_SLOTS, each given back through the allocator
 * when a later one pushes it out, or all of them when weft_set_allocator
 * changes the allocator (they were made by the one in force). Under
 * kept.lock, which fork already handles; what is pushed out is freed
 * after the unlock. */
#ifdef WEFT_DEBUG
#define WEFT__LATE_SLOTS 4096u
static struct { void *p; size_t size; } late[WEFT__LATE_SLOTS];
static unsigned late_next;
#endif

void weft__free_late(void *p, size_t size)
{
#ifdef WEFT_DEBUG
    pthread_mutex_lock(&kept.lock);
    void *old = late[late_next].p;
    size_t old_size = late[late_next].size;
    late[late_next].p = p;
    late[late_next].size = size;
    late_next = (late_next + 1) % WEFT__LATE_SLOTS;
    pthread_mutex_unlock(&kept.lock);
    if (old)
        weft__free(old, old_size);
#else
    weft__free(p, size);
#endif
}

static bool allocator_is_default(void)
{
    return allocator.alloc == default_alloc;
}

void *weft__kept_alloc(void)
{
    if (allocator_is_default()) {
        pthread_mutex_lock(&kept.lock);
        void *p = kept.head;
        if (p) {
            memcpy(&kept.head, p, sizeof p);
            kept.n--;
        }
        pthread_mutex_unlock(&kept.lock);
        if (p)
            return p;
    }
    return weft__alloc(WEFT__KEPT_SIZE);
}

void weft__kept_free(void *p)
{
    if (!p)
        return;
    if (allocator_is_default()) {
        pthread_mutex_lock(&kept.lock);
        bool keep = kept.n < WEFT__KEPT_MAX / WEFT__KEPT_SIZE;
        if (keep) {
            memcpy(p, &kept.head, sizeof p);
            kept.head = p;
            kept.n++;
        }
        pthread_mutex_unlock(&kept.lock);
        if (keep)
            return;
    }
    weft__free(p, WEFT__KEPT_SIZE);
}

/* Bytes freed (weft__trim_freed) since free pages were last handed back. */
static _Atomic size_t freed_untrimmed;

void weft__trim_freed(size_t bytes)
{
#if defined(__GLIBC__)
    if (!allocator_is_default())
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
    /* Kept blocks go back to malloc before another allocator takes over. */
    pthread_mutex_lock(&kept.lock);
    while (kept.head) {
        void *p = kept.head;
        memcpy(&kept.head, p, sizeof p);
        default_free(p, WEFT__KEPT_SIZE, NULL);
    }
    kept.n = 0;
#ifdef WEFT_DEBUG
    /* Blocks freed late go back to the allocator that made them. */
    for (unsigned i = 0; i < WEFT__LATE_SLOTS; i++) {
        if (late[i].p)
            allocator.free(late[i].p, late[i].size, allocator.ctx);
        late[i].p = NULL;
    }
#endif
    pthread_mutex_unlock(&kept.lock);
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

int weft__mutex_init_brief(pthread_mutex_t *m)
{
#if defined(PTHREAD_MUTEX_ADAPTIVE_NP)
    pthread_mutexattr_t ma;
    if (pthread_mutexattr_init(&ma) == 0) {
        int rc = pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
        if (rc == 0)
            rc = pthread_mutex_init(m, &ma);
        pthread_mutexattr_destroy(&ma);
        if (rc == 0)
            return 0;
    }
#endif
    return pthread_mutex_init(m, NULL);   /* a plain mutex is correct, only slower */
}
