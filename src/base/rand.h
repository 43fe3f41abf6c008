/* This file is private to weft: the one pseudo-random generator, for
 * choices that only need to differ between threads and calls (steal
 * order, shuffle mode, a lock's random pause), never for anything secret.
 */
#ifndef WEFT_RAND_H
#define WEFT_RAND_H

#include <stdint.h>

/* xorshift64: the next number of the sequence *s (owned by the caller),
 * which it advances. *s must not be 0: the sequence never leaves 0.
 * Callable from: the owner of *s. */
static inline uint64_t weft__next_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

#endif /* WEFT_RAND_H */
