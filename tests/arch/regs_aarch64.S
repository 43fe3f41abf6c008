/* Test helpers for the AArch64 switch (tests/arch/test_switch.c).
 *
 * void weft_test_switch_magic(weft__ctx *from, const weft__ctx *to, uint64_t out[19])
 *   Loads known values (the table `magic`, mirrored by test_switch.c's
 *   expected()) into x19-x29 and d8-d15, switches, and on return stores
 *   what those registers hold into out[0..18] (x19..x29, then d8..d15).
 * void weft_test_scramble_switch(weft__ctx *from, const weft__ctx *to)
 *   Fills the same registers with garbage, then switches.
 * void weft_test_entry_sp(void *arg)
 *   A context entry: stores its sp at entry in *(uint64_t *)arg, then
 *   tail-branches to weft_test_entry_sp_c(arg) with the same stack.
 *
 * Both switching helpers are ordinary AAPCS64 functions: they keep the
 * caller's x19-x30 and d8-d15 in a 176-byte frame (sp stays 16-aligned)
 * and give them back. x29 gets a test value too, so the frame-pointer
 * chain is broken while the switch runs: nothing unwinds through it here.
 */
    .section .rodata
    .p2align 3
magic:                                  /* x19..x28: 0x1111111111111111 * (1..10) */
    .quad   0x1111111111111111, 0x2222222222222222, 0x3333333333333333, 0x4444444444444444
    .quad   0x5555555555555555, 0x6666666666666666, 0x7777777777777777, 0x8888888888888888
    .quad   0x9999999999999999, 0xaaaaaaaaaaaaaaaa
    .quad   0xbbbbbbbbbbbbbbbb          /* x29 */
    .quad   0xd0d0d0d0d0d0d008, 0xd0d0d0d0d0d0d009, 0xd0d0d0d0d0d0d00a, 0xd0d0d0d0d0d0d00b
    .quad   0xd0d0d0d0d0d0d00c, 0xd0d0d0d0d0d0d00d, 0xd0d0d0d0d0d0d00e, 0xd0d0d0d0d0d0d00f
garbage:                                /* the same registers, in the same order */
    .quad   0xdeadbeefdeadbe19, 0xdeadbeefdeadbe20, 0xdeadbeefdeadbe21, 0xdeadbeefdeadbe22
    .quad   0xdeadbeefdeadbe23, 0xdeadbeefdeadbe24, 0xdeadbeefdeadbe25, 0xdeadbeefdeadbe26
    .quad   0xdeadbeefdeadbe27, 0xdeadbeefdeadbe28, 0xdeadbeefdeadbe29
    .quad   0xdeadbeefdeadbed8, 0xdeadbeefdeadbed9, 0xdeadbeefdeadbeda, 0xdeadbeefdeadbedb
    .quad   0xdeadbeefdeadbedc, 0xdeadbeefdeadbedd, 0xdeadbeefdeadbede, 0xdeadbeefdeadbedf

/* Saves the caller's callee-saved registers; 160(sp) stays free for one
 * value the helper keeps across its call. */
    .macro  prologue
    stp     x29, x30, [sp, #-176]!
    mov     x29, sp
    stp     x19, x20, [sp, #16]
    stp     x21, x22, [sp, #32]
    stp     x23, x24, [sp, #48]
    stp     x25, x26, [sp, #64]
    stp     x27, x28, [sp, #80]
    stp     d8,  d9,  [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
    .endm

    .macro  epilogue
    ldp     d14, d15, [sp, #144]
    ldp     d12, d13, [sp, #128]
    ldp     d10, d11, [sp, #112]
    ldp     d8,  d9,  [sp, #96]
    ldp     x27, x28, [sp, #80]
    ldp     x25, x26, [sp, #64]
    ldp     x23, x24, [sp, #48]
    ldp     x21, x22, [sp, #32]
    ldp     x19, x20, [sp, #16]
    ldp     x29, x30, [sp], #176
    ret
    .endm

/* x19..x29, d8..d15 <- the 19 values at \table. */
    .macro  load table
    adrp    x9, \table
    add     x9, x9, :lo12:\table
    ldp     x19, x20, [x9, #0]
    ldp     x21, x22, [x9, #16]
    ldp     x23, x24, [x9, #32]
    ldp     x25, x26, [x9, #48]
    ldp     x27, x28, [x9, #64]
    ldr     x29, [x9, #80]
    ldp     d8,  d9,  [x9, #88]
    ldp     d10, d11, [x9, #104]
    ldp     d12, d13, [x9, #120]
    ldp     d14, d15, [x9, #136]
    .endm

    .text
    .p2align 2
    .globl  weft_test_switch_magic
    .type   weft_test_switch_magic, %function
weft_test_switch_magic:
    prologue
    str     x2, [sp, #160]              /* out, kept across the switch */
    load    magic
    bl      weft__ctx_switch
    ldr     x2, [sp, #160]
    stp     x19, x20, [x2, #0]
    stp     x21, x22, [x2, #16]
    stp     x23, x24, [x2, #32]
    stp     x25, x26, [x2, #48]
    stp     x27, x28, [x2, #64]
    str     x29, [x2, #80]
    stp     d8,  d9,  [x2, #88]
    stp     d10, d11, [x2, #104]
    stp     d12, d13, [x2, #120]
    stp     d14, d15, [x2, #136]
    epilogue
    .size   weft_test_switch_magic, .-weft_test_switch_magic

    .globl  weft_test_scramble_switch
    .type   weft_test_scramble_switch, %function
weft_test_scramble_switch:
    prologue
    load    garbage
    bl      weft__ctx_switch
    epilogue
    .size   weft_test_scramble_switch, .-weft_test_scramble_switch

    .globl  weft_test_entry_sp
    .type   weft_test_entry_sp, %function
weft_test_entry_sp:
    mov     x9, sp                      /* sp cannot be stored directly */
    str     x9, [x0]
    b       weft_test_entry_sp_c
    .size   weft_test_entry_sp, .-weft_test_entry_sp

    .section .note.GNU-stack,"",@progbits
