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

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0

#if defined(WEFT_STATIC) || !defined(__GNUC__)
# define WEFT_API
#else
# define WEFT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
# define WEFT_BEGIN_DECLS extern "C" {
# define WEFT_END_DECLS }
#else
# define WEFT_BEGIN_DECLS
# define WEFT_END_DECLS
#endif

WEFT_BEGIN_DECLS

/* A scheduler: worker threads, their queues, and the threads bound to it
 * (weft/sched.h). */
typedef struct weft_sched weft_sched;

/* A task's function: spawned tasks, graph tasks, blocking calls. */
typedef void (*weft_fn)(void *arg);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_DEFS_H */
