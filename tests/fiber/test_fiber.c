/* Fibers (src/fiber): switching, many fibers, pools, guard regions, bad input. */
#define _GNU_SOURCE
#include <fenv.h>
#include <signal.h>
#include <stdint.h>
#ifndef _WIN32
# include <sys/mman.h>
# include <sys/wait.h>   /* Windows: wtest.h reads wt_run_child's exit code */
#endif

#include "fiber.h"
#include "wtest.h"

static weft__fiber host;
static weft__fiber_pool pool;

static void setup(size_t stack)
{
    WT_ASSERT_EQ(weft__fiber_thread_enter(&host), WEFT_OK);
    WT_ASSERT_EQ(weft__fiber_pool_init(&pool, stack, 64), WEFT_OK);
}

static void teardown(void)
{
    weft__fiber_pool_fini(&pool);
    weft__fiber_thread_leave();
}

/* ---- ping-pong ---------------------------------------------------------- */

static weft__fiber *pong;
static uint64_t volleys;

static void pong_fn(void *arg)
{
    uint64_t n = *(uint64_t *)arg;
    for (uint64_t i = 0; i < n; i++) {
        volleys++;
        weft__fiber_switch(pong, &host);
    }
    weft__fiber_exit(pong, &host);
}

WT_TEST(fiber, ping_pong_million_switches, .timeout = 120)
{
    setup(0);
    uint64_t n = 1000000;
    WT_ASSERT_EQ(weft__fiber_create(&pool, &pong, pong_fn, &n), WEFT_OK);
    for (uint64_t i = 0; i < n; i++) {
        WT_ASSERT(weft__fiber_current() == &host);
        weft__fiber_switch(&host, pong);
        if (volleys != i + 1)
            WT_FAIL("volley %llu missing", (unsigned long long)i);
    }
    weft__fiber_switch(&host, pong);   /* lets it exit */
    WT_ASSERT_EQ(volleys, n);
    weft__fiber_release(&pool, pong);
    teardown();
}

/* ---- ten thousand fibers alive at once ----------------------------------- */

#define MANY 10000
static weft__fiber *many[MANY];
static int visits[MANY];

static void many_fn(void *arg)
{
    int i = (int)(intptr_t)arg;
    volatile char touch[512];   /* each fiber really uses its stack */
    touch[0] = (char)i;
    visits[i]++;
    weft__fiber_switch(many[i], &host);
    visits[i] += 10 + touch[0] - (char)i;
    weft__fiber_exit(many[i], &host);
}

WT_TEST(fiber, ten_thousand_alive, .timeout = 120)
{
    setup(WEFT_FIBER_STACK_MIN * 4);
    for (int i = 0; i < MANY; i++)
        WT_ASSERT_EQ(weft__fiber_create(&pool, &many[i], many_fn, (void *)(intptr_t)i), WEFT_OK);
    for (int i = 0; i < MANY; i++)
        weft__fiber_switch(&host, many[i]);
    /* All 10^4 are now suspended mid-function. */
    for (int i = 0; i < MANY; i++)
        WT_ASSERT_EQ(visits[i], 1);
    for (int i = MANY - 1; i >= 0; i--)
        weft__fiber_switch(&host, many[i]);
    for (int i = 0; i < MANY; i++) {
        WT_ASSERT_EQ(visits[i], 11);
        weft__fiber_release(&pool, many[i]);
    }
    WT_ASSERT_EQ(pool.created, MANY);
    teardown();
}

/* ---- C -> B -> A ---------------------------------------------------------- */

static weft__fiber *abc[3];
static char order[8];
static int order_len;

static void abc_fn(void *arg)
{
    int i = (int)(intptr_t)arg;
    order[order_len++] = (char)('A' + i);
    weft__fiber_exit(abc[i], i > 0 ? abc[i - 1] : &host);
}

WT_TEST(fiber, switch_order_c_b_a)
{
    setup(0);
    for (int i = 0; i < 3; i++)
        WT_ASSERT_EQ(weft__fiber_create(&pool, &abc[i], abc_fn, (void *)(intptr_t)i), WEFT_OK);
    weft__fiber_switch(&host, abc[2]);
    order[order_len] = '\0';
    WT_ASSERT(strcmp(order, "CBA") == 0, "order was %s", order);
    for (int i = 0; i < 3; i++)
        weft__fiber_release(&pool, abc[i]);
    teardown();
}

/* ---- FP control and alignment through the fiber layer --------------------- */

static weft__fiber *fp;
static int fp_seen;
static int fp_aligned;

static __attribute__((noinline)) int local_is_aligned(void)
{
    _Alignas(16) volatile char buf[16];
    buf[0] = 1;
    return ((uintptr_t)buf & 15) == 0;
}

static void fp_fn(void *arg)
{
    fp_aligned = local_is_aligned();
    fesetround(FE_DOWNWARD);
    for (;;) {
        weft__fiber_switch(fp, &host);
        fp_seen = fegetround();
    }
}

