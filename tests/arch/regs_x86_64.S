/* Test helpers for the x86-64 switch (tests/arch/test_switch.c).
 *
 * void weft_test_switch_magic(weft__ctx *from, const weft__ctx *to, uint64_t out[6])
 *   Loads known values into rbx, rbp, r12-r15, switches, and on return
 *   stores what those registers hold into out[0..5] (rbx, rbp, r12..r15).
 * void weft_test_scramble_switch(weft__ctx *from, const weft__ctx *to)
 *   Fills every callee-saved register with garbage, then switches.
 * void weft_test_entry_sp(void *arg)
 *   A context entry: stores its rsp at entry in *(uint64_t *)arg, then
 *   tail-jumps to weft_test_entry_sp_c(arg) with the same stack.
 */
    .text
    .globl weft_test_switch_magic
    .type  weft_test_switch_magic, @function
weft_test_switch_magic:
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    pushq   %rdx                        /* out; also makes rsp % 16 == 0 for the call */
    movabsq $0x1111111111111111, %rbx
    movabsq $0x2222222222222222, %rbp
    movabsq $0x3333333333333333, %r12
    movabsq $0x4444444444444444, %r13
    movabsq $0x5555555555555555, %r14
    movabsq $0x6666666666666666, %r15
    call    weft__ctx_switch@PLT
    popq    %rdx
    movq    %rbx, 0(%rdx)
    movq    %rbp, 8(%rdx)
    movq    %r12, 16(%rdx)
    movq    %r13, 24(%rdx)
    movq    %r14, 32(%rdx)
    movq    %r15, 40(%rdx)
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .size weft_test_switch_magic, .-weft_test_switch_magic

    .globl weft_test_scramble_switch
    .type  weft_test_scramble_switch, @function
weft_test_scramble_switch:
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $8, %rsp
    movabsq $0xdeadbeefdeadbee1, %rbx
    movabsq $0xdeadbeefdeadbee2, %rbp
    movabsq $0xdeadbeefdeadbee3, %r12
    movabsq $0xdeadbeefdeadbee4, %r13
    movabsq $0xdeadbeefdeadbee5, %r14
    movabsq $0xdeadbeefdeadbee6, %r15
    call    weft__ctx_switch@PLT
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .size weft_test_scramble_switch, .-weft_test_scramble_switch

    .globl weft_test_entry_sp
    .type  weft_test_entry_sp, @function
weft_test_entry_sp:
    movq    %rsp, (%rdi)
    jmp     weft_test_entry_sp_c@PLT
    .size weft_test_entry_sp, .-weft_test_entry_sp

    .section .note.GNU-stack,"",@progbits
