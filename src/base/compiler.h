/* This file is private to weft: compiler helpers, the build's check level
 * and sanitizer detection, which every other header of weft builds on.
 */
#ifndef WEFT_COMPILER_H
#define WEFT_COMPILER_H

#include <stddef.h>

#define WEFT_CACHELINE 64

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

#endif /* WEFT_COMPILER_H */
