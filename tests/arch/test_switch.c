/* The raw context switch (src/arch): registers, FP control, alignment,
 * order, and a returning entry. Runs on plain malloc'd stacks. */
#define _GNU_SOURCE
#include <fenv.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#ifndef _WIN32
# include <sys/wait.h>   /* Windows: wtest.h reads wt_run_child's exit code */
#endif

#include "arch.h"
#include "base.h"
#include "wtest.h"

#ifdef WEFT_ASAN
# include <sanitizer/common_interface_defs.h>
#endif

#ifdef _WIN32
/* The C runtime has no aligned_alloc: its aligned blocks have their own free. */
# include <malloc.h>
# undef aligned_alloc   /* the tests' stand-in (support/win32/compat.h): this file frees its own */
# define aligned_alloc(align, size) _aligned_malloc(size, align)
# define free_aligned(p) _aligned_free(p)
#else
# define free_aligned(p) free(p)
#endif

/* The callee-saved registers weft_test_switch_magic fills and reads back,
 * in the order of its out[] array, and the value it loads into each. */
#if defined(__x86_64__) && defined(_WIN32)
# define NREGS 18
static const char *const reg_name[NREGS] = {
    "rbx", "rbp", "rdi", "rsi", "r12", "r13", "r14", "r15",
    "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
};

/* Mirrors regs_x86_64_win64.S: the GPRs get 0x1111111111111111 * (1..8),
 * xmm6..xmm15's low halves 0xd0d0d0d0d0d0d0NN with NN the register number. */
static uint64_t expected(int i)
{
    if (i < 8)
        return 0x1111111111111111ull * (uint64_t)(i + 1);
    return 0xd0d0d0d0d0d0d000ull + (uint64_t)(6 + i - 8);
}
#elif defined(__x86_64__)
# define NREGS 6
static const char *const reg_name[NREGS] = { "rbx", "rbp", "r12", "r13", "r14", "r15" };

static uint64_t expected(int i)
{
    return 0x1111111111111111ull * (uint64_t)(i + 1);
}
#elif defined(__aarch64__)
# define NREGS 19
static const char *const reg_name[NREGS] = {
    "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29",
    "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15",
};

/* Mirrors the table `magic` in regs_aarch64.S: x19..x29 get
 * 0x1111111111111111 * (1..11), d8..d15 get 0xd0d0d0d0d0d0d0NN with NN
 * the register number. */
static uint64_t expected(int i)
{
    if (i < 11)
        return 0x1111111111111111ull * (uint64_t)(i + 1);
    return 0xd0d0d0d0d0d0d000ull + (uint64_t)(8 + i - 11);
}
#else
# error "test_switch.c: no register helpers for this target"
#endif

void weft_test_switch_magic(weft__ctx *from, const weft__ctx *to, uint64_t out[NREGS]);
void weft_test_scramble_switch(weft__ctx *from, const weft__ctx *to);
void weft_test_entry_sp(void *arg);
void weft_test_entry_sp_c(void *arg);

#define STACK (128 * 1024)

/* A context with its stack, annotated for the sanitizers the way the
 * fiber layer does it, so these tests also run in asan/tsan builds. */
struct tctx {
    weft__ctx ctx;
    char *lo;
    size_t size;
    void *fake;
    void *tsan;
};

static struct tctx main_ctx, other;

static void tctx_make(struct tctx *t, void (*fn)(void *), void *arg)
{
    t->size = STACK;
    t->lo = aligned_alloc(64, STACK);
    WT_ASSERT(t->lo != NULL);
    weft__ctx_make(&t->ctx, t->lo, t->size, fn, arg);
#ifdef WEFT_TSAN
    t->tsan = __tsan_create_fiber(0);
#endif
}

static void tctx_free(struct tctx *t)
{
#ifdef WEFT_TSAN
    __tsan_destroy_fiber(t->tsan);
#endif
    free_aligned(t->lo);
}

static void before(struct tctx *from, struct tctx *to)
{
#ifdef WEFT_ASAN
    __sanitizer_start_switch_fiber(&from->fake, to->lo, to->size);
#endif
#ifdef WEFT_TSAN
    if (!main_ctx.tsan)
        main_ctx.tsan = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(to->tsan, 0);
#endif
    (void)from;
    (void)to;
}

static void after(struct tctx *self)
{
#ifdef WEFT_ASAN
    __sanitizer_finish_switch_fiber(self->fake, NULL, NULL);
#endif
    (void)self;
}

static void tswitch(struct tctx *from, struct tctx *to)
{
    before(from, to);
    weft__ctx_switch(&from->ctx, &to->ctx);
    after(from);
}

static void init_main(void)
{
#ifdef WEFT_TSAN
    main_ctx.tsan = __tsan_get_current_fiber();
#endif
}

/* ---- callee-saved registers ------------------------------------------ */

