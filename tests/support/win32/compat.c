/* The tests' POSIX stand-ins on Windows: compat.h says what each is.
 * Built into the harness library of the windows preset only.
 *
 * Synchronization: the stream table and the aligned-block table are
 * under a mutex each (tests use them from several threads); qsort_r's
 * comparator and context are per thread.
 */
#include <fcntl.h>
#include <io.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef WIN32_LEAN_AND_MEAN
# define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include "compat.h"
#include "sys/resource.h"

/* The C runtime's own, under the macros. */
#undef fflush
#undef fclose
#undef free

/* ---- open_memstream --------------------------------------------------- */

#define MEMSTREAMS 64

typedef struct {
    FILE *f;
    char **buf;
    size_t *len;
} memstream;

static memstream streams[MEMSTREAMS];
static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;

FILE *wt_open_memstream(char **buf, size_t *len)
{
    char dir[MAX_PATH], path[MAX_PATH];
    if (!GetTempPathA(sizeof dir, dir) || !GetTempFileNameA(dir, "wt", 0, path))
        return NULL;
    FILE *f = fopen(path, "w+bD");   /* D: deleted when closed */
    if (!f)
        return NULL;
    *buf = calloc(1, 1);
    *len = 0;
    pthread_mutex_lock(&streams_lock);
    for (int i = 0; i < MEMSTREAMS; i++)
        if (!streams[i].f) {
            streams[i] = (memstream){ f, buf, len };
            pthread_mutex_unlock(&streams_lock);
            return f;
        }
    pthread_mutex_unlock(&streams_lock);
    fclose(f);
    return NULL;
}

/* Finds f's slot (1) or not (0); with forget, frees the slot. */
static int find(FILE *f, memstream *out, int forget)
{
    int found = 0;
    pthread_mutex_lock(&streams_lock);
    for (int i = 0; i < MEMSTREAMS; i++)
        if (f && streams[i].f == f) {
            *out = streams[i];
            if (forget)
                streams[i].f = NULL;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&streams_lock);
    return found;
}

/* Copies what was written to the stream into *buf and *len. */
static int sync_out(memstream *m)
{
    long pos = ftell(m->f);
    if (pos < 0 || fseek(m->f, 0, SEEK_SET) != 0)
        return EOF;
    char *b = malloc((size_t)pos + 1);
    if (!b)
        return EOF;
    size_t n = fread(b, 1, (size_t)pos, m->f);
    b[n] = '\0';
    fseek(m->f, pos, SEEK_SET);
    free(*m->buf);
    *m->buf = b;
    *m->len = n;
    return 0;
}

int wt_fflush(FILE *f)
{
    int rc = fflush(f);
    memstream m;
    if (rc == 0 && find(f, &m, 0))
        rc = sync_out(&m);
    return rc;
}

int wt_fclose(FILE *f)
{
    memstream m;
    int rc = 0;
    if (find(f, &m, 1))
        rc = fflush(f) == 0 ? sync_out(&m) : EOF;
    return fclose(f) == 0 ? rc : EOF;
}

/* ---- aligned blocks ------------------------------------------------------ */

/* Tests hold millions of blocks at once (test_promise_scale): a table
 * of 2^20 chains, made at the first aligned allocation. */
#define BUCKETS (1u << 20)

typedef struct node {
    struct node *next;
    void *p;
} node;

static node **blocks;
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned bucket(void *p)
{
    uint64_t h = ((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull;
    return (unsigned)(h >> 44);   /* the top 20 bits */
}

int wt_posix_memalign(void **out, size_t align, size_t size)
{
    node *n = malloc(sizeof *n);
    void *p = n ? _aligned_malloc(size ? size : 1, align) : NULL;
    if (!p) {
        free(n);
        return 12;   /* ENOMEM */
    }
    n->p = p;
    unsigned b = bucket(p);
    pthread_mutex_lock(&blocks_lock);
    if (!blocks && !(blocks = calloc(BUCKETS, sizeof *blocks))) {
        pthread_mutex_unlock(&blocks_lock);
        free(n);
        _aligned_free(p);
        return 12;   /* ENOMEM */
    }
    n->next = blocks[b];
    blocks[b] = n;
    pthread_mutex_unlock(&blocks_lock);
    *out = p;
    return 0;
}

void *wt_aligned_alloc(size_t align, size_t size)
{
    void *p = NULL;
    return wt_posix_memalign(&p, align, size) == 0 ? p : NULL;
}

void wt_free(void *p)
{
    if (!p)
        return;
    unsigned b = bucket(p);
    node *found = NULL;
    pthread_mutex_lock(&blocks_lock);
    for (node **pp = blocks ? &blocks[b] : NULL; pp && *pp; pp = &(*pp)->next)
        if ((*pp)->p == p) {
            found = *pp;
            *pp = found->next;
            break;
        }
    pthread_mutex_unlock(&blocks_lock);
    if (found) {
        free(found);
        _aligned_free(p);
    } else {
        free(p);
    }
}

/* ---- sorting, searching ------------------------------------------------------ */

static _Thread_local int (*sort_cmp)(const void *, const void *, void *);
static _Thread_local void *sort_ctx;

static int sort_tramp(const void *a, const void *b)
{
    return sort_cmp(a, b, sort_ctx);
}

void wt_qsort_r(void *base, size_t n, size_t size,
                int (*cmp)(const void *, const void *, void *), void *ctx)
{
    sort_cmp = cmp;
    sort_ctx = ctx;
    qsort(base, n, size, sort_tramp);
}

void *wt_memmem(const void *hay, size_t n, const void *needle, size_t m)
{
    if (!m)
        return (void *)hay;
    for (const char *h = hay; n >= m; h++, n--)
        if (*h == *(const char *)needle && !memcmp(h, needle, m))
            return (void *)h;
    return NULL;
}

/* ---- CPUs, pages, pipes, times -------------------------------------------------- */

int wt_sched_getaffinity(int pid, size_t size, cpu_set_t *set)
{
    DWORD_PTR mine, sys;
    if (!GetProcessAffinityMask(GetCurrentProcess(), &mine, &sys))
        return -1;
    set->count = (unsigned)__builtin_popcountll((unsigned long long)mine);
    return 0;
}

long wt_sysconf(int name)
{
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return name == _SC_PAGESIZE ? (long)si.dwPageSize
         : name == _SC_NPROCESSORS_ONLN ? (long)si.dwNumberOfProcessors : -1;
}

int wt_pipe(int fd[2])
{
    return _pipe(fd, 65536, _O_BINARY);
}

static struct timeval timeval_of(FILETIME ft)
{
    unsigned long long t = (unsigned long long)ft.dwHighDateTime << 32 | ft.dwLowDateTime;   /* 100 ns */
    return (struct timeval){ (long)(t / 10000000u), (long)(t % 10000000u / 10u) };
}

int getrusage(int who, struct rusage *ru)
{
    FILETIME created, exited, kernel, user;
    memset(ru, 0, sizeof *ru);
    if (!GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user))
        return -1;
    ru->ru_utime = timeval_of(user);
    ru->ru_stime = timeval_of(kernel);
    return 0;
}
