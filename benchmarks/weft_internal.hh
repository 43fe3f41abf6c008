// This file is private to weft's benchmarks: weft's private C headers,
// made includable from C++.
//
// The layers' headers are C11: their functions need C linkage, and they
// spell "does not return" as _Noreturn, which clang++ accepts but g++
// rejects. Map it to the attribute both compilers know, for these
// headers only.
#ifndef WEFT_BENCH_INTERNAL_HH
#define WEFT_BENCH_INTERNAL_HH

#include "weft.h"   // C++-safe on its own (it has extern "C" guards)

#if defined(__cplusplus) && !defined(_Noreturn)
# define _Noreturn __attribute__((noreturn))
# define WEFT_BENCH_DEFINED_NORETURN 1
#endif

extern "C" {
#include "arch.h"
#include "fiber.h"
}

#ifdef WEFT_BENCH_DEFINED_NORETURN
# undef _Noreturn
# undef WEFT_BENCH_DEFINED_NORETURN
#endif

#endif // WEFT_BENCH_INTERNAL_HH
