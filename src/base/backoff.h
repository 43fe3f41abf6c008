/* This file is private to weft: the backoff of a wait that is expected
 * to last a few instructions (a lock's holder, a releaser leaving).
 *
 * The thread it waits for may be one the kernel preempted: after
 * WEFT__BACKOFF_SPINS pauses the waiter yields its CPU at every step
 * instead of burning it. State on the waiter's stack; nothing shared.
 */
#ifndef WEFT_BACKOFF_H
#define WEFT_BACKOFF_H

#include <stdatomic.h>
#include <stdbool.h>

#include "os.h"

/* Pauses before the first yield. */
#define WEFT__BACKOFF_SPINS 128u

typedef struct weft__backoff {
    unsigned n;   /* steps taken, counted up to WEFT__BACKOFF_SPINS */
} weft__backoff;

#define WEFT__BACKOFF_INIT { 0 }

/* One pause of a spin-wait loop: tells the core we are spinning. */
static inline void weft__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* Will the next step only pause? false once it yields: a waiter with a
 * deadline looks at the clock then, not during the pauses. */
static inline bool weft__backoff_spinning(const weft__backoff *b)
{
    return b->n < WEFT__BACKOFF_SPINS;
}

/* One step of waiting: a pause for each of the first WEFT__BACKOFF_SPINS
 * steps, a yield of the CPU for each after. */
static inline void weft__backoff_step(weft__backoff *b)
{
    if (weft__backoff_spinning(b)) {
        b->n++;
        weft__cpu_relax();
    } else {
        weft__os_yield();   /* the thread waited for is probably preempted */
    }
}

#endif /* WEFT_BACKOFF_H */
