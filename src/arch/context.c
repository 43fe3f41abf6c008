/* This file is private to weft: make-context and the asm layout checks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "frame.h"
#include "os.h"

#if defined(__x86_64__) && defined(_WIN32)

struct frame {
    _Alignas(16) unsigned char xmm[10][16];   /* xmm6..xmm15 */
    uint32_t mxcsr;
    uint16_t x87cw;
    uint16_t pad0;
    uint64_t r15, r14, r13, r12, rdi, rsi, rbx, rbp;
    void *stack_limit, *stack_base, *stack_dealloc;
    void *except_list;
    void *ret;
};

_Static_assert(offsetof(struct frame, xmm) == WEFT_CTX_XMM6, "frame.h: xmm6");
_Static_assert(offsetof(struct frame, mxcsr) == WEFT_CTX_MXCSR, "frame.h: mxcsr");
_Static_assert(offsetof(struct frame, x87cw) == WEFT_CTX_X87CW, "frame.h: x87cw");
_Static_assert(offsetof(struct frame, r15) == WEFT_CTX_R15, "frame.h: r15");
_Static_assert(offsetof(struct frame, r14) == WEFT_CTX_R14, "frame.h: r14");
_Static_assert(offsetof(struct frame, r13) == WEFT_CTX_R13, "frame.h: r13");
_Static_assert(offsetof(struct frame, r12) == WEFT_CTX_R12, "frame.h: r12");
_Static_assert(offsetof(struct frame, rdi) == WEFT_CTX_RDI, "frame.h: rdi");
_Static_assert(offsetof(struct frame, rsi) == WEFT_CTX_RSI, "frame.h: rsi");
_Static_assert(offsetof(struct frame, rbx) == WEFT_CTX_RBX, "frame.h: rbx");
_Static_assert(offsetof(struct frame, rbp) == WEFT_CTX_RBP, "frame.h: rbp");
_Static_assert(offsetof(struct frame, stack_limit) == WEFT_CTX_STACK_LIMIT, "frame.h: stack limit");
_Static_assert(offsetof(struct frame, stack_base) == WEFT_CTX_STACK_BASE, "frame.h: stack base");
_Static_assert(offsetof(struct frame, stack_dealloc) == WEFT_CTX_STACK_DEALLOC, "frame.h: dealloc");
_Static_assert(offsetof(struct frame, except_list) == WEFT_CTX_EXCEPT_LIST, "frame.h: exception list");
_Static_assert(offsetof(struct frame, ret) == WEFT_CTX_RET, "frame.h: ret");
_Static_assert(WEFT_CTX_RET == WEFT_CTX_FRAME, "frame.h: frame ends at ret");
_Static_assert(sizeof(struct frame) == WEFT_CTX_SIZE, "frame.h: size");
_Static_assert(WEFT_CTX_FRAME % 16 == 8, "frame.h: the xmm slots must be 16-aligned in the switch");

/* The frame's address below the 16-aligned top, 48 bytes lower than
 * System V's: the trampoline starts as if called from nowhere and past
 * its own push of rbp (its unwind information says so), with a zero
 * return address at top - 40 and a zero rbp at top - 48, so that an
 * unwinder walking up from the entry stops there; the 32 bytes above
 * that return address are the shadow space a caller owes a callee
 * (the trampoline does not use its own, but it lies inside the stack). */
#define TRAMPOLINE_RET_BELOW_TOP 40
static struct frame *frame_at(uintptr_t top)
{
    return (struct frame *)(top - TRAMPOLINE_RET_BELOW_TOP - 8 - WEFT_CTX_SIZE);
}