static void scrambler(void *arg)
{
    after(&other);
    for (;;) {
        before(&other, &main_ctx);
        weft_test_scramble_switch(&other.ctx, &main_ctx.ctx);
        after(&other);
    }
}

WT_TEST(arch, t22_callee_saved_registers_survive)
{
    init_main();
    tctx_make(&other, scrambler, NULL);
    for (int round = 0; round < 100; round++) {
        uint64_t out[NREGS] = {0};
        before(&main_ctx, &other);
        weft_test_switch_magic(&main_ctx.ctx, &other.ctx, out);
        after(&main_ctx);
        for (int i = 0; i < NREGS; i++)
            WT_ASSERT(out[i] == expected(i), "%s lost: %llx, expected %llx", reg_name[i],
                      (unsigned long long)out[i], (unsigned long long)expected(i));
    }
    tctx_free(&other);
}

/* ---- FP control state -------------------------------------------------- */

static int fiber_mode_seen;

static void fp_fiber(void *arg)
{
    after(&other);
    /* A fresh context inherits the creator's mode. */
    fiber_mode_seen = fegetround();
    fesetround(FE_UPWARD);
    for (;;) {
        tswitch(&other, &main_ctx);
        fiber_mode_seen = fegetround();
    }
}

static unsigned read_fp_control(void)
{
#if defined(__x86_64__)
    unsigned mxcsr;
    unsigned short cw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    return (mxcsr & 0xffc0u) << 16 | cw;    /* control bits only, not flags */
#else
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return (unsigned)fpcr;
#endif
}

WT_TEST(arch, t22_fp_control_is_per_context)
{
    init_main();
    fesetround(FE_TOWARDZERO);
    tctx_make(&other, fp_fiber, NULL);
    unsigned mine = read_fp_control();
    for (int i = 0; i < 50; i++) {
        tswitch(&main_ctx, &other);
        WT_ASSERT(fegetround() == FE_TOWARDZERO, "main's rounding mode changed by a switch");
        WT_ASSERT(read_fp_control() == mine, "main's FP control word changed: %x != %x",
                  read_fp_control(), mine);
        if (i == 0)
            WT_ASSERT(fiber_mode_seen == FE_TOWARDZERO, "fresh context did not inherit the mode");
        else
            WT_ASSERT(fiber_mode_seen == FE_UPWARD, "fiber's rounding mode lost across switches");
    }
    fesetround(FE_TONEAREST);
    tctx_free(&other);
}

/* ---- alignment at entry ------------------------------------------------ */

struct sp_probe {
    uint64_t sp_at_entry;  /* written by weft_test_entry_sp: must stay first */
    int aligned_local;
};

static __attribute__((noinline)) int local_is_aligned(void)
{
    _Alignas(16) volatile char buf[16];
    buf[0] = 1;
    return ((uintptr_t)buf & 15) == 0;
}

void weft_test_entry_sp_c(void *arg)
{
    after(&other);
    struct sp_probe *p = arg;
    p->aligned_local = local_is_aligned();
    for (;;)
        tswitch(&other, &main_ctx);
}

WT_TEST(arch, entry_sees_abi_alignment)
{
    init_main();
    /* Try several stack tops: the make-context must align any of them. */
    for (size_t skew = 0; skew < 64; skew += 8) {
        struct sp_probe probe = {0, 0};
        other.size = STACK;
        other.lo = aligned_alloc(64, STACK + 64);
        WT_ASSERT(other.lo != NULL);
#ifdef WEFT_TSAN
        other.tsan = __tsan_create_fiber(0);
#endif
        weft__ctx_make(&other.ctx, other.lo, STACK - skew, weft_test_entry_sp, &probe);
        tswitch(&main_ctx, &other);
#if defined(__x86_64__)
        WT_ASSERT(probe.sp_at_entry % 16 == 8, "rsp %% 16 == %d at entry (skew %zu)",
                  (int)(probe.sp_at_entry % 16), skew);
        /* The trampoline's call pushed a return address: rsp is below the top. */
        WT_ASSERT(probe.sp_at_entry < (uintptr_t)other.lo + STACK - skew, "entry sp above the stack");
#else
        WT_ASSERT(probe.sp_at_entry % 16 == 0, "sp %% 16 == %d at entry (skew %zu)",
                  (int)(probe.sp_at_entry % 16), skew);
        /* blr pushes nothing: the entry starts at the aligned top itself
         * (an empty full-descending stack), so sp may equal lo + size. */
        WT_ASSERT(probe.sp_at_entry <= (uintptr_t)other.lo + STACK - skew, "entry sp above the stack");
        WT_ASSERT(probe.sp_at_entry + 16 > (uintptr_t)other.lo + STACK - skew,
                  "entry sp %#llx wastes stack below the top (skew %zu)",
                  (unsigned long long)probe.sp_at_entry, skew);
#endif
        WT_ASSERT(probe.aligned_local, "a 16-aligned local was misaligned");
        tctx_free(&other);
    }
}

