/* This file is private to weft: the hot-path calls of the OS seam on
 * Windows (os.h documents them), static inline as on Linux so that a
 * park, a wake or a clock read costs the system call alone. Included by
 * os.h only.
 *
 * Synchronization
 *   weft__os_qpc_hz  the performance counter's frequency, fixed at boot:
 *                    cached by the first reader; racing first readers
 *                    store the same value (relaxed).
 */
#ifndef WEFT_OS_WINDOWS_H
#define WEFT_OS_WINDOWS_H

#ifndef WIN32_LEAN_AND_MEAN
# define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
# define NOMINMAX
#endif
#include <windows.h>
#include <malloc.h>

extern atomic_llong weft__os_qpc_hz;

static inline uint64_t weft__os_now_ns(void)
{
    LARGE_INTEGER c, f;
    QueryPerformanceCounter(&c);
    long long hz = atomic_load_explicit(&weft__os_qpc_hz, memory_order_relaxed);
    if (!hz) {
        QueryPerformanceFrequency(&f);
        hz = f.QuadPart;
        atomic_store_explicit(&weft__os_qpc_hz, hz, memory_order_relaxed);
    }
    /* Split so that the product does not overflow: ticks * 1e9 would
     * after about 15 minutes at 10 MHz. */
    uint64_t t = (uint64_t)c.QuadPart, h = (uint64_t)hz;
    return t / h * 1000000000u + t % h * 1000000000u / h;
}

static inline void weft__os_yield(void)
{
    SwitchToThread();
}

/* Milliseconds for a wait of ns, rounded up so that a wait never ends
 * before its time; 0 ns: no limit. */
static inline DWORD weft__os_wait_ms(uint64_t ns)
{
    if (!ns)
        return INFINITE;
    uint64_t ms = (ns + 999999u) / 1000000u;
    return ms >= INFINITE ? INFINITE - 1 : (DWORD)ms;
}

static inline void weft__os_word_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns)
{
    /* Wakes, timeouts and spurious returns all return: callers re-check. */
    WaitOnAddress((volatile void *)word, &val, sizeof val, weft__os_wait_ms(timeout_ns));
}

static inline void weft__os_word_wake(atomic_uint *word, int n)
{
    /* Windows wakes one or all: more than one is all, and the extra
     * sleepers re-check their word and sleep again. */
    if (n == 1)
        WakeByAddressSingle((void *)word);
    else
        WakeByAddressAll((void *)word);
}

static inline int weft__os_barrier(void)
{
    FlushProcessWriteBuffers();   /* an IPI to every CPU running the process, as membarrier */
    return 0;
}

static inline void *weft__os_alloc_aligned(size_t align, size_t size)
{
    return _aligned_malloc(size, align);
}

static inline void weft__os_free_aligned(void *p)
{
    _aligned_free(p);
}

static inline int weft__os_atfork(void (*prepare)(void), void (*parent)(void),
                                  void (*child)(void))
{
    (void)prepare;   /* no fork on Windows: nothing to guard */
    (void)parent;
    (void)child;
    return 0;
}

/* Closes the handle of process pid that weft__os_proc_spawn kept, if
 * it kept one: the process has ended and a wait has seen it
 * (windows_proc.c). Callable from: any thread. */
void weft__win_proc_drop(int pid);

#endif /* WEFT_OS_WINDOWS_H */
