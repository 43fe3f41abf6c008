/* This file is private to weft: the saved-register frame of a switched-out
 * context, shared by the .S files and context.c.
 *
 * A switched-out context is one pointer, its stack pointer; the callee-saved
 * registers sit in a frame at that address. The offsets below are the only
 * layout the assembly knows; context.c checks them against a C struct with
 * _Static_assert and builds the first frame of a fresh stack from it.
 * Included from assembly: preprocessor definitions only.
 */
#ifndef WEFT_ARCH_FRAME_H
#define WEFT_ARCH_FRAME_H

#if defined(__x86_64__) && !defined(_WIN32)

/* x86-64 System V. MXCSR and the x87 control word are callee-saved
 * (control bits) per the ABI, so they travel with the context. */
#define WEFT_CTX_MXCSR     0   /* 4 bytes */
#define WEFT_CTX_X87CW     4   /* 2 bytes, then 2 bytes of padding */
#define WEFT_CTX_R15       8
#define WEFT_CTX_R14      16
#define WEFT_CTX_R13      24   /* fresh context: the entry's argument */
#define WEFT_CTX_R12      32   /* fresh context: the entry function */
#define WEFT_CTX_RBX      40
#define WEFT_CTX_RBP      48
#define WEFT_CTX_RET      56   /* return address, popped by ret */
#define WEFT_CTX_FRAME    56   /* bytes below the return address */
#define WEFT_CTX_SIZE     64   /* the whole frame, return address included */

#elif defined(__x86_64__) && defined(_WIN32)

/* x86-64 Windows (the Microsoft x64 ABI). rdi, rsi and xmm6-xmm15 are
 * callee-saved besides System V's set, and so are MXCSR's and the x87
 * control words. The thread information block's stack bounds (StackBase
 * at gs:0x08, StackLimit at gs:0x10, DeallocationStack at gs:0x1478)
 * describe the running stack to stack probes (__chkstk) and the
 * unwinder, so they travel with the context too, and so does its
 * ExceptionList (gs:0x00), as SwitchToFiber moves it: Windows x64 keeps
 * no frames there, but Wine's dispatcher does (its own handlers, on the
 * thread's first stack), and takes any of them below the faulting rsp
 * for a frame of the running stack. A fiber's stack lies elsewhere, so
 * with the thread's list in place an exception thrown in a task reached
 * the thread's outermost Wine handler first and was never caught. The xmm slots come
 * first: the frame starts 16-aligned (its size is 8 mod 16 and the
 * switch is entered with rsp % 16 == 8), so movaps may store them. */
#define WEFT_CTX_XMM6      0   /* xmm6..xmm15: 16 bytes each */
#define WEFT_CTX_MXCSR   160   /* 4 bytes */
#define WEFT_CTX_X87CW   164   /* 2 bytes, then 2 bytes of padding */
#define WEFT_CTX_R15     168
#define WEFT_CTX_R14     176
#define WEFT_CTX_R13     184   /* fresh context: the entry's argument */
#define WEFT_CTX_R12     192   /* fresh context: the entry function */
#define WEFT_CTX_RDI     200
#define WEFT_CTX_RSI     208
#define WEFT_CTX_RBX     216
#define WEFT_CTX_RBP     224
#define WEFT_CTX_STACK_LIMIT   232   /* TIB StackLimit: the lowest usable byte */
#define WEFT_CTX_STACK_BASE    240   /* TIB StackBase: one past the highest */
#define WEFT_CTX_STACK_DEALLOC 248   /* TIB DeallocationStack: the region's base */
#define WEFT_CTX_EXCEPT_LIST   256   /* TIB ExceptionList: Wine's handler chain */
#define WEFT_CTX_RET     264   /* return address, popped by the switch */
#define WEFT_CTX_FRAME   264   /* bytes below the return address */
#define WEFT_CTX_SIZE    272   /* the whole frame, return address included */

#elif defined(__aarch64__) && !defined(_WIN32)

/* AArch64 AAPCS64: x19-x28, fp (x29), lr (x30), the low halves of
 * v8-v15 (d8-d15) and FPCR. sp itself is the saved context. Registers go
 * in pairs (one stp/ldp each), so every odd-numbered slot is its pair's
 * first slot + 8; the assembly names only the first of each pair. */
#define WEFT_CTX_X19       0   /* fresh context: the entry function */
#define WEFT_CTX_X20       8   /* fresh context: the entry's argument */
#define WEFT_CTX_X21      16
#define WEFT_CTX_X22      24
#define WEFT_CTX_X23      32
#define WEFT_CTX_X24      40
#define WEFT_CTX_X25      48
#define WEFT_CTX_X26      56
#define WEFT_CTX_X27      64
#define WEFT_CTX_X28      72
#define WEFT_CTX_X29      80   /* fp */
#define WEFT_CTX_X30      88   /* lr: where the switch returns to */
#define WEFT_CTX_D8       96
#define WEFT_CTX_D9      104
#define WEFT_CTX_D10     112
#define WEFT_CTX_D11     120
#define WEFT_CTX_D12     128
#define WEFT_CTX_D13     136
#define WEFT_CTX_D14     144
#define WEFT_CTX_D15     152
#define WEFT_CTX_FPCR    160   /* 8 bytes, then 8 bytes of padding */
#define WEFT_CTX_SIZE    176   /* a multiple of 16: sp stays aligned */

#else
#error "weft: unsupported target: weft's context switch exists for x86-64 (System V and Windows) and AArch64 (AAPCS64) only"
#endif

#endif /* WEFT_ARCH_FRAME_H */
