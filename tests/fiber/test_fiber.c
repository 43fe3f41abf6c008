/* Fibers (src/fiber): switching, many fibers, pools, guard pages, bad input. */
#define _GNU_SOURCE
#include <fenv.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

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
    if (n < (1 << 30))   /* always true: only the guard page stops this */
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
