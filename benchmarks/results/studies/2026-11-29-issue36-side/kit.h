/* kit.h: what every program of this study shares (C and C++). Each
 * program runs one cell: `prog T N ROUNDS`, one untimed round, then
 * ROUNDS timed rounds of N units; it prints the median ns per unit of its
 * rounds last on its line (the driver takes the median of the process
 * medians). A program whose result is wrong prints WRONG and exits 1. */
#ifndef KIT_H
#define KIT_H
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double kit_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline int kit_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ns[0..n): sorted in place; the median */
static inline double kit_median(double *ns, int n)
{
    qsort(ns, (size_t)n, sizeof *ns, kit_cmp);
    return n % 2 ? ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2;
}

static inline void kit_wrong(const char *what)
{
    printf("WRONG %s\n", what);
    exit(1);
}

/* kit_tick: a task's proof that it ran, counted in a slot of the
 * running thread's own (no line shared between threads); kit_ticks: the
 * sum, read after the wait that ends the round. */
#ifdef __cplusplus
#include <atomic>
#define KIT_TLS thread_local
static std::atomic<int> kit_nslots;
#define KIT_SLOT_NEXT() kit_nslots.fetch_add(1)
#else
#include <stdatomic.h>
#define KIT_TLS _Thread_local
static atomic_int kit_nslots;
#define KIT_SLOT_NEXT() atomic_fetch_add(&kit_nslots, 1)
#endif
static long kit_slots[64 * 16];
static KIT_TLS long *kit_slot;
static inline void kit_tick(void)
{
    if (!kit_slot)
        kit_slot = &kit_slots[16 * KIT_SLOT_NEXT()];
    (*kit_slot)++;
}
static inline long kit_ticks(void)
{
    long s = 0;
    for (int i = 0; i < 64; i++)
        s += kit_slots[16 * i];
    return s;
}

#define KIT_ARGS(argc, argv, T, N, R)                                   \
    int T = (argc) > 1 ? atoi((argv)[1]) : 1;                           \
    long N = (argc) > 2 ? atol((argv)[2]) : 10000;                      \
    int R = (argc) > 3 ? atoi((argv)[3]) : 5;                           \
    if (R < 1 || R > 64) R = 5;

#endif
