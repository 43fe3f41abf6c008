/* This file is private to weft: fibers (src/fiber).
 *
 * A fiber is a stack plus a saved context. Its struct lives at the top of
 * its own mapping, above the usable stack, with a 64 KiB PROT_NONE guard
 * below the stack (so that a big frame cannot step over it; see fiber.c):
 * creating one is one mmap (or none, from a pool), never a malloc. A thread becomes a fiber host with weft__fiber_thread_enter,
 * which also describes the thread's own stack as a fiber so that the
 * thread can be switched back to.
 *
 * Every switch goes through weft__fiber_switch / weft__fiber_exit, the one
 * place that tells ASan, TSAN and Valgrind about stacks.
 */
#ifndef WEFT_FIBER_H
#define WEFT_FIBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdatomic.h>   /* not in C++ (the benchmarks read this header) */
#endif

#include "arch.h"
#include "base.h"

typedef struct weft__fiber weft__fiber;
typedef void (*weft__fiber_fn)(void *arg);

struct weft__fiber {
    weft__ctx ctx;          /* saved stack pointer while switched out */
    weft__fiber *next;      /* intrusive link: pools, wait queues, ready lists */
    void *stack_lo;         /* lowest usable byte (just above the guard) */
    size_t stack_size;      /* usable bytes (the thread's stack for a host) */
    void *map;              /* mmap base, where the guard starts; NULL for a thread */
    size_t map_size;
    weft__fiber_fn fn;
    void *arg;
    const char *name;       /* for stall reports and debuggers; may be NULL */
    void *host;             /* owner-defined (core keeps its per-fiber state) */
    void *asan_fake;        /* ASan: fake stack of this fiber while it is out */
    void *tsan;             /* TSAN: this fiber's handle */
    unsigned vg_id;         /* Valgrind: stack id */
};

/* A cache of fibers of one stack size. Not thread-safe: one per worker,
 * or guarded by its user. */
typedef struct weft__fiber_pool {
    size_t stack_size;      /* usable bytes of every fiber it makes */
    weft__fiber *free;      /* released fibers ready for reuse */
    unsigned cached;        /* length of free */
    unsigned max_cached;    /* beyond this, released fibers are unmapped */
    uint64_t created;       /* fibers mapped by this pool, ever */
    weft__fpstate fp;       /* FP control state every fiber starts with */
} weft__fiber_pool;

/* WEFT_EINVAL if stack_size < WEFT_FIBER_STACK_MIN (or absurdly large);
 * 0 uses WEFT_FIBER_STACK_DEFAULT. Its fibers start with the calling
 * thread's FP control state (rounding, flush-to-zero, ...) as it is now,
 * not with whatever state the thread has when it makes one: a fiber made
 * while a task that changed the state is blocked must not inherit it.
 * Callable from: any thread. */
int  weft__fiber_pool_init(weft__fiber_pool *p, size_t stack_size, unsigned max_cached);
/* Fibers made from now on start with the calling thread's FP control
 * state as it is now (a worker thread, after its start hook has set it
 * up). Callable from: the pool's owner. */
void weft__fiber_pool_take_fp(weft__fiber_pool *p);
/* Unmaps every cached fiber. Fibers still out must be released first. */
void weft__fiber_pool_fini(weft__fiber_pool *p);

/* A fiber that will run fn(arg) when first switched to; fn must never
 * return (it ends with weft__fiber_exit). WEFT_ENOMEM when mmap fails:
 * nothing is left mapped. Callable from: the pool's owner. */
int  weft__fiber_create(weft__fiber_pool *p, weft__fiber **out,
                        weft__fiber_fn fn, void *arg);
/* Gives a fiber that is not running, and will not be switched to again,
 * back to its pool (or unmaps it). Callable from: the pool's owner. */
void weft__fiber_release(weft__fiber_pool *p, weft__fiber *f);

/* Makes the calling thread a fiber host: `self` describes the thread's own
 * stack, becomes the current fiber, and the stack-overflow handler is
 * armed (with an alternate signal stack for this thread). Returns
 * WEFT_ENOMEM if the signal stack cannot be mapped. */
int  weft__fiber_thread_enter(weft__fiber *self);
/* Undoes weft__fiber_thread_enter; the thread's own fiber must be current. */
void weft__fiber_thread_leave(void);

/* The fiber running on this thread, NULL on a thread that is no host. */
weft__fiber *weft__fiber_current(void);

/* Switches from the current fiber `from` to `to`; returns when something
 * switches back to `from`. Callable from: fiber `from`, on a host thread. */
void weft__fiber_switch(weft__fiber *from, weft__fiber *to);

/* Leaves `from` for good and switches to `to`: `from` may be released by
 * whoever runs next. Callable from: fiber `from`. */
_Noreturn void weft__fiber_exit(weft__fiber *from, weft__fiber *to);

#ifdef WEFT_TEST_SEAMS   /* only in the library the tests link */
/* Test seam: the next N maps succeed, then one fails (-1 = never). */
extern long weft__fiber_fail_maps_after;
/* Test seam: while true, every map fails (the address space is full).
 * A test sets it while workers run (relaxed: a switch, nothing to
 * order). Not declared for C++, which reads this header (the benchmarks)
 * and has no _Atomic. */
#ifndef __cplusplus
extern atomic_bool weft__fiber_fail_maps_all;
#endif
#endif

#endif /* WEFT_FIBER_H */
