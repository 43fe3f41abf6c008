/* weft_parallel_for and weft_parallel_reduce: every index exactly once
 * at the edges of the grain and over 10^7 elements, chunks never larger
 * than the grain, results equal to the sequential ones (integers exactly,
 * floating-point sums identical across runs and worker counts), every
 * kind of caller (task, bound thread, plain thread, single-threaded
 * mode), nesting, an uneven loop that balances, and bad input. Runs at 1,
 * 2 and 4 workers (4 oversubscribes the 2-core machine on purpose). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "core.h"   /* shutdown, to stand in for a destroy in progress */
#include "../core/sched_util.h"

/* ---- coverage --------------------------------------------------------------- */

struct cover {
    size_t begin, end, grain;
    unsigned char *hits;         /* one per index; a second hit is a bug */
    atomic_size_t calls;
    atomic_int bad_chunk;        /* a chunk out of range or over the grain */
};

static void cover_body(size_t b, size_t e, void *arg)
{
    struct cover *c = arg;
    atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
    if (b >= e || b < c->begin || e > c->end || (c->grain && e - b > c->grain)) {
        atomic_store(&c->bad_chunk, 1);
        return;
    }
    for (size_t i = b; i < e; i++)
        c->hits[i - c->begin]++;   /* plain: two chunks sharing an index race (TSAN) */
}

/* Runs parallel_for over [begin, begin + n) and checks each index was hit
 * once and every chunk respected the grain. */
static void check_cover(weft_sched *s, size_t begin, size_t n, size_t grain)
{
    struct cover c = { .begin = begin, .end = begin + n, .grain = grain };
    c.hits = calloc(n ? n : 1, 1);
    WT_ASSERT(c.hits != NULL);
    atomic_init(&c.calls, 0);
    atomic_init(&c.bad_chunk, 0);
    WT_ASSERT_EQ(weft_parallel_for(s, begin, begin + n, grain, cover_body, &c), WEFT_OK);
    WT_ASSERT(atomic_load(&c.bad_chunk) == 0, "chunk out of range or over grain %zu (n %zu)", grain, n);
    for (size_t i = 0; i < n; i++)
        WT_ASSERT(c.hits[i] == 1, "index %zu of %zu hit %u times (grain %zu)", begin + i, n, c.hits[i], grain);
    if (n == 0)
        WT_ASSERT_EQ(atomic_load(&c.calls), 0);
    else if (grain)
        WT_ASSERT_EQ(atomic_load(&c.calls), (n + grain - 1) / grain);
    free(c.hits);
}

struct cover_job {
    weft_sched *s;
    const size_t *sizes;
    size_t nsizes, grain;
    weft_waitgroup wg;
};

static void cover_task(void *arg)
{
    struct cover_job *j = arg;
    for (size_t i = 0; i < j->nsizes; i++)
        check_cover(j->s, 1000, j->sizes[i], j->grain);
    weft_waitgroup_done(&j->wg);
}

/* check_cover for each size, called from a task of s. */
static void check_cover_in_task(weft_sched *s, const size_t *sizes, size_t nsizes, size_t grain)
{
    struct cover_job j = { .s = s, .sizes = sizes, .nsizes = nsizes, .grain = grain };
    weft_waitgroup_init(&j.wg, 1);
    WT_ASSERT_EQ(weft_spawn(s, cover_task, &j), WEFT_OK);
    WT_ASSERT_EQ(weft_waitgroup_wait(&j.wg), WEFT_OK);
    weft_waitgroup_destroy(&j.wg);
}

