/* This file is private to weft: the context switch (src/arch).
 *
 * The arch layer knows stacks and registers, nothing else: no fibers, no
 * sanitizers, no allocation. A context is the stack pointer of a
 * switched-out flow of control; everything else lives in the frame that
 * pointer addresses (frame.h).
 */
#ifndef WEFT_ARCH_H
#define WEFT_ARCH_H

#include <stddef.h>

#include "frame.h"

typedef struct weft__ctx {
    void *sp;   /* saved stack pointer; the frame of frame.h sits there */
} weft__ctx;

/* Saves the callee-saved registers and FP control state of the caller in
 * a frame on its stack, stores the stack pointer in from->sp, loads
 * to->sp and returns into that context. Returns when something switches
 * back to from. from and to may not be the same.
 * Callable from: any thread; to must not be running anywhere. */
void weft__ctx_switch(weft__ctx *from, const weft__ctx *to);

/* Prepares ctx to start fn(arg) on the stack [lo, lo + size) the first
 * time it is switched to. The entry sees the ABI's alignment (x86-64:
 * rsp % 16 == 8, as after a call; AArch64: sp % 16 == 0) and inherits the
 * FP control state (MXCSR and x87 control word, or FPCR) of the caller.
 * fn must never return: if it does, weft__ctx_entry_returned reports it
 * and aborts. size must hold the first frame (WEFT_CTX_SIZE + 64 bytes).
 * Callable from: any thread. */
void weft__ctx_make(weft__ctx *ctx, void *lo, size_t size,
                    void (*fn)(void *arg), void *arg);

/* A thread's floating-point control state, as a fresh context starts
 * with it: MXCSR's control bits and the x87 control word, or FPCR. */
typedef struct weft__fpstate {
#if defined(__x86_64__)
    unsigned int mxcsr;
    unsigned short x87cw;
#else
    unsigned long long fpcr;
#endif
} weft__fpstate;

/* Reads the calling thread's FP control state (MXCSR's sticky exception
 * flags are left out: a fresh context starts with none raised).
 * Callable from: any thread. */
void weft__ctx_fp_capture(weft__fpstate *fp);

/* weft__ctx_make, starting with fp instead of the caller's FP control
 * state. Callable from: any thread. */
void weft__ctx_make_fp(weft__ctx *ctx, void *lo, size_t size,
                       void (*fn)(void *arg), void *arg, const weft__fpstate *fp);

/* Tells a fresh context (from weft__ctx_make) the lowest address of the
 * region its stack was carved from, below its guard: on Windows the
 * thread information block's DeallocationStack while it runs, which the
 * OS's stack-overflow handling reads (guard pages commit downwards from
 * the stack to it, and STATUS_STACK_OVERFLOW is raised near it).
 * Nothing elsewhere; without the call, the stack's own lowest byte.
 * Callable from: any thread, before the first switch to ctx. */
static inline void weft__ctx_set_reserve(weft__ctx *ctx, void *base)
{
#if defined(_WIN32)
    *(void **)((char *)ctx->sp + WEFT_CTX_STACK_DEALLOC) = base;
#else
    (void)ctx;
    (void)base;
#endif
}

/* Where a fresh context starts: calls fn(arg), then entry_returned. */
void weft__ctx_trampoline(void);

/* Called by the trampoline if an entry function returns: writes a message
 * to stderr and aborts. */
_Noreturn void weft__ctx_entry_returned(void);

#endif /* WEFT_ARCH_H */