WT_TEST(fiber, fp_control_and_alignment)
{
    setup(0);
    fesetround(FE_UPWARD);
    WT_ASSERT_EQ(weft__fiber_create(&pool, &fp, fp_fn, NULL), WEFT_OK);
    for (int i = 0; i < 100; i++) {
        weft__fiber_switch(&host, fp);
        WT_ASSERT(fegetround() == FE_UPWARD);
        if (i > 0)
            WT_ASSERT(fp_seen == FE_DOWNWARD);
    }
    WT_ASSERT(fp_aligned, "16-byte aligned local misaligned at fiber entry");
    fesetround(FE_TONEAREST);
    /* fp never exits: it is abandoned mid-loop, which release allows. */
    weft__fiber_release(&pool, fp);
    teardown();
}

/* ---- pooling -------------------------------------------------------------- */

static weft__fiber *reuse;
static void reuse_fn(void *arg)
{
    (*(int *)arg)++;
    weft__fiber_exit(reuse, &host);
}

WT_TEST(fiber, pool_reuses_stacks)
{
    setup(0);
    int runs = 0;
    for (int i = 0; i < 1000; i++) {
        WT_ASSERT_EQ(weft__fiber_create(&pool, &reuse, reuse_fn, &runs), WEFT_OK);
        weft__fiber_switch(&host, reuse);
        weft__fiber_release(&pool, reuse);
    }
    WT_ASSERT_EQ(runs, 1000);
    WT_ASSERT_EQ(pool.created, 1);
    WT_ASSERT_EQ(pool.cached, 1);
    teardown();
}

/* ---- stack overflow -------------------------------------------------------- */

static weft__fiber *deep;

static __attribute__((noinline)) int recurse(volatile char *prev, int n)
{
    volatile char frame[256];
    frame[0] = prev ? prev[0] + 1 : 0;
    if (n < (1 << 30))   /* always true: only the guard stops this */
        return recurse(frame, n + 1) + frame[0];
    return frame[0];
}

static void deep_fn(void *arg)
{
    recurse(NULL, 0);
    weft__fiber_exit(deep, &host);
}

static void overflow_child(void *arg)
{
    setup(WEFT_FIBER_STACK_MIN * 2);
    WT_ASSERT_EQ(weft__fiber_create(&pool, &deep, deep_fn, NULL), WEFT_OK);
    deep->name = "deep";
    weft__fiber_switch(&host, deep);
}

WT_TEST(fiber, t23_stack_overflow_is_reported)
{
    char out[2048];
    int status = wt_run_child(overflow_child, NULL, out, sizeof out);
    WT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
              "expected SIGABRT, status %#x, stderr: %s", status, out);
    WT_ASSERT(strstr(out, "weft: fiber stack overflow") != NULL, "stderr: %s", out);
    WT_ASSERT(strstr(out, "stack size 32768 bytes") != NULL, "stderr: %s", out);
    WT_ASSERT(strstr(out, "\"deep\"") != NULL, "stderr: %s", out);
}

/* A frame bigger than a page, writing only its lowest byte, steps over a
 * guard of one page without touching it: gcc and clang probe big frames
 * only with -fstack-clash-protection, which neither Debian's gcc 12 nor
 * clang 14 turns on by default. Here writable memory lies right below
 * the fiber's mapping, as another fiber's struct page or stack often
 * does, so only a guard that such frames cannot step over stops the
 * recursion with the report. The
 * recursion starts at eight offsets 1 KiB apart: with a one-page guard
 * some of them step over it. */
#define BIG_FRAME 8192

/* Writes a frame's lowest byte. Called through a pointer the compiler
 * cannot see through, so the whole array stays in the frame (with a
 * volatile array of which only [0] is used, clang keeps one byte). */
static void touch_lowest(char *frame, int n)
{
    *(volatile char *)frame = (char)n;
}
static void (*volatile touch)(char *, int) = touch_lowest;

static __attribute__((noinline)) int recurse_big(int n)
{
    char frame[BIG_FRAME];
    touch(frame, n);           /* the lowest byte, and no other */
    if (n < (1 << 30))         /* always true: only the guard stops this */
        return recurse_big(n + 1) + frame[0];
    return frame[0];
}

static size_t big_offset;

static void big_fn(void *arg)
{
    volatile char *pad = __builtin_alloca(big_offset + 16);
    pad[0] = 0;
    recurse_big(0);
    weft__fiber_exit(deep, &host);
}

#ifndef _WIN32
/* Is [lo, hi) mapped writable throughout? */
static bool writable(uintptr_t lo, uintptr_t hi)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    char line[512];
    uintptr_t at = lo;
    while (at < hi && fgets(line, sizeof line, f)) {   /* the lines are in address order */
        unsigned long s, e;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3 && s <= at && at < e && perms[1] == 'w')
            at = e;
    }
    fclose(f);
    return at >= hi;
}
#endif