WT_TEST(parallel, for_covers_every_index_once_at_grain_edges, .timeout = 300)
{
    static const size_t grains[] = { 1, 7, 64, 1000 };
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        for (size_t gi = 0; gi < sizeof grains / sizeof grains[0]; gi++) {
            size_t g = grains[gi];
            size_t sizes[] = { 0, 1, g - 1, g, g + 1, 3 * g + 2, 100 * g + 1 };
            /* From a plain thread ... */
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
                check_cover(s, 1000, sizes[i], g);
            /* ... and from a task. */
            check_cover_in_task(s, sizes, sizeof sizes / sizeof sizes[0], g);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

WT_TEST(parallel, for_covers_ten_million, .timeout = 600)
{
    size_t n = (size_t)wt_scaled(10000000, 100000);
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        check_cover(s, 0, n, 0);          /* automatic grain */
        check_cover(s, 3, n, 4096);
        check_cover_in_task(s, &n, 1, 0);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- callers ---------------------------------------------------------------- */

WT_TEST(parallel, for_from_bound_thread_and_single_threaded_mode, .timeout = 120)
{
    unsigned counts[] = { 0, 1, 2 };
    for (size_t k = 0; k < 3; k++) {
        weft_sched *s = make_sched(counts[k]);
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        check_cover(s, 0, 10000, 0);
        check_cover(s, 5, 1001, 10);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* Chunks a plain thread ran itself (weft_thread_worker_index() < 0 there). */
static atomic_size_t on_caller;

static void count_caller_body(size_t b, size_t e, void *arg)
{
    if (weft_thread_worker_index() < 0)
        atomic_fetch_add_explicit(&on_caller, 1, memory_order_relaxed);
    cover_body(b, e, arg);
}

static unsigned cpus_here(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    return (unsigned)CPU_COUNT(&set);
}

static void check_cover_counted(weft_sched *s, size_t n, size_t grain)
{
    struct cover c = { .begin = 0, .end = n, .grain = grain };
    c.hits = calloc(n, 1);
    WT_ASSERT(c.hits != NULL);
    atomic_init(&c.calls, 0);
    atomic_init(&c.bad_chunk, 0);
    WT_ASSERT_EQ(weft_parallel_for(s, 0, n, grain, count_caller_body, &c), WEFT_OK);
    WT_ASSERT(atomic_load(&c.bad_chunk) == 0, "chunk out of range or over grain");
    for (size_t i = 0; i < n; i++)
        WT_ASSERT(c.hits[i] == 1, "index %zu of %zu hit %u times", i, n, c.hits[i]);
    free(c.hits);
}

/* With no workers, a plain thread runs the whole loop itself. */
WT_TEST(parallel, plain_thread_without_workers_runs_the_loop, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    atomic_store(&on_caller, 0);
    check_cover_counted(s, 1000, 10);
    WT_ASSERT_EQ(atomic_load(&on_caller), 100);
    int r = 0, id = 0;
    WT_ASSERT_EQ(weft_parallel_reduce(s, 0, 10, 1, &r, sizeof r, &id, NULL, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* With no workers, a plain thread's loop is refused once destroy has
 * begun, as with workers (it ran the loop anyway). With no workers a
 * destroy from outside never waits, so the test sets the flag destroy
 * sets first, and clears it again to destroy for real. */
static void nop_task(void *arg)
{
    (void)arg;
}

static void count_range(size_t b, size_t e, void *arg)
{
    atomic_fetch_add((atomic_size_t *)arg, e - b);
}

static void sum_range(size_t b, size_t e, void *partial, void *arg)
{
    (void)arg;
    for (size_t i = b; i < e; i++)
        *(size_t *)partial += i;
}

static void add_sizes(void *into, const void *from, void *arg)
{
    (void)arg;
    *(size_t *)into += *(const size_t *)from;
}

WT_TEST(parallel, plain_thread_without_workers_refused_during_destroy, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    atomic_size_t n = 0;
    WT_ASSERT_EQ(weft_parallel_for(s, 0, 100, 7, count_range, &n), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n), 100);
    atomic_store(&s->shutdown, true);   /* destroy's first step */
    WT_ASSERT_EQ(weft_spawn(s, nop_task, NULL), WEFT_ESHUTDOWN);   /* as a spawn sees it */
    WT_ASSERT_EQ(weft_parallel_for(s, 0, 100, 7, count_range, &n), WEFT_ESHUTDOWN);
    WT_ASSERT_EQ(atomic_load(&n), 100);
    size_t r = 1, id = 0;
    WT_ASSERT_EQ(weft_parallel_reduce(s, 0, 100, 7, &r, sizeof r, &id, sum_range, add_sizes, NULL),
                 WEFT_ESHUTDOWN);
    WT_ASSERT_EQ(r, 1);
    WT_ASSERT_EQ(weft_parallel_reduce(s, 0, 100000, 1, &r, sizeof r, &id, sum_range, add_sizes, NULL),
                 WEFT_ESHUTDOWN);   /* with scratch blocks */
    WT_ASSERT_EQ(r, 1);
    atomic_store(&s->shutdown, false);
    WT_ASSERT_EQ(weft_parallel_reduce(s, 0, 100, 7, &r, sizeof r, &id, sum_range, add_sizes, NULL),
                 WEFT_OK);
    WT_ASSERT_EQ(r, 4950);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* Fewer workers than CPUs: a plain caller runs a share of its loop, and
 * every index still runs once. With a worker per CPU it runs none. */
WT_TEST(parallel, plain_caller_takes_a_share_when_a_cpu_is_spare, .timeout = 120)
{
    unsigned cpus = cpus_here();
    for (unsigned workers = 1; workers <= 2; workers++) {
        weft_sched *s = make_sched(workers);
        atomic_store(&on_caller, 0);
        for (int r = 0; r < 20; r++)
            check_cover_counted(s, 1000 + (size_t)r * 37, 7);
        size_t mine = atomic_load(&on_caller);
        if (cpus > workers)
            WT_ASSERT(mine > 0, "%u workers, %u CPUs: the caller ran no chunk", workers, cpus);
        else
            WT_ASSERT(mine == 0, "%u workers, %u CPUs: the caller ran %zu chunks", workers, cpus, mine);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* A loop of one chunk, from a plain thread with a CPU spare for it, runs
 * on that thread: nothing to share, no worker to wake. */
WT_TEST(parallel, plain_caller_runs_a_single_chunk_itself, .timeout = 60)
{
    if (cpus_here() < 2)
        return;   /* no CPU spare for the caller: the chunk goes to the worker */
    weft_sched *s = make_sched(1);
    atomic_store(&on_caller, 0);
    for (int r = 0; r < 10; r++)
        check_cover_counted(s, 100 + (size_t)r, 1000);   /* grain over the range: one chunk */
    WT_ASSERT_EQ(atomic_load(&on_caller), 10);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* The caller's share is slow: its first chunk holds the caller until a
 * worker has run a chunk of the share (a helper, from the back). Without
 * helpers the caller would wait here until the deadline. */
struct slow_share {
    atomic_int worker_in_share;
    size_t share_end;            /* chunks [0, share_end) are the caller's share */
    unsigned char hits[64];
    atomic_int timed_out;
};

static void slow_share_body(size_t b, size_t e, void *arg)
{
    struct slow_share *x = arg;
    for (size_t i = b; i < e; i++)
        x->hits[i]++;
    if (weft_thread_worker_index() >= 0) {
        if (b < x->share_end)
            atomic_store(&x->worker_in_share, 1);
        return;
    }
    if (b == 0) {
        /* 60 s: only a loop without helpers waits this long, never a
         * worker starved on a loaded machine. */
        uint64_t deadline = wt_now_ns() + 60000000000ull;
        while (!atomic_load(&x->worker_in_share)) {
            if (wt_now_ns() > deadline) {
                atomic_store(&x->timed_out, 1);
                return;
            }
            sched_yield();
        }
    }
}

WT_TEST(parallel, helpers_finish_a_slow_caller_share, .timeout = 180)
{
    if (cpus_here() < 2)
        return;   /* no CPU spare for the caller: no share, nothing to show */
    weft_sched *s = make_sched(1);
    for (int r = 0; r < 5; r++) {
        struct slow_share x = { .share_end = 32 };   /* 64 chunks / (1 worker + 1) */
        atomic_init(&x.worker_in_share, 0);
        atomic_init(&x.timed_out, 0);
        WT_ASSERT_EQ(weft_parallel_for(s, 0, 64, 1, slow_share_body, &x), WEFT_OK);
        WT_ASSERT(atomic_load(&x.timed_out) == 0, "no worker took a chunk of the caller's share in 60 s");
        for (size_t i = 0; i < 64; i++)
            WT_ASSERT(x.hits[i] == 1, "index %zu hit %u times", i, x.hits[i]);
    }
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* The same slow share while the worker never runs out of work of its
 * own: a task that queues itself again on the worker until a chunk of the
 * share has run there. A helper goes behind the worker's own queued work
 * only so many times, then helps: the caller's first chunk still ends.
 * (The worker's first root chunk starts the chain; the helper was queued
 * behind the root, so it runs while the chain's next task is queued.) */
struct busy_share {
    struct slow_share x;
    atomic_int chain;            /* the chain was started */
    atomic_long links;           /* tasks of the chain that ran */
    weft_sched *s;
};

static void busy_link(void *arg)
{
    struct busy_share *y = arg;
    atomic_fetch_add(&y->links, 1);
    if (!atomic_load(&y->x.worker_in_share) && !atomic_load(&y->x.timed_out))
        WT_ASSERT_EQ(weft_spawn(y->s, busy_link, y), WEFT_OK);
}

static void busy_share_body(size_t b, size_t e, void *arg)
{
    struct busy_share *y = arg;
    if (weft_thread_worker_index() >= 0 && b >= y->x.share_end && !atomic_exchange(&y->chain, 1))
        WT_ASSERT_EQ(weft_spawn(y->s, busy_link, y), WEFT_OK);
    slow_share_body(b, e, &y->x);
}

WT_TEST(parallel, helpers_finish_a_slow_share_beside_endless_work, .timeout = 180)
{
    if (cpus_here() < 2)
        return;   /* no CPU spare for the caller: no share, nothing to show */
    weft_sched *s = make_sched(1);
    for (int r = 0; r < 5; r++) {
        struct busy_share y = { .x = { .share_end = 32 }, .s = s };
        atomic_init(&y.x.worker_in_share, 0);
        atomic_init(&y.x.timed_out, 0);
        atomic_init(&y.chain, 0);
        atomic_init(&y.links, 0);
        WT_ASSERT_EQ(weft_parallel_for(s, 0, 64, 1, busy_share_body, &y), WEFT_OK);
        WT_ASSERT(atomic_load(&y.x.timed_out) == 0, "no worker took a chunk of the caller's share in 60 s");
        for (size_t i = 0; i < 64; i++)
            WT_ASSERT(y.x.hits[i] == 1, "index %zu hit %u times", i, y.x.hits[i]);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);   /* the chain has stopped */
        WT_ASSERT(atomic_load(&y.links) > 0, "the chain never ran");
    }
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

static void nop_range(size_t b, size_t e, void *arg) { (void)b; (void)e; (void)arg; }

WT_TEST(parallel, bad_input_is_refused, .timeout = 60)
{
    weft_sched *s = make_sched(1);
    WT_ASSERT_EQ(weft_parallel_for(NULL, 0, 10, 1, nop_range, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_for(s, 0, 10, 1, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_for(s, 10, 9, 1, nop_range, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_for(s, 7, 7, 0, nop_range, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_parallel_for(s, SIZE_MAX - 3, SIZE_MAX, 2, nop_range, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* Nested loops: each outer chunk runs an inner loop of its own. */
struct nest {
    weft_sched *s;
    atomic_size_t total;
};

static void inner_body(size_t b, size_t e, void *arg)
{
    atomic_fetch_add_explicit(&((struct nest *)arg)->total, e - b, memory_order_relaxed);
}

static void outer_body(size_t b, size_t e, void *arg)
{
    struct nest *n = arg;
    for (size_t i = b; i < e; i++)
        WT_ASSERT_EQ(weft_parallel_for(n->s, 0, 1000 + i, 16, inner_body, n), WEFT_OK);
}

WT_TEST(parallel, nested_loops, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        struct nest n = { .s = s };
        atomic_init(&n.total, 0);
        WT_ASSERT_EQ(weft_parallel_for(s, 0, 64, 1, outer_body, &n), WEFT_OK);
        size_t want = 0;
        for (size_t i = 0; i < 64; i++)
            want += 1000 + i;
        WT_ASSERT_EQ(atomic_load(&n.total), want);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- uneven loops ------------------------------------------------------------- *
 * Index 0 holds its thread until every other index has run (or a deadline
 * passes). That can only end in time if the rest of the range was
 * offered to the other workers before index 0 started. */

struct uneven {
    size_t n;
    atomic_size_t others_done;
    atomic_int timed_out;
};

static void uneven_body(size_t b, size_t e, void *arg)
{
    struct uneven *u = arg;
    if (b == 0) {
        /* Wait for every index outside this chunk. */
        uint64_t deadline = wt_now_ns() + 60ull * 1000000000u;
        while (atomic_load(&u->others_done) < u->n - (e - b)) {
            if (wt_now_ns() > deadline) {
                atomic_store(&u->timed_out, 1);
                break;
            }
            sched_yield();   /* holds the thread: no fiber switch */
        }
        atomic_fetch_add(&u->others_done, e - b - 1);
        return;
    }
    atomic_fetch_add(&u->others_done, e - b);
}

WT_TEST(parallel, one_slow_index_does_not_hold_up_the_rest, .timeout = 300)
{
    static const size_t grains[] = { 1, 0, 100 };
    WT_FOR_WORKERS(w, 2, 4) {   /* needs a second worker */
        weft_sched *s = make_sched(w);
        for (size_t gi = 0; gi < sizeof grains / sizeof grains[0]; gi++) {
            struct uneven u = { .n = 4096 };
            atomic_init(&u.others_done, 0);
            atomic_init(&u.timed_out, 0);
            WT_ASSERT_EQ(weft_parallel_for(s, 0, u.n, grains[gi], uneven_body, &u), WEFT_OK);
            WT_ASSERT(atomic_load(&u.timed_out) == 0, "index 0 held up the rest at %u workers, grain %zu",
                         w, grains[gi]);
            WT_ASSERT_EQ(atomic_load(&u.others_done), u.n - 1);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- reduction ---------------------------------------------------------------- */

static void isum_body(size_t b, size_t e, void *partial, void *arg)
{
    (void)arg;
    uint64_t *p = partial;
    for (size_t i = b; i < e; i++)
        *p += (uint64_t)i * i;
}

static void isum_combine(void *into, const void *from, void *arg)
{
    (void)arg;
    *(uint64_t *)into += *(const uint64_t *)from;
}

static void dsum_body(size_t b, size_t e, void *partial, void *arg)
{
    const double *x = arg;
    double acc = *(double *)partial;
    for (size_t i = b; i < e; i++)
        acc += x[i];
    *(double *)partial = acc;
}

static void dsum_combine(void *into, const void *from, void *arg)
{
    (void)arg;
    *(double *)into += *(const double *)from;
}

/* A result larger than the stack scratch, with a non-zero identity. */
struct hist { uint32_t bucket[600]; uint32_t base; };

static void hist_body(size_t b, size_t e, void *partial, void *arg)
{
    (void)arg;
    struct hist *h = partial;
    for (size_t i = b; i < e; i++)
        h->bucket[(i * 7919) % 600]++;
}

static void hist_combine(void *into, const void *from, void *arg)
{
    (void)arg;
    struct hist *a = into;
    const struct hist *f = from;
    for (int i = 0; i < 600; i++)
        a->bucket[i] += f->bucket[i];
    a->base = a->base < f->base ? a->base : f->base;
}

WT_TEST(parallel, reduce_integers_equal_sequential, .timeout = 300)
{
    static const size_t sizes[] = { 0, 1, 63, 64, 65, 1000003 };
    static const size_t grains[] = { 0, 1, 64, 5000 };
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            for (size_t gi = 0; gi < sizeof grains / sizeof grains[0]; gi++) {
                size_t n = sizes[si];
                if (grains[gi] == 1 && n > 100000)
                    continue;
                uint64_t want = 7, got = 12345, id = 0;
                for (size_t i = 10; i < 10 + n; i++)
                    want += (uint64_t)i * i;
                want -= 7;
                WT_ASSERT_EQ(weft_parallel_reduce(s, 10, 10 + n, grains[gi], &got, sizeof got, &id,
                                                  isum_body, isum_combine, NULL), WEFT_OK);
                WT_ASSERT(got == want, "n %zu grain %zu", n, grains[gi]);
            }
        }
        /* Large partials (heap scratch), identity not all zero. */
        struct hist id, got, want;
        memset(&id, 0, sizeof id);
        id.base = 99;
        want = id;
        for (size_t i = 0; i < 200000; i++)
            want.bucket[(i * 7919) % 600]++;
        WT_ASSERT_EQ(weft_parallel_reduce(s, 0, 200000, 0, &got, sizeof got, &id,
                                          hist_body, hist_combine, NULL), WEFT_OK);
        WT_ASSERT(memcmp(&got, &want, sizeof got) == 0, "histogram differs at %u workers", w);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

WT_TEST(parallel, reduce_floats_identical_across_runs_and_workers, .timeout = 300)
{
    size_t n = (size_t)wt_scaled(2000000, 50000);
    double *x = malloc(n * sizeof *x);
    WT_ASSERT(x != NULL);
    uint64_t r = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < n; i++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        x[i] = (double)(r >> 11) * 0x1p-53 * ((r & 1) ? 1e6 : 1e-6) * ((r & 2) ? -1 : 1);
    }
    static const size_t grains[] = { 0, 333, 100000 };
    double first[3] = { 0 };
    bool have[3] = { false, false, false };
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        for (size_t gi = 0; gi < 3; gi++) {
            for (int rep = 0; rep < 5; rep++) {
                double id = 0.0, got = -1.0;
                WT_ASSERT_EQ(weft_parallel_reduce(s, 0, n, grains[gi], &got, sizeof got, &id,
                                                  dsum_body, dsum_combine, x), WEFT_OK);
                if (!have[gi]) {
                    first[gi] = got;
                    have[gi] = true;
                }
                WT_ASSERT(memcmp(&got, &first[gi], sizeof got) == 0,
                          "grain %zu: %.17g then %.17g (%u workers)", grains[gi], first[gi], got,
                          w);
            }
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    free(x);
}

/* ---- steady state ---------------------------------------------------------------- */

/* Counts allocations bigger than a slab of task records (4160 bytes):
 * the reduce's scratch. Records settle between the workers' pools by
 * timing; test 28 (tests/core) is about them. */
static atomic_long allocs;
static void *count_alloc(size_t size, void *ctx)
{
    (void)ctx;
    if (size > 8192)
        atomic_fetch_add(&allocs, 1);
    void *p = NULL;
    return posix_memalign(&p, 64, size < 64 ? 64 : size) == 0 ? p : NULL;
}
static void count_free(void *p, size_t size, void *ctx) { (void)size; (void)ctx; free(p); }

WT_TEST(parallel, reduce_reuses_its_scratch, .timeout = 120)
{
    weft_allocator a = { count_alloc, count_free, NULL };
    weft_set_allocator(&a);
    weft_sched *s = make_sched(2);
    uint64_t id = 0, got = 0, want = 0;
    for (size_t i = 0; i < 100000; i++)
        want += (uint64_t)i * i;
    /* Grain 0: 1024 partials of a cache line each, past the stack's share. */
    WT_ASSERT_EQ(weft_parallel_reduce(s, 0, 100000, 0, &got, sizeof got, &id, isum_body, isum_combine, NULL), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&allocs), 1);
    long before = atomic_load(&allocs);
    for (int r = 0; r < 100; r++) {
        got = 0;
        WT_ASSERT_EQ(weft_parallel_reduce(s, 0, 100000, 0, &got, sizeof got, &id, isum_body, isum_combine, NULL), WEFT_OK);
        WT_ASSERT(got == want);
    }
    WT_ASSERT_EQ(atomic_load(&allocs) - before, 0);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    weft_set_allocator(NULL);
}