static void fill_frame(struct frame *f, void (*fn)(void *), void *arg, const weft__fpstate *fp,
                       void *lo, uintptr_t top)
{
    f->mxcsr = fp->mxcsr;
    f->x87cw = fp->x87cw;
    f->r12 = (uint64_t)(uintptr_t)fn;
    f->r13 = (uint64_t)(uintptr_t)arg;
    f->ret = (void *)weft__ctx_trampoline;
    uintptr_t ret = top - TRAMPOLINE_RET_BELOW_TOP;
    *(void **)ret = NULL;         /* the trampoline's return address */
    *(void **)(ret - 8) = NULL;   /* the rbp it pushed */
    /* What the thread information block says of the stack while this
     * context runs: __chkstk probes down to stack_limit without faults. */
    f->stack_limit = lo;
    f->stack_base = (void *)top;
    f->stack_dealloc = lo;
    /* An empty handler chain (EXCEPTION_CHAIN_END), as a fresh Windows
     * fiber's: none of the thread's Wine frames lies on this stack. */
    f->except_list = (void *)(intptr_t)-1;
}

#elif defined(__x86_64__)

struct frame {
    uint32_t mxcsr;
    uint16_t x87cw;
    uint16_t pad;
    uint64_t r15, r14, r13, r12, rbx, rbp;
    void *ret;
};

_Static_assert(offsetof(struct frame, mxcsr) == WEFT_CTX_MXCSR, "frame.h: mxcsr");
_Static_assert(offsetof(struct frame, x87cw) == WEFT_CTX_X87CW, "frame.h: x87cw");
_Static_assert(offsetof(struct frame, r15) == WEFT_CTX_R15, "frame.h: r15");
_Static_assert(offsetof(struct frame, r14) == WEFT_CTX_R14, "frame.h: r14");
_Static_assert(offsetof(struct frame, r13) == WEFT_CTX_R13, "frame.h: r13");
_Static_assert(offsetof(struct frame, r12) == WEFT_CTX_R12, "frame.h: r12");
_Static_assert(offsetof(struct frame, rbx) == WEFT_CTX_RBX, "frame.h: rbx");
_Static_assert(offsetof(struct frame, rbp) == WEFT_CTX_RBP, "frame.h: rbp");
_Static_assert(offsetof(struct frame, ret) == WEFT_CTX_RET, "frame.h: ret");
_Static_assert(WEFT_CTX_RET == WEFT_CTX_FRAME, "frame.h: frame ends at ret");
_Static_assert(sizeof(struct frame) == WEFT_CTX_SIZE, "frame.h: size");

static struct frame *frame_at(uintptr_t top)
{
    return (struct frame *)(top - sizeof(struct frame));
}

static void fill_frame(struct frame *f, void (*fn)(void *), void *arg, const weft__fpstate *fp,
                       void *lo, uintptr_t top)
{
    f->mxcsr = fp->mxcsr;
    f->x87cw = fp->x87cw;
    f->r12 = (uint64_t)(uintptr_t)fn;
    f->r13 = (uint64_t)(uintptr_t)arg;
    f->ret = (void *)weft__ctx_trampoline;
}

#elif defined(__aarch64__)

struct frame {
    uint64_t x19, x20, x21, x22, x23, x24, x25, x26, x27, x28;
    uint64_t x29, x30;
    uint64_t d8, d9, d10, d11, d12, d13, d14, d15;
    uint64_t fpcr;
    uint64_t pad;
};

