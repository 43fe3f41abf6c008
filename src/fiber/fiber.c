/* This file is private to weft: fiber create/switch/destroy, stack pool,
 * sanitizer and Valgrind annotations, and the stack-overflow report.
 *
 * Synchronization: none across threads. A pool belongs to one thread; a
 * fiber runs on one thread at a time and is handed between threads only
 * through the queues of the layer above, which order the hand-off. The
 * overflow handler reads this thread's current fiber, written only by this
 * thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fiber.h"
#include "os.h"

#ifdef WEFT_ASAN
# include <sanitizer/asan_interface.h>
# include <sanitizer/common_interface_defs.h>
#endif
#ifdef WEFT_HAVE_VALGRIND
# include <valgrind/valgrind.h>
#endif

/* The fiber running on this thread. Written by this thread only. */
static WEFT_TLS weft__fiber *current;
static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* ---- stack-overflow report ------------------------------------------ */

/* Async-signal-safe decimal and hex formatting for the report. */
static char *fmt_u(char *p, uintptr_t v, unsigned base)
{
    char tmp[32];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *fmt_s(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    return p;
}

/* The PROT_NONE guard below every fiber stack, before rounding up to
 * pages. Not one page: a function whose frame is bigger than the guard
 * and that writes only the bottom of its frame steps over it (gcc and
 * clang probe big frames only with -fstack-clash-protection, off in
 * Debian's gcc 12 and clang 14), into whatever is mapped below, often the
 * struct page or stack of another fiber, with no fault. Any frame up to
 * this size lands in the guard. Address space only: the mapping is
 * MAP_NORESERVE and nothing touches the guard. */
#define OVERFLOW_SLACK ((size_t)64 * 1024)

static size_t guard_size(void)
{
    return round_up(OVERFLOW_SLACK, weft__os_page_size());
}

/* The fault handler (os.h): reports and aborts if addr is in the guard
 * of this thread's current fiber; else returns, and the fault goes on to
 * whoever handled it before weft. */
static void on_fault(void *addr)
{
    weft__fiber *f = current;
    uintptr_t a = (uintptr_t)addr;
    if (f && f->map) {
        /* The guard is [map, stack_lo): map_fiber puts nothing else there. */
        uintptr_t lo = (uintptr_t)f->stack_lo;
        if (a < lo && a >= (uintptr_t)f->map) {
            char msg[256], *p = msg;
            p = fmt_s(p, "weft: fiber stack overflow (fiber 0x");
            p = fmt_u(p, (uintptr_t)f, 16);
            if (f->name) {
                p = fmt_s(p, " \"");
                for (const char *n = f->name; *n && p < msg + 120; n++)
                    *p++ = *n;
                p = fmt_s(p, "\"");
            }
            p = fmt_s(p, ", stack size ");
            p = fmt_u(p, f->stack_size, 10);
            p = fmt_s(p, " bytes; raise weft_config.fiber_stack_size)\n");
            weft__os_write_err(msg, (size_t)(p - msg));
            abort();
        }
    }
}

/* ---- thread hosts ---------------------------------------------------- */

int weft__fiber_thread_enter(weft__fiber *self)
{
    memset(self, 0, sizeof *self);
    self->name = "thread";

    /* The thread's own stack, for ASan's switch annotations. */
    weft__os_thread_stack(&self->stack_lo, &self->stack_size);
#ifdef WEFT_TSAN
    self->tsan = __tsan_get_current_fiber();
#endif

    /* The overflow report runs on an alternate stack: the faulting one is
     * exhausted. */
    if (weft__os_fault_enter(on_fault) != 0)
        return WEFT_ENOMEM;
    current = self;
    return WEFT_OK;
}

void weft__fiber_thread_leave(void)
{
    weft__os_fault_leave();
    current = NULL;
}

weft__fiber *weft__fiber_current(void)
{
    return current;
}

/* ---- pools and stacks ------------------------------------------------ */

/* Largest stack we accept: beyond this a size is a unit mistake. */
#define STACK_MAX ((size_t)1 << 32)

/* Test seam: after this many more successful maps, mmap "fails" (-1 =
 * never). Lets tests reach the WEFT_ENOMEM paths without starving the
 * process. Written by tests before fibers are made. */
#ifdef WEFT_TEST_SEAMS
long weft__fiber_fail_maps_after = -1;
atomic_bool weft__fiber_fail_maps_all;
#endif

int weft__fiber_pool_init(weft__fiber_pool *p, size_t stack_size, unsigned max_cached)
{
    if (stack_size == 0)
        stack_size = WEFT_FIBER_STACK_DEFAULT;
    if (stack_size < WEFT_FIBER_STACK_MIN || stack_size > STACK_MAX)
        return WEFT_EINVAL;
    memset(p, 0, sizeof *p);
    p->stack_size = round_up(stack_size, weft__os_page_size());
    p->max_cached = max_cached;
    weft__ctx_fp_capture(&p->fp);
    return WEFT_OK;
}

void weft__fiber_pool_take_fp(weft__fiber_pool *p)
{
    weft__ctx_fp_capture(&p->fp);
}

static void unmap_fiber(weft__fiber *f)
{
#ifdef WEFT_HAVE_VALGRIND
    VALGRIND_STACK_DEREGISTER(f->vg_id);
#endif
    weft__os_unmap_stack(f->map, f->map_size);
}

void weft__fiber_pool_fini(weft__fiber_pool *p)
{
    while (p->free) {
        weft__fiber *f = p->free;
        p->free = f->next;
        unmap_fiber(f);
    }
    p->cached = 0;
}

/* Maps, in one mapping: the guard (guard_size() bytes, PROT_NONE),
 * exactly stack_size usable bytes (a multiple of the page size), and a
 * page on top that starts with the fiber struct. */
static int map_fiber(weft__fiber_pool *p, weft__fiber **out)
{
    size_t ps = weft__os_page_size(), guard = guard_size();
    size_t size = guard + p->stack_size + round_up(sizeof(weft__fiber), ps);
#ifdef WEFT_TEST_SEAMS
    if (weft__fiber_fail_maps_after >= 0 && weft__fiber_fail_maps_after-- == 0)
        return WEFT_ENOMEM;
    if (atomic_load_explicit(&weft__fiber_fail_maps_all, memory_order_relaxed))   /* relaxed: a test's switch, nothing to order */
        return WEFT_ENOMEM;
#endif
    char *m = weft__os_map_stack(size, guard);
    if (!m)
        return WEFT_ENOMEM;
    weft__fiber *f = (weft__fiber *)(m + guard + p->stack_size);
    memset(f, 0, sizeof *f);
    f->map = m;
    f->map_size = size;
    f->stack_lo = m + guard;
    f->stack_size = (size_t)((char *)f - (m + guard));
#ifdef WEFT_HAVE_VALGRIND
    f->vg_id = VALGRIND_STACK_REGISTER(f->stack_lo, (char *)f->stack_lo + f->stack_size);
#endif
    p->created++;
    *out = f;
    return WEFT_OK;
}

static void fiber_start(void *arg)
{
    weft__fiber *f = arg;
#ifdef WEFT_ASAN
    /* First run of this fiber: nothing of ours to restore. */
    __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
    f->fn(f->arg);
    weft__panic("fiber_start: the entry function of fiber %p (%s) returned; "
                "a fiber must end with weft__fiber_exit", (void *)f,
                f->name ? f->name : "unnamed");
}

int weft__fiber_create(weft__fiber_pool *p, weft__fiber **out, weft__fiber_fn fn, void *arg)
{
    weft__fiber *f = p->free;
    if (f) {
        p->free = f->next;
        p->cached--;
    } else {
        int rc = map_fiber(p, &f);
        if (rc != WEFT_OK)
            return rc;
    }
    f->next = NULL;
    f->fn = fn;
    f->arg = arg;
    f->name = NULL;
    f->host = NULL;
    f->asan_fake = NULL;
#ifdef WEFT_TSAN
    f->tsan = __tsan_create_fiber(0);
#endif
    weft__ctx_make_fp(&f->ctx, f->stack_lo, f->stack_size, fiber_start, f,
                      &p->fp);   /* not the maker's current state: see pool_init */
    weft__ctx_set_reserve(&f->ctx, f->map);   /* the guard is the OS's business too (Windows) */
    *out = f;
    return WEFT_OK;
}

void weft__fiber_release(weft__fiber_pool *p, weft__fiber *f)
{
#ifdef WEFT_TSAN
    if (f->tsan) {
        __tsan_destroy_fiber(f->tsan);
        f->tsan = NULL;
    }
#endif
#ifdef WEFT_ASAN
    /* Frames that never returned leave poison behind; a reused stack
     * would report it as an overflow. */
    __asan_unpoison_memory_region(f->stack_lo, f->stack_size);
#endif
    if (p->cached < p->max_cached) {
        f->next = p->free;
        p->free = f;
        p->cached++;
    } else {
        unmap_fiber(f);
    }
}

/* ---- switching -------------------------------------------------------- */

void weft__fiber_switch(weft__fiber *from, weft__fiber *to)
{
    current = to;
#ifdef WEFT_ASAN
    __sanitizer_start_switch_fiber(&from->asan_fake, to->stack_lo, to->stack_size);
#endif
#ifdef WEFT_TSAN
    __tsan_switch_to_fiber(to->tsan, 0);
#endif
    weft__ctx_switch(&from->ctx, &to->ctx);
#ifdef WEFT_ASAN
    __sanitizer_finish_switch_fiber(from->asan_fake, NULL, NULL);
#endif
}

void weft__fiber_exit(weft__fiber *from, weft__fiber *to)
{
    current = to;
#ifdef WEFT_ASAN
    /* NULL: this stack is left for good, ASan may drop its fake frames. */
    __sanitizer_start_switch_fiber(NULL, to->stack_lo, to->stack_size);
#endif
#ifdef WEFT_TSAN
    __tsan_switch_to_fiber(to->tsan, 0);
#endif
    weft__ctx_switch(&from->ctx, &to->ctx);
    weft__panic("fiber_exit: fiber %p was switched to after it exited", (void *)from);
}
