/* Test helpers for the x86-64 Windows switch (tests/arch/test_switch.c).
 * Microsoft x64 ABI: arguments in rcx, rdx, r8; callee-saved rbx, rbp,
 * rdi, rsi, r12-r15 and xmm6-xmm15, which these helpers save and restore
 * for their own caller.
 *
 * void weft_test_switch_magic(weft__ctx *from, const weft__ctx *to, uint64_t out[18])
 *   Loads known values into rbx, rbp, rdi, rsi, r12-r15 and the low
 *   halves of xmm6-xmm15, switches, and on return stores what those
 *   registers hold into out[0..17] in that order.
 * void weft_test_scramble_switch(weft__ctx *from, const weft__ctx *to)
 *   Fills every callee-saved register with garbage, then switches.
 * void weft_test_entry_sp(void *arg)
 *   A context entry: stores its rsp at entry in *(uint64_t *)arg, then
 *   tail-jumps to weft_test_entry_sp_c(arg) with the same stack.
 */

/* 8 pushes leave rsp % 16 == 8; FRAME = 32 shadow + 160 xmm + 8 (out)
 * brings it back to 0 for the call. */
#define FRAME 200
#define XMM   32
#define OUT   192

.macro save_all
    pushq   %rbp
    pushq   %rbx
    pushq   %rdi
    pushq   %rsi
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $FRAME, %rsp
    movups  %xmm6,  XMM + 0x00(%rsp)
    movups  %xmm7,  XMM + 0x10(%rsp)
    movups  %xmm8,  XMM + 0x20(%rsp)
    movups  %xmm9,  XMM + 0x30(%rsp)
    movups  %xmm10, XMM + 0x40(%rsp)
    movups  %xmm11, XMM + 0x50(%rsp)
    movups  %xmm12, XMM + 0x60(%rsp)
    movups  %xmm13, XMM + 0x70(%rsp)
    movups  %xmm14, XMM + 0x80(%rsp)
    movups  %xmm15, XMM + 0x90(%rsp)
.endm

.macro restore_all
    movups  XMM + 0x00(%rsp), %xmm6
    movups  XMM + 0x10(%rsp), %xmm7
    movups  XMM + 0x20(%rsp), %xmm8
    movups  XMM + 0x30(%rsp), %xmm9
    movups  XMM + 0x40(%rsp), %xmm10
    movups  XMM + 0x50(%rsp), %xmm11
    movups  XMM + 0x60(%rsp), %xmm12
    movups  XMM + 0x70(%rsp), %xmm13
    movups  XMM + 0x80(%rsp), %xmm14
    movups  XMM + 0x90(%rsp), %xmm15
    addq    $FRAME, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rsi
    popq    %rdi
    popq    %rbx
    popq    %rbp
.endm

.macro load_xmm reg, val
    movabsq $\val, %rax
    movq    %rax, %\reg
.endm

    .text
    .globl weft_test_switch_magic
weft_test_switch_magic:
    save_all
    movq    %r8, OUT(%rsp)
    movabsq $0x1111111111111111, %rbx
    movabsq $0x2222222222222222, %rbp
    movabsq $0x3333333333333333, %rdi
    movabsq $0x4444444444444444, %rsi
    movabsq $0x5555555555555555, %r12
    movabsq $0x6666666666666666, %r13
    movabsq $0x7777777777777777, %r14
    movabsq $0x8888888888888888, %r15
    load_xmm xmm6,  0xd0d0d0d0d0d0d006
    load_xmm xmm7,  0xd0d0d0d0d0d0d007
    load_xmm xmm8,  0xd0d0d0d0d0d0d008
    load_xmm xmm9,  0xd0d0d0d0d0d0d009
    load_xmm xmm10, 0xd0d0d0d0d0d0d00a
    load_xmm xmm11, 0xd0d0d0d0d0d0d00b
    load_xmm xmm12, 0xd0d0d0d0d0d0d00c
    load_xmm xmm13, 0xd0d0d0d0d0d0d00d
    load_xmm xmm14, 0xd0d0d0d0d0d0d00e
    load_xmm xmm15, 0xd0d0d0d0d0d0d00f
    call    weft__ctx_switch
    movq    OUT(%rsp), %rax
    movq    %rbx, 0(%rax)
    movq    %rbp, 8(%rax)
    movq    %rdi, 16(%rax)
    movq    %rsi, 24(%rax)
    movq    %r12, 32(%rax)
    movq    %r13, 40(%rax)
    movq    %r14, 48(%rax)
    movq    %r15, 56(%rax)
    movq    %xmm6,  64(%rax)
    movq    %xmm7,  72(%rax)
    movq    %xmm8,  80(%rax)
    movq    %xmm9,  88(%rax)
    movq    %xmm10, 96(%rax)
    movq    %xmm11, 104(%rax)
    movq    %xmm12, 112(%rax)
    movq    %xmm13, 120(%rax)
    movq    %xmm14, 128(%rax)
    movq    %xmm15, 136(%rax)
    restore_all
    ret

    .globl weft_test_scramble_switch
weft_test_scramble_switch:
    save_all
    movabsq $0xdeadbeefdeadbee1, %rbx
    movabsq $0xdeadbeefdeadbee2, %rbp
    movabsq $0xdeadbeefdeadbee3, %rdi
    movabsq $0xdeadbeefdeadbee4, %rsi
    movabsq $0xdeadbeefdeadbee5, %r12
    movabsq $0xdeadbeefdeadbee6, %r13
    movabsq $0xdeadbeefdeadbee7, %r14
    movabsq $0xdeadbeefdeadbee8, %r15
    pcmpeqd %xmm6, %xmm6
    pcmpeqd %xmm7, %xmm7
    pcmpeqd %xmm8, %xmm8
    pcmpeqd %xmm9, %xmm9
    pcmpeqd %xmm10, %xmm10
    pcmpeqd %xmm11, %xmm11
    pcmpeqd %xmm12, %xmm12
    pcmpeqd %xmm13, %xmm13
    pcmpeqd %xmm14, %xmm14
    pcmpeqd %xmm15, %xmm15
    call    weft__ctx_switch
    restore_all
    ret

    .globl weft_test_entry_sp
weft_test_entry_sp:
    movq    %rsp, (%rcx)
    jmp     weft_test_entry_sp_c
