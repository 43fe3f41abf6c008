/* This file is private to weft: the hot-path calls of the OS seam on
 * Linux (os.h documents them), static inline so that a park, a wake, a
 * parking worker's barrier or a clock read costs the system call (or
 * vDSO call) alone. Included by
 * os.h only.
 *
 * Synchronization: none of its own; a word's protocol is its caller's.
 */
#ifndef WEFT_OS_LINUX_H
#define WEFT_OS_LINUX_H

#include <errno.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t weft__os_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void weft__os_yield(void)
{
    sched_yield();
}

static inline void weft__os_word_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tp = &ts;
    }
    /* EINTR, EAGAIN and timeouts all return: callers re-check their word. */
    syscall(SYS_futex, (void *)word, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

static inline void weft__os_word_wake(atomic_uint *word, int n)
{
    syscall(SYS_futex, (void *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static inline int weft__os_barrier(void)
{
#if defined(SYS_membarrier)
    return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 ? 0 : errno;
#else
    return ENOSYS;   /* unreachable: weft__os_barrier_setup said false */
#endif
}

static inline void *weft__os_alloc_aligned(size_t align, size_t size)
{
    void *p = NULL;
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

static inline void weft__os_free_aligned(void *p)
{
    free(p);
}

static inline int weft__os_atfork(void (*prepare)(void), void (*parent)(void),
                                  void (*child)(void))
{
    return pthread_atfork(prepare, parent, child);
}

#endif /* WEFT_OS_LINUX_H */