/* ---- order: C -> B -> A -> main ----------------------------------------- */

static struct tctx chain[3];
static char order[8];
static int order_len;

static void chain_fiber(void *arg)
{
    int i = (int)(intptr_t)arg;
    after(&chain[i]);
    order[order_len++] = (char)('A' + i);
    struct tctx *next = i > 0 ? &chain[i - 1] : &main_ctx;
    for (;;)
        tswitch(&chain[i], next);
}

WT_TEST(arch, switch_order_c_b_a)
{
    init_main();
    for (int i = 0; i < 3; i++)
        tctx_make(&chain[i], chain_fiber, (void *)(intptr_t)i);
    tswitch(&main_ctx, &chain[2]);
    order[order_len] = '\0';
    WT_ASSERT(strcmp(order, "CBA") == 0, "order was %s", order);
    for (int i = 0; i < 3; i++)
        tctx_free(&chain[i]);
}

/* ---- an entry that returns ---------------------------------------------- */

static void returning_entry(void *arg)
{
    after(&other);
}

static void run_returning(void *arg)
{
    init_main();
    tctx_make(&other, returning_entry, NULL);
    tswitch(&main_ctx, &other);
}

WT_TEST(arch, returning_entry_is_reported)
{
    char out[1024];
    int status = wt_run_child(run_returning, NULL, out, sizeof out);
    WT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
              "expected SIGABRT, status %#x, stderr: %s", status, out);
    WT_ASSERT(strstr(out, "weft: a fiber's entry function returned") != NULL,
              "message missing; stderr: %s", out);
}

#ifdef _WIN32
/* ---- Windows: the thread information block's stack bounds --------------- */

/* Declared here rather than through <windows.h>, which the test's own
 * names would clash with. */
unsigned short __stdcall RtlCaptureStackBackTrace(unsigned long skip, unsigned long n, void **frames,
                                                  unsigned long *hash);

static uintptr_t tib_word(int offset)
{
    uintptr_t v;
    if (offset == 0x00)
        __asm__ volatile("movq %%gs:0x00, %0" : "=r"(v));
    else if (offset == 0x08)
        __asm__ volatile("movq %%gs:0x08, %0" : "=r"(v));
    else
        __asm__ volatile("movq %%gs:0x10, %0" : "=r"(v));
    return v;
}

static uintptr_t seen_base, seen_limit, seen_except;
static unsigned short seen_frames;

static __attribute__((noinline)) int big_frame(int n)
{
    /* More than a page: the compiler probes it (__chkstk), page by page. */
    volatile char buf[64 * 1024];
    buf[0] = (char)n;
    buf[sizeof buf - 1] = (char)n;
    return buf[0] + buf[sizeof buf - 1];
}

static void tib_fiber(void *arg)
{
    after(&other);
    for (;;) {
        seen_base = tib_word(0x08);
        seen_limit = tib_word(0x10);
        seen_except = tib_word(0x00);
        big_frame(1);
        void *frames[64];
        /* Walks up to the trampoline, whose unwind information ends the
         * walk at its zero return address. */
        seen_frames = RtlCaptureStackBackTrace(0, 64, frames, NULL);
        tswitch(&other, &main_ctx);
    }
}

/* The bounds, and the ExceptionList: Wine's handler chain, whose frames
 * lie on the thread's first stack, is empty on a fiber (frame.h says why
 * an exception thrown there was otherwise never caught under Wine). */
WT_TEST(arch, win64_tib_stack_bounds_follow_the_context)
{
    init_main();
    uintptr_t base = tib_word(0x08), limit = tib_word(0x10), except = tib_word(0x00);
    tctx_make(&other, tib_fiber, NULL);
    for (int i = 0; i < 3; i++) {
        tswitch(&main_ctx, &other);
        WT_ASSERT(seen_limit == (uintptr_t)other.lo, "fiber's StackLimit %#llx, stack at %p",
                  (unsigned long long)seen_limit, (void *)other.lo);
        WT_ASSERT(seen_base > (uintptr_t)other.lo && seen_base <= (uintptr_t)other.lo + STACK,
                  "fiber's StackBase %#llx outside its stack", (unsigned long long)seen_base);
        WT_ASSERT(seen_frames >= 2 && seen_frames < 64, "a backtrace on the fiber found %u frames",
                  (unsigned)seen_frames);
        WT_ASSERT(seen_except == UINTPTR_MAX, "fiber's ExceptionList %#llx, not the chain's end",
                  (unsigned long long)seen_except);
        WT_ASSERT(tib_word(0x08) == base && tib_word(0x10) == limit,
                  "the thread's own stack bounds were not restored");
        WT_ASSERT(tib_word(0x00) == except, "the thread's ExceptionList was not restored");
    }
    tctx_free(&other);
}
#endif
