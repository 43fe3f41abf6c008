/* This file is private to weft: misuse reports (life tags of the
 * caller-allocated primitives). The error codes themselves, with
 * weft_strerror and weft_err_name, are public (weft.h; errors.c).
 */
#ifndef WEFT_ERRORS_H
#define WEFT_ERRORS_H

#include <stdint.h>

#include "compiler.h"

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

#endif /* WEFT_ERRORS_H */
