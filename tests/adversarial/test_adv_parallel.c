/* Adversarial tests of weft/parallel.h's algorithms (transform, scans,
 * sorts, find), written from the header and docs/reference/parallel.md
 * alone, at 0 (this thread bound), 1, 2 and 8 workers:
 *
 *   bad_input      each WEFT_EINVAL (NULLs, sizes 0, partial overlaps,
 *                  count * size overflowing, scratch overlapping base,
 *                  begin > end): no callback ran and the output is
 *                  untouched; count 0 calls nothing
 *   scan_same      a float scan (range and element forms, in place too)
 *                  is bitwise the same at every worker count and from a
 *                  task, the bound thread and a plain thread
 *   sort_big       elements of 64 KiB sorted from a task (a fiber's stack)
 *                  by both sorts: sorted, and stable for the stable one
 *   sort_block     a comparison that blocks on an event a later task
 *                  sets; 40000 keys with 3 values: stable order kept
 *   find_first     every index from 5000 on matches: the answer is 5000
 *                  at every count; a block after it may block without
 *                  hanging the call; no match: end */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adv_util.h"

static atomic_long calls;
static atomic_long bad;

static void map_count(void *out, const void *in, size_t first, size_t count, void *arg)
{
    (void)out;
    (void)in;
    (void)first;
    (void)count;
    (void)arg;
    atomic_fetch_add(&calls, 1);
}

static void scan_count(size_t b, size_t e, void *sum, bool final, void *arg)
{
    (void)b;
    (void)e;
    (void)sum;
    (void)final;
    (void)arg;
    atomic_fetch_add(&calls, 1);
}

static void comb_count(void *into, const void *from, void *arg)
{
    (void)into;
    (void)from;
    (void)arg;
    atomic_fetch_add(&calls, 1);
}

static void op_count(void *acc, const void *elem, void *arg)
{
    (void)acc;
    (void)elem;
    (void)arg;
    atomic_fetch_add(&calls, 1);
}

