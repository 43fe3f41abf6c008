/* This file is private to weft: the context switch for x86-64 Windows
 * (the Microsoft x64 ABI).
 *
 * void weft__ctx_switch(weft__ctx *from, const weft__ctx *to)
 *   rcx = from, rdx = to
 *
 * Saves: rbx, rbp, rdi, rsi, r12-r15, xmm6-xmm15 (the callee-saved
 * registers), MXCSR and the x87 control word (callee-saved control
 * bits), the thread information block's StackLimit, StackBase and
 * DeallocationStack (the stack a probe or the unwinder believes it runs
 * on: it must be the one we switch to) and ExceptionList (Wine's chain
 * of its own handlers, which frame.h says why), rsp in from->sp.
 * Not saved: caller-saved GPRs and xmm0-5 (the caller expects them
 * clobbered), the x87 stack (empty at a call), the direction flag (clear
 * at every call by the ABI).
 *
 * The frame layout is frame.h's; context.c builds the first frame of a
 * fresh stack so that the final jump lands in weft__ctx_trampoline with
 * rsp % 16 == 0, past its own push of rbp, with a zero return address
 * above (as if it had been called from nowhere): the unwinder stops
 * there.
 */
#include "frame.h"

#define TIB_EXCEPT_LIST   0x00
#define TIB_STACK_BASE    0x08
#define TIB_STACK_LIMIT   0x10
#define TIB_DEALLOC_STACK 0x1478

    .text
    .p2align 4
    .globl  weft__ctx_switch
    .def    weft__ctx_switch; .scl 2; .type 32; .endef
weft__ctx_switch:
    subq    $WEFT_CTX_FRAME, %rsp          /* the return address is at WEFT_CTX_RET */
    movq    %r15, WEFT_CTX_R15(%rsp)
    movq    %r14, WEFT_CTX_R14(%rsp)
    movq    %r13, WEFT_CTX_R13(%rsp)
    movq    %r12, WEFT_CTX_R12(%rsp)
    movq    %rdi, WEFT_CTX_RDI(%rsp)
    movq    %rsi, WEFT_CTX_RSI(%rsp)
    movq    %rbx, WEFT_CTX_RBX(%rsp)
    movq    %rbp, WEFT_CTX_RBP(%rsp)
    movaps  %xmm6,  WEFT_CTX_XMM6 + 0x00(%rsp)
    movaps  %xmm7,  WEFT_CTX_XMM6 + 0x10(%rsp)
    movaps  %xmm8,  WEFT_CTX_XMM6 + 0x20(%rsp)
    movaps  %xmm9,  WEFT_CTX_XMM6 + 0x30(%rsp)
    movaps  %xmm10, WEFT_CTX_XMM6 + 0x40(%rsp)
    movaps  %xmm11, WEFT_CTX_XMM6 + 0x50(%rsp)
    movaps  %xmm12, WEFT_CTX_XMM6 + 0x60(%rsp)
    movaps  %xmm13, WEFT_CTX_XMM6 + 0x70(%rsp)
    movaps  %xmm14, WEFT_CTX_XMM6 + 0x80(%rsp)
    movaps  %xmm15, WEFT_CTX_XMM6 + 0x90(%rsp)
    stmxcsr WEFT_CTX_MXCSR(%rsp)
    fnstcw  WEFT_CTX_X87CW(%rsp)
    movq    %gs:TIB_STACK_LIMIT, %rax
    movq    %rax, WEFT_CTX_STACK_LIMIT(%rsp)
    movq    %gs:TIB_STACK_BASE, %rax
    movq    %rax, WEFT_CTX_STACK_BASE(%rsp)
    movq    %gs:TIB_DEALLOC_STACK, %rax
    movq    %rax, WEFT_CTX_STACK_DEALLOC(%rsp)
    movq    %gs:TIB_EXCEPT_LIST, %rax
    movq    %rax, WEFT_CTX_EXCEPT_LIST(%rsp)
    movq    %rsp, (%rcx)                   /* from->sp: this context is now switched out */

    movq    (%rdx), %rsp                   /* to->sp: from here on we are the other context */
    movq    WEFT_CTX_STACK_LIMIT(%rsp), %rax
    movq    %rax, %gs:TIB_STACK_LIMIT
    movq    WEFT_CTX_STACK_BASE(%rsp), %rax
    movq    %rax, %gs:TIB_STACK_BASE
    movq    WEFT_CTX_STACK_DEALLOC(%rsp), %rax
    movq    %rax, %gs:TIB_DEALLOC_STACK
    movq    WEFT_CTX_EXCEPT_LIST(%rsp), %rax
    movq    %rax, %gs:TIB_EXCEPT_LIST
    ldmxcsr WEFT_CTX_MXCSR(%rsp)
    fldcw   WEFT_CTX_X87CW(%rsp)
    movaps  WEFT_CTX_XMM6 + 0x00(%rsp), %xmm6
    movaps  WEFT_CTX_XMM6 + 0x10(%rsp), %xmm7
    movaps  WEFT_CTX_XMM6 + 0x20(%rsp), %xmm8
    movaps  WEFT_CTX_XMM6 + 0x30(%rsp), %xmm9
    movaps  WEFT_CTX_XMM6 + 0x40(%rsp), %xmm10
    movaps  WEFT_CTX_XMM6 + 0x50(%rsp), %xmm11
    movaps  WEFT_CTX_XMM6 + 0x60(%rsp), %xmm12
    movaps  WEFT_CTX_XMM6 + 0x70(%rsp), %xmm13
    movaps  WEFT_CTX_XMM6 + 0x80(%rsp), %xmm14
    movaps  WEFT_CTX_XMM6 + 0x90(%rsp), %xmm15
    movq    WEFT_CTX_R15(%rsp), %r15
    movq    WEFT_CTX_R14(%rsp), %r14
    movq    WEFT_CTX_R13(%rsp), %r13
    movq    WEFT_CTX_R12(%rsp), %r12
    movq    WEFT_CTX_RDI(%rsp), %rdi
    movq    WEFT_CTX_RSI(%rsp), %rsi
    movq    WEFT_CTX_RBX(%rsp), %rbx
    movq    WEFT_CTX_RBP(%rsp), %rbp
    addq    $WEFT_CTX_FRAME, %rsp
    /* Not `ret`, for the System V switch's reason: the return-stack
     * predictor always mispredicts a return into another context. r8 is
     * caller-saved. */
    popq    %r8
    jmpq    *%r8

/* A fresh context's first switch lands at weft__ctx_trampoline: r12 =
 * entry, r13 = argument, rsp % 16 == 0. Its unwind information describes
 * a function called with a return address of zero (at rsp + 8) that
 * pushed rbp (a zero at rsp) and then allocated the entry's 32 bytes of
 * shadow space: context.c's frame is laid out so, and the push itself is
 * never run. An unwinder walking up from the entry thus finds the zero
 * return address and stops. */
    .p2align 4
    .def    weft__ctx_trampoline_frame; .scl 3; .type 32; .endef
    .seh_proc weft__ctx_trampoline_frame
weft__ctx_trampoline_frame:
    pushq   %rbp
    .seh_pushreg %rbp
    .globl  weft__ctx_trampoline
weft__ctx_trampoline:
    subq    $32, %rsp
    .seh_stackalloc 32
    .seh_endprologue
    movq    %r13, %rcx
    callq   *%r12
    /* The entry function returned: there is nowhere to go back to. */
    callq   weft__ctx_entry_returned
    ud2
    .seh_endproc
