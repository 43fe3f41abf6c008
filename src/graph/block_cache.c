/* This file is private to weft: the graph's block cache (block_cache.h).
 *
 * Synchronization
 *   kept       the kept blocks' list (linked through their first word)
 *              and count, under kept.lock.
 *   The blocks are kept only while the process-wide allocator is weft's
 *   default; weft_set_allocator, which runs before any weft object exists
 *   (documented), calls give_back first (alloc.h's hook), so a kept block
 *   always goes back to the allocator that made it.
 *
 * fork(2): kept.lock is process-wide, so a thread the child does not have
 * could hold it at the fork, mid-way through an unlink, and the child's
 * first graph block would wait for it for ever. pthread_atfork (from a
 * constructor, before any weft call) takes it around fork, so the child
 * inherits it free and the list whole; it is a leaf lock (nothing is
 * taken under it), so taking it in prepare cannot wait on a thread that
 * waits for us.
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "base.h"
#include "block_cache.h"
#include "os.h"

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

/* weft_set_allocator is about to change the allocator: the kept blocks
 * go back to the one in force, which made them (the default). */
static void give_back(void)
{
    pthread_mutex_lock(&kept.lock);
    while (kept.head) {
        void *p = kept.head;
        memcpy(&kept.head, p, sizeof p);
        weft__free(p, WEFT__KEPT_SIZE);
    }
    kept.n = 0;
    pthread_mutex_unlock(&kept.lock);
}

__attribute__((constructor)) static void kept_register(void)
{
    weft__on_allocator_change(give_back);
    /* No registration (ENOMEM at start-up): fork stays as safe as it was,
     * which is for a child that only calls exec. */
    (void)weft__os_atfork(kept_fork_prepare, kept_fork_release, kept_fork_release);
}

void *weft__kept_alloc(void)
{
    if (weft__allocator_is_default()) {
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
    if (weft__allocator_is_default()) {
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