static int cmp_count(const void *a, const void *b, void *arg)
{
    (void)arg;
    atomic_fetch_add(&calls, 1);
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static size_t find_count(size_t b, size_t e, void *arg)
{
    (void)b;
    (void)arg;
    atomic_fetch_add(&calls, 1);
    return e;
}

WT_TEST(adv_parallel, bad_input)
{
    WT_FOR_WORKERS(w, 0, 2) {
        weft_sched *s = adv_sched(w);
        atomic_store(&calls, 0);
        int a[64], ref[64];
        for (int i = 0; i < 64; i++)
            a[i] = ref[i] = 64 - i;
        const size_t huge = SIZE_MAX / 2;
        /* transform */
        WT_ASSERT_EQ(weft_parallel_transform(NULL, a, 4, a, 4, 8, 0, map_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_transform(s, NULL, 4, a, 4, 8, 0, map_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_transform(s, a, 4, a, 4, 8, 0, NULL, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_transform(s, a, 0, a, 4, 8, 0, map_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_transform(s, a + 1, 4, a, 4, 8, 0, map_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_transform(s, a, 4, a + 3, 4, 8, 0, map_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_transform(s, a, 8, a, 4, 8, 0, map_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_transform(s, a, 4, NULL, 0, huge, 0, map_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_transform(s, a, 1, a + 32, 4, huge, 0, map_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_transform(s, a, 4, a, 4, 0, 0, map_count, NULL), WEFT_OK);
        /* scans */
        int sum = 7, id = 0;
        WT_ASSERT_EQ(weft_parallel_scan(s, 0, 10, 0, &sum, 0, &id, scan_count, comb_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan(s, 10, 0, 0, &sum, 4, &id, scan_count, comb_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan(s, 0, 10, 0, NULL, 4, &id, scan_count, comb_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan(s, 0, 10, 0, &sum, 4, NULL, scan_count, comb_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan(s, 0, 10, 0, &sum, 4, &id, NULL, comb_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan(s, 0, 10, 0, &sum, 4, &id, scan_count, NULL, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(sum, 7);
        WT_ASSERT_EQ(weft_parallel_scan_inclusive(s, a + 1, a, 16, 4, 0, &id, op_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan_exclusive(s, a, a + 2, 16, 4, 0, &id, op_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan_inclusive(s, a, a, 16, 0, 0, &id, op_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan_inclusive(s, a, a + 32, huge, 4, 0, &id, op_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan_exclusive(s, a, a, 16, 4, 0, NULL, op_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan_exclusive(s, a, a, 16, 4, 0, &id, NULL, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_scan_exclusive(s, a, a, 0, 4, 0, &id, op_count, NULL),
                     WEFT_OK);
        /* sorts */
        int scratch[64];
        WT_ASSERT_EQ(weft_parallel_sort(s, a, huge, 4, cmp_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_sort(s, a, 64, 0, cmp_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_sort(s, NULL, 64, 4, cmp_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_sort(s, a, 64, 4, NULL, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_sort(NULL, a, 64, 4, cmp_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_sort(s, NULL, 0, 4, cmp_count, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_parallel_sort_stable(s, a, 64, 4, a + 63, cmp_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_sort_stable(s, a + 8, 32, 4, a, cmp_count, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_sort_stable(s, a, huge, 4, scratch, cmp_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_sort_stable(s, a, 64, 0, scratch, cmp_count, NULL),
                     WEFT_EINVAL);
        WT_ASSERT_EQ(memcmp(a, ref, sizeof a), 0);
        /* find */
        size_t idx = 12345;
        WT_ASSERT_EQ(weft_parallel_find(s, 0, 10, 0, find_count, NULL, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_find(s, 10, 0, 0, find_count, NULL, &idx), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_find(s, 0, 10, 0, NULL, NULL, &idx), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_parallel_find(NULL, 0, 10, 0, find_count, NULL, &idx), WEFT_EINVAL);
        WT_ASSERT_EQ(idx, 12345);
        WT_ASSERT_EQ(weft_parallel_find(s, 5, 5, 0, find_count, NULL, &idx), WEFT_OK);
        WT_ASSERT_EQ(idx, 5);
        WT_ASSERT_EQ(atomic_load(&calls), 0);
        adv_sched_end(s, w);
    }
}

/* ---- scans: the same bits everywhere ------------------------------------ */

#define SCAN_N 100003

static float scan_in[SCAN_N];

static void fadd(void *acc, const void *elem, void *arg)
{
    (void)arg;
    *(float *)acc += *(const float *)elem;
}

typedef struct frange {
    float *out;
} frange;

static void fscan_body(size_t b, size_t e, void *sum, bool final, void *arg)
{
    frange *r = arg;
    float *acc = sum;
    for (size_t i = b; i < e; i++) {
        *acc += scan_in[i];
        if (final)
            r->out[i] = *acc;
    }
}

static void fcombine(void *into, const void *from, void *arg)
{
    (void)arg;
    *(float *)into += *(const float *)from;
}

typedef struct scan_job {
    weft_sched *s;
    float *incl, *excl, *inplace, *range;
    float total;
    atomic_long rc;
} scan_job;

static void scan_body(void *arg)
{
    scan_job *j = arg;
    float init = 0.5f, id = 0.0f;
    long rc = 0;
    rc |= -weft_parallel_scan_inclusive(j->s, j->incl, scan_in, SCAN_N, sizeof(float), 0, &init,
                                        fadd, NULL);
    rc |= -weft_parallel_scan_exclusive(j->s, j->excl, scan_in, SCAN_N, sizeof(float), 97, &init,
                                        fadd, NULL);
    memcpy(j->inplace, scan_in, sizeof scan_in);
    rc |= -weft_parallel_scan_inclusive(j->s, j->inplace, j->inplace, SCAN_N, sizeof(float), 0,
                                        &init, fadd, NULL);
    frange r = { j->range };
    rc |= -weft_parallel_scan(j->s, 0, SCAN_N, 0, &j->total, sizeof(float), &id, fscan_body,
                              fcombine, &r);
    atomic_store(&j->rc, rc);
}

static void *scan_thread(void *arg)
{
    scan_body(arg);
    return NULL;
}

WT_TEST(adv_parallel, scan_same)
{
    srand(7);
    for (size_t i = 0; i < SCAN_N; i++)
        scan_in[i] = (float)(rand() % 2000 - 1000) / 7.0f;
    size_t bytes = sizeof scan_in;
    float *ref[4] = { malloc(bytes), malloc(bytes), malloc(bytes), malloc(bytes) };
    float *got[4] = { malloc(bytes), malloc(bytes), malloc(bytes), malloc(bytes) };
    for (int k = 0; k < 4; k++)
        WT_ASSERT(ref[k] && got[k]);
    float ref_total = 0;
    bool have_ref = false;
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int caller = 0; caller < 3; caller++) {
            weft_sched *s = adv_sched(w);
            scan_job j = { .s = s, .incl = got[0], .excl = got[1], .inplace = got[2],
                           .range = got[3] };
            if (caller == 0)
                scan_body(&j);
            else if (caller == 1)
                adv_run_in_task(s, scan_body, &j);
            else
                adv_on_thread(scan_thread, &j);   /* with no workers: it runs every block */
            WT_ASSERT(atomic_load(&j.rc) == 0, "w %u caller %d", w, caller);
            if (!have_ref) {
                for (int k = 0; k < 4; k++)
                    memcpy(ref[k], got[k], bytes);
                ref_total = j.total;
                have_ref = true;
                WT_ASSERT_EQ(memcmp(got[0], got[2], bytes), 0);   /* in place = out of place */
                WT_ASSERT(got[1][0] == 0.5f);
            } else {
                for (int k = 0; k < 4; k++)
                    WT_ASSERT(memcmp(ref[k], got[k], bytes) == 0, "w %u caller %d form %d",
                              w, caller, k);
                WT_ASSERT(memcmp(&ref_total, &j.total, sizeof(float)) == 0);
            }
            WT_ASSERT(memcmp(&j.total, &got[3][SCAN_N - 1], sizeof(float)) == 0);
            adv_sched_end(s, w);
        }
    }
    for (int k = 0; k < 4; k++) {
        free(ref[k]);
        free(got[k]);
    }
}

/* ---- sorts ---------------------------------------------------------------- */

#define BIG (64 * 1024)
#define BIG_N 40

typedef struct big {
    int key;
    int seq;
    char pad[BIG - 2 * sizeof(int)];
} big;

static int big_cmp(const void *a, const void *b, void *arg)
{
    (void)arg;
    int x = ((const big *)a)->key, y = ((const big *)b)->key;
    return (x > y) - (x < y);
}

typedef struct big_job {
    weft_sched *s;
    big *v;
    int stable;
    atomic_long rc;
} big_job;

static void big_body(void *arg)
{
    big_job *j = arg;
    for (int i = 0; i < BIG_N; i++) {
        j->v[i].key = (i * 7) % 5;
        j->v[i].seq = i;
        j->v[i].pad[0] = (char)i;
        j->v[i].pad[sizeof j->v[i].pad - 1] = (char)i;
    }
    int rc = j->stable ? weft_parallel_sort_stable(j->s, j->v, BIG_N, sizeof(big), NULL,
                                                   big_cmp, NULL)
                       : weft_parallel_sort(j->s, j->v, BIG_N, sizeof(big), big_cmp, NULL);
    atomic_store(&j->rc, rc);
}

WT_TEST(adv_parallel, sort_big)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int stable = 0; stable < 2; stable++) {
            weft_sched *s = adv_sched(w);
            big_job j = { .s = s, .v = malloc(sizeof(big) * BIG_N), .stable = stable };
            WT_ASSERT(j.v);
            adv_run_in_task(s, big_body, &j);
            WT_ASSERT_EQ(atomic_load(&j.rc), WEFT_OK);
            for (int i = 0; i < BIG_N; i++) {
                WT_ASSERT_EQ(j.v[i].pad[0], (char)j.v[i].seq);
                WT_ASSERT_EQ(j.v[i].pad[sizeof j.v[i].pad - 1], (char)j.v[i].seq);
                if (i > 0) {
                    WT_ASSERT(j.v[i - 1].key <= j.v[i].key);
                    if (stable && j.v[i - 1].key == j.v[i].key)
                        WT_ASSERT(j.v[i - 1].seq < j.v[i].seq);
                }
            }
            free(j.v);
            adv_sched_end(s, w);
        }
    }
}

#define KEYS 40000

typedef struct kv {
    int key;
    int seq;
} kv;

static weft_event cmp_gate;
static atomic_long cmp_calls;

static int blocking_cmp(const void *a, const void *b, void *arg)
{
    (void)arg;
    if (atomic_fetch_add(&cmp_calls, 1) == 100)
        weft_event_wait(&cmp_gate);   /* a later task sets it */
    int x = ((const kv *)a)->key, y = ((const kv *)b)->key;
    return (x > y) - (x < y);
}

static void open_gate(void *arg)
{
    (void)arg;
    weft_event_signal(&cmp_gate);
}

typedef struct kv_job {
    weft_sched *s;
    kv *v;
    atomic_long rc;
} kv_job;

static void kv_body(void *arg)
{
    kv_job *j = arg;
    if (weft_spawn(j->s, open_gate, NULL) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_store(&j->rc, weft_parallel_sort_stable(j->s, j->v, KEYS, sizeof(kv), NULL,
                                                   blocking_cmp, NULL));
}

WT_TEST(adv_parallel, sort_block)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        kv_job j = { .s = s, .v = malloc(sizeof(kv) * KEYS) };
        WT_ASSERT(j.v);
        for (int i = 0; i < KEYS; i++)
            j.v[i] = (kv){ (int)((i * 2654435761u) % 3), i };
        weft_event_init(&cmp_gate, true, false);
        atomic_store(&cmp_calls, 0);
        atomic_store(&bad, 0);
        adv_run_in_task(s, kv_body, &j);
        WT_ASSERT_EQ(atomic_load(&j.rc), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        for (int i = 1; i < KEYS; i++) {
            WT_ASSERT(j.v[i - 1].key <= j.v[i].key);
            if (j.v[i - 1].key == j.v[i].key)
                WT_ASSERT(j.v[i - 1].seq < j.v[i].seq);
        }
        free(j.v);
        adv_sched_end(s, w);
        weft_event_destroy(&cmp_gate);
    }
}

/* ---- find ----------------------------------------------------------------- */

static size_t find_from_5000(size_t b, size_t e, void *arg)
{
    (void)arg;
    atomic_fetch_add(&calls, 1);
    if (b > 20000)
        weft_yield();   /* a late block may block */
    if (e <= 5000)
        return e;
    return b < 5000 ? 5000 : b;
}

WT_TEST(adv_parallel, find_first)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        size_t grains[] = { 0, 1, 7, 4999, 5000, 5001, 100000 };
        for (size_t k = 0; k < sizeof grains / sizeof grains[0]; k++) {
            size_t idx = 0;
            WT_ASSERT_EQ(weft_parallel_find(s, 3, 50000, grains[k], find_from_5000, NULL, &idx),
                         WEFT_OK);
            WT_ASSERT(idx == 5000, "w %u grain %zu: %zu", w, grains[k], idx);
            WT_ASSERT_EQ(weft_parallel_find(s, 3, 5000, grains[k], find_from_5000, NULL, &idx),
                         WEFT_OK);
            WT_ASSERT_EQ(idx, 5000);   /* none: end */
            WT_ASSERT_EQ(weft_parallel_find(s, 6000, 6001, grains[k], find_from_5000, NULL, &idx),
                         WEFT_OK);
            WT_ASSERT_EQ(idx, 6000);
        }
        adv_sched_end(s, w);
    }
}
