/* This file is private to weft: what every layer above arch shares.
 *
 * The compiler and sanitizer helpers (compiler.h), misuse reports
 * (errors.h), panics (panic.h) and the allocator (alloc.h), each its own
 * header, pulled in together here; and the brief mutex. The lowest room:
 * every other includes it.
 */
#ifndef WEFT_BASE_H
#define WEFT_BASE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

#include "compiler.h"
#include "errors.h"
#include "panic.h"
#include "alloc.h"

/* A thread that wanted to block on a fiber and could not (no fiber could
 * be mapped) sleeps this long in the kernel before it tries again. */
#define WEFT__RETRY_NS 50000

/* A mutex for critical sections of a few dozen instructions that two
 * threads often want at once (the global ring, the spare task records).
 * A waiter spins briefly before it sleeps (glibc's adaptive type, where
 * the C library has it), so a short wait costs no futex wait and wake.
 * The spin is bounded: a waiter whose holder is off the CPU still sleeps.
 * Falls back to a plain mutex where that type is missing or refused.
 * Returns pthread_mutex_init's result. Defined in mutex_brief.c. */
int   weft__mutex_init_brief(pthread_mutex_t *m);

#endif /* WEFT_BASE_H */
