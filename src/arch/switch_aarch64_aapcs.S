/* This file is private to weft: the context switch for AArch64 (AAPCS64).
 *
 * void weft__ctx_switch(weft__ctx *from, const weft__ctx *to)
 *   x0 = from, x1 = to
 *
 * Saves: x19-x28 (the callee-saved GPRs), x29 (fp), x30 (lr, where the
 * switch returns to), d8-d15 (the low 64 bits of v8-v15, which are all the
 * PCS asks to preserve) and FPCR (rounding mode, flush-to-zero, default
 * NaN: the PCS treats its control bits as callee-saved), sp in from->sp.
 * Not saved: x0-x17 and the flags (caller-saved), x18 (the platform
 * register: a temporary on Linux, and not ours to move elsewhere), v0-v7,
 * v16-v31 and the upper halves of v8-v15 (caller-saved), FPSR (cumulative
 * exception flags; the PCS does not preserve them), SVE/SME state beyond
 * the base registers (caller-saved under the base PCS; never switch in
 * streaming mode or with ZA live), TPIDR_EL0 (it belongs to the thread).
 *
 * The frame layout is frame.h's. sp stays 16-aligned throughout: the
 * frame is WEFT_CTX_SIZE bytes, a multiple of 16. context.c builds the
 * first frame of a fresh stack with x30 = weft__ctx_trampoline, so `ret`
 * lands there with sp at the aligned top, which the entry inherits.
 * Only x9 and x10 (caller-saved) are used as scratch.
 */
#include "frame.h"

/* Branch protection: when the compiler is asked for BTI, indirect callers
 * need a landing pad, and the object must say it has them (below). The
 * trampoline is reached by `ret`, which BTI does not check. */
#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
# define BTI_C       bti c
# define PROP_BTI    1
#else
# define BTI_C
# define PROP_BTI    0
#endif
#if defined(__ARM_FEATURE_PAC_DEFAULT) && __ARM_FEATURE_PAC_DEFAULT
# define PROP_PAC    2      /* nothing here signs lr; the flag only says so */
#else
# define PROP_PAC    0
#endif

    .text
    .p2align 4
    .globl  weft__ctx_switch
    .hidden weft__ctx_switch
    .type   weft__ctx_switch, %function