_Static_assert(offsetof(struct frame, x19) == WEFT_CTX_X19, "frame.h: x19");
_Static_assert(offsetof(struct frame, x20) == WEFT_CTX_X20, "frame.h: x20");
_Static_assert(offsetof(struct frame, x21) == WEFT_CTX_X21, "frame.h: x21");
_Static_assert(offsetof(struct frame, x22) == WEFT_CTX_X22, "frame.h: x22");
_Static_assert(offsetof(struct frame, x23) == WEFT_CTX_X23, "frame.h: x23");
_Static_assert(offsetof(struct frame, x24) == WEFT_CTX_X24, "frame.h: x24");
_Static_assert(offsetof(struct frame, x25) == WEFT_CTX_X25, "frame.h: x25");
_Static_assert(offsetof(struct frame, x26) == WEFT_CTX_X26, "frame.h: x26");
_Static_assert(offsetof(struct frame, x27) == WEFT_CTX_X27, "frame.h: x27");
_Static_assert(offsetof(struct frame, x28) == WEFT_CTX_X28, "frame.h: x28");
_Static_assert(offsetof(struct frame, x29) == WEFT_CTX_X29, "frame.h: x29");
_Static_assert(offsetof(struct frame, x30) == WEFT_CTX_X30, "frame.h: x30");
_Static_assert(offsetof(struct frame, d8) == WEFT_CTX_D8, "frame.h: d8");
_Static_assert(offsetof(struct frame, d9) == WEFT_CTX_D9, "frame.h: d9");
_Static_assert(offsetof(struct frame, d10) == WEFT_CTX_D10, "frame.h: d10");
_Static_assert(offsetof(struct frame, d11) == WEFT_CTX_D11, "frame.h: d11");
_Static_assert(offsetof(struct frame, d12) == WEFT_CTX_D12, "frame.h: d12");
_Static_assert(offsetof(struct frame, d13) == WEFT_CTX_D13, "frame.h: d13");
_Static_assert(offsetof(struct frame, d14) == WEFT_CTX_D14, "frame.h: d14");
_Static_assert(offsetof(struct frame, d15) == WEFT_CTX_D15, "frame.h: d15");
_Static_assert(offsetof(struct frame, fpcr) == WEFT_CTX_FPCR, "frame.h: fpcr");
_Static_assert(sizeof(struct frame) == WEFT_CTX_SIZE, "frame.h: size");
_Static_assert(WEFT_CTX_SIZE % 16 == 0, "frame.h: sp must stay 16-aligned");

static void fp_read(weft__fpstate *fp)
{
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    fp->fpcr = fpcr;
}

void weft__ctx_fp_capture(weft__fpstate *fp)
{
    fp_read(fp);   /* FPCR holds control only; the flags are in FPSR */
}

static struct frame *frame_at(uintptr_t top)
{
    return (struct frame *)(top - sizeof(struct frame));
}

static void fill_frame(struct frame *f, void (*fn)(void *), void *arg, const weft__fpstate *fp,
                       void *lo, uintptr_t top)
{
    f->fpcr = fp->fpcr;
    f->x19 = (uint64_t)(uintptr_t)fn;
    f->x20 = (uint64_t)(uintptr_t)arg;
    f->x29 = 0;                                   /* ends frame-pointer walks */
    f->x30 = (uint64_t)(uintptr_t)weft__ctx_trampoline;
}

#endif

#if defined(__x86_64__)
/* Both x86-64 ABIs keep MXCSR and the x87 control word in the frame. */

/* MXCSR bits 0-5: exceptions raised so far (sticky), not control. */
#define MXCSR_FLAGS 0x3fu

/* The calling thread's state as it is, flags included (weft__ctx_make). */
static void fp_read(weft__fpstate *fp)
{
    __asm__ volatile("stmxcsr %0" : "=m"(fp->mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fp->x87cw));
}

void weft__ctx_fp_capture(weft__fpstate *fp)
{
    fp_read(fp);
    fp->mxcsr &= ~MXCSR_FLAGS;
}

#endif

void weft__ctx_make_fp(weft__ctx *ctx, void *lo, size_t size, void (*fn)(void *), void *arg,
                       const weft__fpstate *fp)
{
    /* The frame goes right below the 16-aligned top (System V, AArch64:
     * when the switch pops it the stack pointer is the aligned top
     * itself; Windows: 8 bytes lower, see frame_at). */
    uintptr_t top = ((uintptr_t)lo + size) & ~(uintptr_t)15;
    struct frame *f = frame_at(top);
    memset(f, 0, WEFT_CTX_SIZE);
    fill_frame(f, fn, arg, fp, lo, top);
    ctx->sp = f;
}

void weft__ctx_make(weft__ctx *ctx, void *lo, size_t size, void (*fn)(void *), void *arg)
{
    weft__fpstate fp;
    fp_read(&fp);
    weft__ctx_make_fp(ctx, lo, size, fn, arg, &fp);
}

void weft__ctx_entry_returned(void)
{
    static const char msg[] =
        "weft: a fiber's entry function returned; a fiber must switch away "
        "when it is done, there is no frame to return to\n";
    weft__os_write_err(msg, sizeof msg - 1);
    abort();
}
