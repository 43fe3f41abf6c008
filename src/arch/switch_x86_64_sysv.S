/* This file is private to weft: the context switch for x86-64 System V.
 *
 * void weft__ctx_switch(weft__ctx *from, const weft__ctx *to)
 *   rdi = from, rsi = to
 *
 * Saves: rbx, rbp, r12-r15 (the callee-saved GPRs), MXCSR and the x87
 * control word (their control bits are callee-saved), rsp in from->sp.
 * Not saved: caller-saved GPRs and xmm registers (the caller expects them
 * clobbered by a call), the x87 stack (empty at a call), MXCSR status flags
 * (they travel with the control bits; harmless), the direction flag (clear
 * at every call by the ABI).
 *
 * The frame layout is frame.h's; context.c builds the first frame of a
 * fresh stack so that the final jump lands in weft__ctx_trampoline with
 * rsp % 16 == 0, and the trampoline's call gives the entry the ABI's
 * rsp % 16 == 8.
 */
#include "frame.h"

    .text
    .p2align 4
    .globl  weft__ctx_switch
    .hidden weft__ctx_switch
    .type   weft__ctx_switch, @function
weft__ctx_switch:
    .cfi_startproc
    subq    $WEFT_CTX_FRAME, %rsp          /* the return address is at WEFT_CTX_RET */
    .cfi_adjust_cfa_offset WEFT_CTX_FRAME
    movq    %r15, WEFT_CTX_R15(%rsp)
    movq    %r14, WEFT_CTX_R14(%rsp)
    movq    %r13, WEFT_CTX_R13(%rsp)
    movq    %r12, WEFT_CTX_R12(%rsp)
    movq    %rbx, WEFT_CTX_RBX(%rsp)
    movq    %rbp, WEFT_CTX_RBP(%rsp)
    stmxcsr WEFT_CTX_MXCSR(%rsp)
    fnstcw  WEFT_CTX_X87CW(%rsp)
    movq    %rsp, (%rdi)                   /* from->sp: this context is now switched out */

    movq    (%rsi), %rsp                   /* to->sp: from here on we are the other context */
    ldmxcsr WEFT_CTX_MXCSR(%rsp)
    fldcw   WEFT_CTX_X87CW(%rsp)
    movq    WEFT_CTX_R15(%rsp), %r15
    movq    WEFT_CTX_R14(%rsp), %r14
    movq    WEFT_CTX_R13(%rsp), %r13
    movq    WEFT_CTX_R12(%rsp), %r12
    movq    WEFT_CTX_RBX(%rsp), %rbx
    movq    WEFT_CTX_RBP(%rsp), %rbp
    addq    $WEFT_CTX_FRAME, %rsp
    .cfi_adjust_cfa_offset -WEFT_CTX_FRAME
    /* Not `ret`: the return-stack predictor expects a return to our own
     * caller, and a switch always returns into another context, so `ret`
     * mispredicts every time. An indirect jump is predicted from its own
     * history (measured: 15 -> 6 ns one way). rcx is caller-saved. */
    popq    %rcx
    .cfi_adjust_cfa_offset -8
    jmpq    *%rcx
    .cfi_endproc
    .size   weft__ctx_switch, .-weft__ctx_switch

/* A fresh context's first switch lands here: r12 = entry, r13 = argument.
 * rip is marked undefined so unwinders and debuggers stop here instead of
 * walking into whatever lies above the stack. */
    .p2align 4
    .globl  weft__ctx_trampoline
    .hidden weft__ctx_trampoline
    .type   weft__ctx_trampoline, @function
weft__ctx_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq    %r13, %rdi
    callq   *%r12
    /* The entry function returned: there is nowhere to go back to. */
    callq   weft__ctx_entry_returned@PLT
    ud2
    .cfi_endproc
    .size   weft__ctx_trampoline, .-weft__ctx_trampoline

    .section .note.GNU-stack,"",@progbits
