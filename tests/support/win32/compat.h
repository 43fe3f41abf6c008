/* What the tests take from POSIX and glibc, on Windows: force-included
 * (-include) into every test of the windows preset, so that a test
 * source needs no #ifdef for a helper. Small stand-ins, for tests only,
 * in compat.c (part of the harness library there); this header includes
 * no Windows header, whose macros (small, WAIT_FAILED) would reach the
 * tests.
 *
 *   open_memstream   a delete-on-close temporary file; fflush and fclose
 *                    (macros here) copy its contents to *buf and *len, as
 *                    glibc's stream does at those points
 *   qsort_r          glibc's argument order, over qsort with the context
 *                    in a thread-local
 *   memmem           a plain search
 *   posix_memalign, aligned_alloc
 *                    _aligned_malloc; free (a macro here) hands such a
 *                    block to _aligned_free, any other to free
 *   cpu_set_t, sched_getaffinity, CPU_COUNT
 *                    the count of CPUs in the process's affinity mask
 *                    (all the tests ask of it)
 *   sysconf          _SC_PAGESIZE and _SC_NPROCESSORS_ONLN
 *   SIGQUIT          SIGBREAK (Ctrl+Break), where a test installs a
 *                    progress report
 *   pipe             _pipe (binary, 64 KiB)
 */
#ifndef WT_WIN32_COMPAT_H
#define WT_WIN32_COMPAT_H
#ifdef _WIN32

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

FILE *wt_open_memstream(char **buf, size_t *len);
int wt_fflush(FILE *f);
int wt_fclose(FILE *f);
int wt_posix_memalign(void **out, size_t align, size_t size);
void *wt_aligned_alloc(size_t align, size_t size);
void wt_free(void *p);
void wt_qsort_r(void *base, size_t n, size_t size,
                int (*cmp)(const void *, const void *, void *), void *ctx);
void *wt_memmem(const void *hay, size_t n, const void *needle, size_t m);
long wt_sysconf(int name);
int wt_pipe(int fd[2]);

typedef struct {
    unsigned count;
} cpu_set_t;
int wt_sched_getaffinity(int pid, size_t size, cpu_set_t *set);
#define CPU_COUNT(set) ((int)(set)->count)

#define _SC_PAGESIZE 30
#define _SC_NPROCESSORS_ONLN 84

#ifndef SIGQUIT
# define SIGQUIT SIGBREAK
#endif

#define open_memstream wt_open_memstream
#define posix_memalign wt_posix_memalign
#define aligned_alloc wt_aligned_alloc
#define qsort_r wt_qsort_r
#define memmem wt_memmem
#define sysconf wt_sysconf
#define pipe wt_pipe
#define sched_getaffinity wt_sched_getaffinity
#define fflush(f) wt_fflush(f)
#define fclose(f) wt_fclose(f)
#define free(p) wt_free(p)

#endif /* _WIN32 */
#endif /* WT_WIN32_COMPAT_H */
