/*
 * weft/defs.h: what every topic header of weft shares: the version, the
 * export macro, C++ linkage, and the handful of types named across topics.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_DEFS_H
#define WEFT_PUBLIC_DEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** weft's version, major.minor.patch; 0.x: the API may still change. */
#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 2
#define WEFT_VERSION_PATCH 0

/** Marks each exported function: the library is built with hidden
 * visibility, so only these are visible. Empty when WEFT_STATIC is
 * defined (a static library) or the compiler is not GCC-compatible.
 * On Windows, __declspec(dllexport) while weft itself is compiled
 * (WEFT_BUILDING), so weft.dll exports these and nothing else; empty
 * for a program, which calls them through the import library (every
 * export is a function, so no __declspec(dllimport) is needed, from
 * mingw-w64 or MSVC). */
#if defined(_WIN32)
# if defined(WEFT_BUILDING) && !defined(WEFT_STATIC)
#  define WEFT_API __declspec(dllexport)
# else
#  define WEFT_API
# endif
#elif defined(WEFT_STATIC) || !defined(__GNUC__)
# define WEFT_API
#else
# define WEFT_API __attribute__((visibility("default")))
#endif

/* C linkage for the declarations between them when included from C++. */
#ifdef __cplusplus
# define WEFT_BEGIN_DECLS extern "C" {
# define WEFT_END_DECLS }
#else
# define WEFT_BEGIN_DECLS
# define WEFT_END_DECLS
#endif

WEFT_BEGIN_DECLS

/** A scheduler: worker threads, their queues, and the threads bound to it
 * (weft/sched.h). */
typedef struct weft_sched weft_sched;

/** A task's function: spawned tasks, graph tasks, blocking calls. */
typedef void (*weft_fn)(void *arg);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_DEFS_H */