weft__ctx_switch:
    .cfi_startproc
    BTI_C
    sub     sp, sp, #WEFT_CTX_SIZE
    .cfi_def_cfa_offset WEFT_CTX_SIZE
    stp     x29, x30, [sp, #WEFT_CTX_X29]
    .cfi_rel_offset x29, WEFT_CTX_X29
    .cfi_rel_offset x30, WEFT_CTX_X30
    stp     x19, x20, [sp, #WEFT_CTX_X19]
    stp     x21, x22, [sp, #WEFT_CTX_X21]
    stp     x23, x24, [sp, #WEFT_CTX_X23]
    stp     x25, x26, [sp, #WEFT_CTX_X25]
    stp     x27, x28, [sp, #WEFT_CTX_X27]
    stp     d8,  d9,  [sp, #WEFT_CTX_D8]
    stp     d10, d11, [sp, #WEFT_CTX_D10]
    stp     d12, d13, [sp, #WEFT_CTX_D12]
    stp     d14, d15, [sp, #WEFT_CTX_D14]
    /* Every slot is described, so an unwinder stopped anywhere below sees
     * one consistent context: from's until sp moves, to's after. */
    .cfi_rel_offset x19, WEFT_CTX_X19; .cfi_rel_offset x20, WEFT_CTX_X20
    .cfi_rel_offset x21, WEFT_CTX_X21; .cfi_rel_offset x22, WEFT_CTX_X22
    .cfi_rel_offset x23, WEFT_CTX_X23; .cfi_rel_offset x24, WEFT_CTX_X24
    .cfi_rel_offset x25, WEFT_CTX_X25; .cfi_rel_offset x26, WEFT_CTX_X26
    .cfi_rel_offset x27, WEFT_CTX_X27; .cfi_rel_offset x28, WEFT_CTX_X28
    .cfi_rel_offset d8,  WEFT_CTX_D8;  .cfi_rel_offset d9,  WEFT_CTX_D9
    .cfi_rel_offset d10, WEFT_CTX_D10; .cfi_rel_offset d11, WEFT_CTX_D11
    .cfi_rel_offset d12, WEFT_CTX_D12; .cfi_rel_offset d13, WEFT_CTX_D13
    .cfi_rel_offset d14, WEFT_CTX_D14; .cfi_rel_offset d15, WEFT_CTX_D15
    mrs     x9, fpcr
    str     x9, [sp, #WEFT_CTX_FPCR]
    mov     x10, sp
    str     x10, [x0]                   /* from->sp: this context is now switched out */

    ldr     x10, [x1]                   /* to->sp: from here on we are the other context; */
    mov     sp, x10                     /* its frame has the same layout, so the CFI holds */
    ldr     x10, [sp, #WEFT_CTX_FPCR]
    cmp     x9, x10                     /* x9 is still the live FPCR: writing it can be */
    b.eq    1f                          /* slow (self-synchronizing on some cores), and */
    msr     fpcr, x10                   /* contexts nearly always share one mode */
1:
    ldp     d14, d15, [sp, #WEFT_CTX_D14]
    ldp     d12, d13, [sp, #WEFT_CTX_D12]
    ldp     d10, d11, [sp, #WEFT_CTX_D10]
    ldp     d8,  d9,  [sp, #WEFT_CTX_D8]
    ldp     x27, x28, [sp, #WEFT_CTX_X27]
    ldp     x25, x26, [sp, #WEFT_CTX_X25]
    ldp     x23, x24, [sp, #WEFT_CTX_X23]
    ldp     x21, x22, [sp, #WEFT_CTX_X21]
    ldp     x19, x20, [sp, #WEFT_CTX_X19]
    ldp     x29, x30, [sp, #WEFT_CTX_X29]
    .cfi_restore x19; .cfi_restore x20; .cfi_restore x21; .cfi_restore x22
    .cfi_restore x23; .cfi_restore x24; .cfi_restore x25; .cfi_restore x26
    .cfi_restore x27; .cfi_restore x28; .cfi_restore x29; .cfi_restore x30
    .cfi_restore d8;  .cfi_restore d9;  .cfi_restore d10; .cfi_restore d11
    .cfi_restore d12; .cfi_restore d13; .cfi_restore d14; .cfi_restore d15
    add     sp, sp, #WEFT_CTX_SIZE
    .cfi_def_cfa_offset 0
    ret                                 /* to x30: the other context's caller, or the trampoline */
    .cfi_endproc
    .size   weft__ctx_switch, .-weft__ctx_switch

/* A fresh context's first `ret` lands here: x19 = entry, x20 = argument,
 * x29 = 0 (ends frame-pointer walks), sp = the aligned top of the stack.
 * x30 is marked undefined so unwinders and debuggers stop here instead of
 * walking into whatever lies above the stack. */
    .p2align 4
    .globl  weft__ctx_trampoline
    .hidden weft__ctx_trampoline
    .type   weft__ctx_trampoline, %function
weft__ctx_trampoline:
    .cfi_startproc
    .cfi_undefined x30
    mov     x0, x20
    blr     x19
    /* The entry function returned: there is nowhere to go back to. */
    bl      weft__ctx_entry_returned
    brk     #0
    .cfi_endproc
    .size   weft__ctx_trampoline, .-weft__ctx_trampoline

/* GNU property note (ELF for the Arm 64-bit Architecture): tells the
 * linker this object keeps the BTI/PAC promises the compiler was asked
 * for, so linking it does not turn branch protection off for the program. */
#if PROP_BTI || PROP_PAC
    .pushsection .note.gnu.property, "a"
    .p2align 3
    .word   4                           /* name size: "GNU\0" */
    .word   16                          /* descriptor size */
    .word   5                           /* NT_GNU_PROPERTY_TYPE_0 */
    .asciz  "GNU"
    .word   0xc0000000                  /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
    .word   4                           /* its data size */
    .word   PROP_BTI | PROP_PAC
    .word   0                           /* pad to 8 */
    .popsection
#endif

    .section .note.GNU-stack,"",@progbits
