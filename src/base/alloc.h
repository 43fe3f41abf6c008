/* This file is private to weft: memory through the process-wide
 * allocator (weft_set_allocator) or a scheduler's, blocks freed late in
 * checked builds, and handing free pages back to the system.
 */
#ifndef WEFT_ALLOC_H
#define WEFT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

#include "weft.h"

/* Through the process-wide allocator (weft_set_allocator): graphs,
 * channels. Sizes of 64 bytes and more come back cache-line aligned. NULL
 * on failure. */
void *weft__alloc(size_t size);
void *weft__calloc(size_t size);
void  weft__free(void *ptr, size_t size);
/* weft__free, except that in checked builds (WEFT_DEBUG) the block stays
 * allocated, unused, until WEFT__LATE_SLOTS (4096) later blocks have been
 * freed so or weft_set_allocator changes the allocator: a header whose
 * life tag says DEAD can then still be read by a call that comes after
 * its destroy, which aborts naming the object instead of reading freed
 * memory. Callable from: any thread. */
void  weft__free_late(void *ptr, size_t size);

/* Is the process-wide allocator weft's default (malloc)? A layer may keep
 * freed blocks for reuse only then (a user's allocator sees every block
 * come and go), and must give them back when weft__on_allocator_change's
 * hook runs. Callable from: any thread. */
bool  weft__allocator_is_default(void);

/* Registers fn, which weft_set_allocator calls before the allocator
 * changes, while the allocator that made the caller's kept blocks still
 * serves weft__free: the layer gives them back there. At most
 * WEFT__ALLOCATOR_HOOKS hooks; panics past that. Callable from: a
 * constructor (before any weft call; nothing else runs). */
#define WEFT__ALLOCATOR_HOOKS 4
void  weft__on_allocator_change(void (*fn)(void));

/* A caller freed `bytes` through the process-wide allocator, in blocks
 * that may lie between others still in use (a destroyed graph's names and
 * arrays). With weft's default allocator on glibc, once WEFT__TRIM_AFTER
 * bytes or more have been freed so since the last time, free pages are
 * handed back to the system (malloc_trim): malloc alone keeps them
 * resident, and a process that built and destroyed big graphs would hold
 * their peak for ever. Elsewhere, or with a user's allocator, nothing.
 * Callable from: any thread, holding no weft lock (it may take a while:
 * a walk of malloc's free lists). */
#define WEFT__TRIM_AFTER ((size_t)8 << 20)
void  weft__trim_freed(size_t bytes);

/* Through allocator a (a scheduler's), or the process-wide one if a is
 * NULL. A block goes back to the allocator that made it, with the size
 * it was asked for. */
void *weft__alloc_with(const weft_allocator *a, size_t size);
void *weft__calloc_with(const weft_allocator *a, size_t size);
void  weft__free_with(const weft_allocator *a, void *ptr, size_t size);

/* Fills *a from a user's allocator: a copy of it, or of the process-wide
 * allocator as it is now if both hooks are NULL. WEFT_EINVAL if only one
 * hook is set. */
int   weft__allocator_resolve(weft_allocator *a, const weft_allocator *user);

#endif /* WEFT_ALLOC_H */