static void big_frame_child(void *arg)
{
    big_offset = (size_t)(uintptr_t)arg * 1024;
    setup(WEFT_FIBER_STACK_MIN * 2);
    /* A fiber with writable memory right below its mapping: ours, where
     * the address space there is free (fibers are mapped top down, so it
     * usually is), or what is there already if that is writable. 96 KiB:
     * more than the guard's 64 KiB and a frame, so that frames stepping
     * over a smaller guard would write on and fault (if at all) far from
     * the stack, where the handler rightly does not claim the fault. */
#ifdef _WIN32
    /* Windows compilers probe every frame over a page (__chkstk), so no
     * frame steps over the guard; the fiber runs as it is made. */
    WT_ASSERT_EQ(weft__fiber_create(&pool, &deep, big_fn, NULL), WEFT_OK);
#else
    const size_t below = 96 * 1024;
    /* Where no fiber can get writable memory below it (qemu-user places
     * mappings its own way), the last one made runs as it is: a frame
     * that stepped over the guard would then fault outside it, which the
     * handler does not claim (a plain SIGSEGV, not the report). */
    for (int tries = 0; tries < 8; tries++) {
        WT_ASSERT_EQ(weft__fiber_create(&pool, &deep, big_fn, NULL), WEFT_OK);
        char *want = (char *)deep->map - below;
        void *m = mmap(want, below, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (m == want)
            break;
        if (m != MAP_FAILED)
            munmap(m, below);   /* a kernel without MAP_FIXED_NOREPLACE put it elsewhere */
        else if (writable((uintptr_t)want, (uintptr_t)deep->map))
            break;
    }
#endif
    deep->name = "big";
    weft__fiber_switch(&host, deep);
}

WT_TEST(fiber, big_frames_do_not_step_over_the_guard, .timeout = 60)
{
    for (uintptr_t k = 0; k < 8; k++) {
        char out[2048];
        int status = wt_run_child(big_frame_child, (void *)k, out, sizeof out);
        WT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
                  "offset %u KiB: expected SIGABRT, status %#x, stderr: %s", (unsigned)k, status, out);
        WT_ASSERT(strstr(out, "weft: fiber stack overflow") != NULL,
                  "offset %u KiB: stderr: %s", (unsigned)k, out);
        WT_ASSERT(strstr(out, "\"big\"") != NULL, "offset %u KiB: stderr: %s", (unsigned)k, out);
    }
}

/* ---- a returning entry ------------------------------------------------------ */

static weft__fiber *ret;
static void returning_fn(void *arg) { }

static void returning_child(void *arg)
{
    setup(0);
    WT_ASSERT_EQ(weft__fiber_create(&pool, &ret, returning_fn, NULL), WEFT_OK);
    weft__fiber_switch(&host, ret);
}

WT_TEST(fiber, returning_entry_is_reported)
{
    char out[2048];
    int status = wt_run_child(returning_child, NULL, out, sizeof out);
    WT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
              "expected SIGABRT, status %#x, stderr: %s", status, out);
    WT_ASSERT(strstr(out, "weft: fiber_start: the entry function of fiber") != NULL,
              "stderr: %s", out);
}

/* ---- bad input ----------------------------------------------------------------- */

WT_TEST(fiber, stack_size_below_minimum_is_einval)
{
    weft__fiber_pool p;
    WT_ASSERT_EQ(weft__fiber_pool_init(&p, WEFT_FIBER_STACK_MIN - 1, 4), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__fiber_pool_init(&p, 4096, 4), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__fiber_pool_init(&p, (size_t)1 << 40, 4), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__fiber_pool_init(&p, WEFT_FIBER_STACK_MIN, 4), WEFT_OK);
    WT_ASSERT(p.stack_size >= WEFT_FIBER_STACK_MIN);
    WT_ASSERT_EQ(weft__fiber_pool_init(&p, 0, 4), WEFT_OK);
    WT_ASSERT_EQ(p.stack_size, WEFT_FIBER_STACK_DEFAULT);
}

static int count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    int n = 0, c;
    if (!f)
        return -1;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

WT_TEST(fiber, mmap_failure_is_enomem_and_leaks_nothing)
{
    setup(0);
    weft__fiber *f = NULL;
    int before = count_maps();
    weft__fiber_fail_maps_after = 0;
    WT_ASSERT_EQ(weft__fiber_create(&pool, &f, reuse_fn, NULL), WEFT_ENOMEM);
    WT_ASSERT(f == NULL, "out written on failure");
    WT_ASSERT_EQ(pool.created, 0);
    WT_ASSERT_EQ(count_maps(), before);
    /* The pool is still usable afterwards. */
    int runs = 0;
    WT_ASSERT_EQ(weft__fiber_create(&pool, &reuse, reuse_fn, &runs), WEFT_OK);
    weft__fiber_switch(&host, reuse);
    WT_ASSERT_EQ(runs, 1);
    weft__fiber_release(&pool, reuse);
    teardown();
}
