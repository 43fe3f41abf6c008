/* This file is private to weft: what every layer above arch shares.
 *
 * Panics, the allocator hook, sanitizer detection and annotations, and
 * small compiler helpers. Lives in src/fiber because fiber is the lowest
 * layer that needs them; core and graph include it through fiber.h.
 */
#ifndef WEFT_BASE_H
#define WEFT_BASE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

#define WEFT_CACHELINE 64
/* A thread that wanted to block on a fiber and could not (no fiber could
 * be mapped) sleeps this long in the kernel before it tries again. */
#define WEFT__RETRY_NS 50000

#define WEFT_LIKELY(x)   __builtin_expect(!!(x), 1)
#define WEFT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define WEFT_UNUSED(x)   ((void)(x))
/* Thread-locals on the hot path: initial-exec avoids __tls_get_addr in
 * the shared library (static TLS; fine for a library loaded at start-up
 * and for the dlopen surplus glibc reserves). */
#define WEFT_TLS _Thread_local __attribute__((tls_model("initial-exec")))
#define WEFT_CONTAINER_OF(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))

/* Misuse checks that cost something on a hot path run only in debug
 * builds (no NDEBUG; CMake's Release and RelWithDebInfo define it), or
 * where WEFT_CHECKS is defined (the CMake option; the sanitizer presets
 * turn it on). */
#if !defined(NDEBUG) || defined(WEFT_CHECKS)
# define WEFT_DEBUG 1
#endif

/* Life tags of the caller-allocated primitives: _init writes the kind's
 * tag, _destroy writes WEFT__TAG_DEAD, and in debug builds every call
 * checks it, so a use after destroy (or before init) aborts naming the
 * object instead of corrupting memory. */
enum {
    WEFT__TAG_WAITGROUP = 0x77670001u,
    WEFT__TAG_EVENT     = 0x65760001u,
    WEFT__TAG_MUTEX     = 0x6d780001u,
    WEFT__TAG_COND      = 0x63760001u,
    WEFT__TAG_DEAD      = 0xdeadde5du,
};

_Noreturn void weft__misuse(const char *call, const char *kind, const void *obj, uint32_t tag)
    __attribute__((cold));

#ifdef WEFT_DEBUG
# define WEFT__CHECK_TAG(tag, want, call, kind, obj)                          \
    do {                                                                    \
        if (WEFT_UNLIKELY((tag) != (want)))                                 \
            weft__misuse((call), (kind), (obj), (tag));                     \
    } while (0)
#else
# define WEFT__CHECK_TAG(tag, want, call, kind, obj) ((void)0)
#endif

/* ---- sanitizers ------------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__)
# define WEFT_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
# define WEFT_TSAN 1
#endif
#if defined(__has_feature)
# if __has_feature(address_sanitizer) && !defined(WEFT_ASAN)
#  define WEFT_ASAN 1
# endif
# if __has_feature(thread_sanitizer) && !defined(WEFT_TSAN)
#  define WEFT_TSAN 1
# endif
#endif

#ifdef WEFT_TSAN
# include <sanitizer/tsan_interface.h>
/* Happens-before edges that TSAN cannot see because they pass through
 * Concurrency Kit's inline asm: release just before publishing an object,
 * acquire just after taking it. Empty outside TSAN builds. */
# define WEFT_TSAN_RELEASE(addr) __tsan_release((void *)(addr))
# define WEFT_TSAN_ACQUIRE(addr) __tsan_acquire((void *)(addr))
#else
# define WEFT_TSAN_RELEASE(addr) ((void)(addr))
# define WEFT_TSAN_ACQUIRE(addr) ((void)(addr))
#endif

/* ---- failure --------------------------------------------------------- */

/* Broken internal invariant: prints "weft: <message>" and aborts. The
 * message starts with the function's name: weft__panic("deque_steal: ..."). */
_Noreturn void weft__panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- allocation ------------------------------------------------------ */

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

/* Blocks of WEFT__KEPT_SIZE bytes (cache-line aligned) through the
 * process-wide allocator, of which up to WEFT__KEPT_MAX bytes freed are
 * kept for the next weft__kept_alloc instead of going back, while that
 * allocator is weft's default (malloc): a layer that makes and frees many
 * such blocks (graph node blocks, graph after graph) then reuses memory
 * it has instead of the kernel zeroing fresh pages each time. A user's
 * allocator sees every block come and go; weft_set_allocator gives the
 * kept blocks back to the allocator that made them. NULL: out of memory.
 * Callable from: any thread. */
#define WEFT__KEPT_SIZE ((size_t)64 << 10)
#define WEFT__KEPT_MAX ((size_t)64 << 20)
void *weft__kept_alloc(void);
void  weft__kept_free(void *p);

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

/* A mutex for critical sections of a few dozen instructions that two
 * threads often want at once (the global ring, the spare task records).
 * A waiter spins briefly before it sleeps (glibc's adaptive type, where
 * the C library has it), so a short wait costs no futex wait and wake.
 * The spin is bounded: a waiter whose holder is off the CPU still sleeps.
 * Falls back to a plain mutex where that type is missing or refused.
 * Returns pthread_mutex_init's result. */
int   weft__mutex_init_brief(pthread_mutex_t *m);

#endif /* WEFT_BASE_H */
