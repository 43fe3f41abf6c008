/* Queues (src/core), one thread: the deque against a reference model at
 * every fill level (docs/reliability.md test 1), and the global ring's FIFO
 * order across ring -> overflow -> ring transitions. The concurrent tests
 * are in tests/stress/stress_queues.c. */
#include "deque.h"
#include "global_ring.h"
#include "wtest.h"

typedef struct item {
    weft__node link;   /* first member: a node pointer is an item pointer */
    unsigned id;
} item;

#define MAX_ITEMS 1024
static item items[MAX_ITEMS];

static void items_init(void)
{
    for (unsigned i = 0; i < MAX_ITEMS; i++)
        items[i].id = i;
}

static unsigned id_of(weft__node *n)
{
    WT_ASSERT(n != NULL, "expected an item, got NULL");
    return ((item *)n)->id;
}

/* ---- the reference model: items [lo, hi) of v, oldest at lo ---------- */

typedef struct model {
    unsigned v[1 << 20];
    unsigned lo, hi, cap;
} model;

static model m;

static void model_reset(unsigned cap)
{
    m.lo = m.hi = 0;
    m.cap = cap;
}

static unsigned model_size(void) { return m.hi - m.lo; }

/* Does one operation on both and checks they agree. op: 0 push, 1 pop,
 * 2 steal, 3 pop_oldest(arg), 4 pop_expected (pop without the early empty
 * look: on empty it claims, finds nothing and restores). next_id: the id
 * to push. */
static void step(weft__deque *d, int op, unsigned arg, unsigned *next_id)
{
    switch (op) {
    case 0: {
        unsigned id = *next_id % MAX_ITEMS;
        bool ok = weft__deque_push(d, &items[id].link);
        WT_ASSERT_EQ(ok, model_size() < m.cap);
        if (ok) {
            m.v[m.hi++] = id;
            (*next_id)++;
        }
        break;
    }
    case 1:
    case 4: {
        weft__node *n = op == 1 ? weft__deque_pop(d) : weft__deque_pop_expected(d);
        if (model_size() == 0) {
            WT_ASSERT(n == NULL, "pop on empty returned %u", id_of(n));
        } else {
            WT_ASSERT_EQ(id_of(n), m.v[--m.hi]);
        }
        break;
    }
    case 2: {
        weft__node *n = weft__deque_steal(d);
        if (model_size() == 0) {
            WT_ASSERT(n == NULL, "steal on empty returned %u", id_of(n));
        } else {
            WT_ASSERT_EQ(id_of(n), m.v[m.lo++]);
        }
        break;
    }
    case 3: {
        weft__node *out[512];
        unsigned want = model_size() < arg ? model_size() : arg;
        unsigned got = weft__deque_pop_oldest(d, out, arg);
        WT_ASSERT_EQ(got, want);
        for (unsigned i = 0; i < got; i++)
            WT_ASSERT_EQ(id_of(out[i]), m.v[m.lo++]);
        break;
    }
    }
    WT_ASSERT_EQ(weft__deque_size(d), model_size());
}

/* A fresh deque holding k items whose indices start at `offset` (so the
 * items wrap around the end of the buffer when offset is not 0). */
static void build(weft__deque *d, unsigned cap, unsigned offset, unsigned k, unsigned *next_id)
{
    WT_ASSERT_EQ(weft__deque_init(d, cap, NULL), WEFT_OK);
    model_reset(cap);
    for (unsigned i = 0; i < offset; i++) {
        step(d, 0, 0, next_id);
        step(d, 2, 0, next_id);
    }
    for (unsigned i = 0; i < k; i++)
        step(d, 0, 0, next_id);
    WT_ASSERT_EQ(weft__deque_size(d), k);
}

/* Every fill level 0..cap, at several wrap offsets, followed by each way
 * of emptying the deque. */
static void every_fill_level(unsigned cap)
{
    items_init();
    unsigned offsets[] = { 0, 1, cap - 1, cap, cap + 1, 3 * cap + cap / 2 };
    unsigned next_id = 0;
    weft__deque d;
    for (unsigned oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++) {
        unsigned off = offsets[oi];
        for (unsigned k = 0; k <= cap; k++) {
            /* one more push: succeeds below capacity, false (no change) at it */
            build(&d, cap, off, k, &next_id);
            step(&d, 0, 0, &next_id);
            while (model_size())
                step(&d, 1, 0, &next_id);
            step(&d, 1, 0, &next_id);   /* empty: NULL */
            step(&d, 4, 0, &next_id);   /* empty, by the claiming path: NULL, bottom restored */
            step(&d, 2, 0, &next_id);
            step(&d, 0, 0, &next_id);   /* usable after the restore */
            step(&d, 4, 0, &next_id);
            weft__deque_fini(&d);

            /* owner drains newest first: by pop, then by the join's pop
             * (no early empty look) */
            for (int pop = 1; pop <= 4; pop += 3) {
                build(&d, cap, off, k, &next_id);
                for (unsigned i = 0; i <= k; i++)
                    step(&d, pop, 0, &next_id);
                step(&d, 2, 0, &next_id);
                step(&d, 0, 0, &next_id);   /* usable again after empty */
                step(&d, 2, 0, &next_id);
                weft__deque_fini(&d);
            }

            /* thieves drain oldest first */
            build(&d, cap, off, k, &next_id);
            for (unsigned i = 0; i <= k; i++)
                step(&d, 2, 0, &next_id);
            step(&d, 1, 0, &next_id);
            weft__deque_fini(&d);

            /* ends meet: alternate pop and steal */
            build(&d, cap, off, k, &next_id);
            for (unsigned i = 0; i <= k; i++)
                step(&d, (int)(1 + i % 2), 0, &next_id);
            step(&d, 1, 0, &next_id);
            step(&d, 2, 0, &next_id);
            weft__deque_fini(&d);

            /* pop_oldest of every size, then the rest by pop */
            unsigned js[] = { 0, 1, 2, 3, 5, 8, k / 2, k - 1, k, k + 1 };
            for (unsigned ji = 0; ji < sizeof js / sizeof js[0]; ji++) {
                unsigned j = js[ji];
                if (j > k + 1)
                    continue;   /* k - 1 when k == 0 */
                build(&d, cap, off, k, &next_id);
                step(&d, 3, j, &next_id);
                while (model_size())
                    step(&d, 1, 0, &next_id);
                step(&d, 3, j + 1, &next_id);   /* empty: 0 */
                weft__deque_fini(&d);
            }
            /* the half offload the scheduler does when full */
            build(&d, cap, off, k, &next_id);
            step(&d, 3, cap / 2, &next_id);
            while (model_size() < cap)
                step(&d, 0, 0, &next_id);
            step(&d, 0, 0, &next_id);           /* full again: false */
            weft__deque_fini(&d);
        }
    }
}

/* Random operations, biased to keep the deque near each of its states. */
static void random_ops(unsigned cap, unsigned ops)
{
    items_init();
    uint64_t rng = wt_seed() ^ cap;
    unsigned next_id = 0;
    weft__deque d;
    WT_ASSERT_EQ(weft__deque_init(&d, cap, NULL), WEFT_OK);
    model_reset(cap);
    for (unsigned i = 0; i < ops && m.hi < (1u << 20) - 1; i++) {
        unsigned r = (unsigned)(wt_rand(&rng) % 100);
        /* phases: filling (push-heavy) or draining (pop-heavy) */
        bool filling = (i / 997) % 2 == 0;
        int op;
        if (r < (filling ? 55u : 25u))
            op = 0;
        else if (r < 70)
            op = r % 2 ? 1 : 4;
        else if (r < 92)
            op = 2;
        else
            op = 3;
        step(&d, op, (unsigned)(wt_rand(&rng) % (cap + 2)), &next_id);
    }
    weft__deque_fini(&d);
}

WT_TEST(deque, init_rejects_bad_capacity)
{
    weft__deque d;
    WT_ASSERT_EQ(weft__deque_init(&d, 0, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__deque_init(&d, 1, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__deque_init(&d, 3, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__deque_init(&d, 6, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__deque_init(&d, 2, NULL), WEFT_OK);
    weft__deque_fini(&d);
}

static void *failing_alloc(size_t size, void *ctx) { (void)size; (void)ctx; return NULL; }
static void unused_free(void *p, size_t size, void *ctx) { (void)p; (void)size; (void)ctx; }

WT_TEST(deque, init_reports_enomem)
{
    weft_allocator a = { failing_alloc, unused_free, NULL };
    weft_set_allocator(&a);
    weft__deque d;
    weft__inject q;
    WT_ASSERT_EQ(weft__deque_init(&d, 64, NULL), WEFT_ENOMEM);
    WT_ASSERT_EQ(weft__inject_init(&q, 64, NULL), WEFT_ENOMEM);
    weft_set_allocator(NULL);
    /* An allocator of their own (a scheduler's) instead of the process's. */
    WT_ASSERT_EQ(weft__deque_init(&d, 64, &a), WEFT_ENOMEM);
    WT_ASSERT_EQ(weft__inject_init(&q, 64, &a), WEFT_ENOMEM);
}

WT_TEST(deque, t01_every_fill_level_cap2)   { every_fill_level(2); }
WT_TEST(deque, t01_every_fill_level_cap4)   { every_fill_level(4); }
WT_TEST(deque, t01_every_fill_level_cap256, .timeout = 60) { every_fill_level(256); }
WT_TEST(deque, random_ops_cap2)   { random_ops(2, 200000); }
WT_TEST(deque, random_ops_cap4)   { random_ops(4, 200000); }
WT_TEST(deque, random_ops_cap256) { random_ops(256, 400000); }

/* push_many (a bound thread's refill, src/core/task.c): as many of v[] as
 * fit, v[0] first, at every fill level of a deque of 8; pops then take
 * them newest first and steals oldest first, behind what was there. */
WT_TEST(deque, push_many_fills_what_fits)
{
    items_init();
    for (unsigned have = 0; have <= 8; have++) {
        for (unsigned k = 0; k <= 10; k++) {
            weft__deque d;
            WT_ASSERT_EQ(weft__deque_init(&d, 8, NULL), WEFT_OK);
            for (unsigned i = 0; i < have; i++)
                WT_ASSERT(weft__deque_push(&d, &items[i].link));
            weft__node *v[10];
            for (unsigned i = 0; i < k; i++)
                v[i] = &items[100 + i].link;
            unsigned fit = k < 8 - have ? k : 8 - have;
            WT_ASSERT(weft__deque_push_many(&d, v, k) == fit, "have %u k %u", have, k);
            WT_ASSERT_EQ(weft__deque_size(&d), have + fit);
            if (have > 0)
                WT_ASSERT_EQ(id_of(weft__deque_steal(&d)), 0u);   /* the oldest first */
            for (unsigned i = fit; i-- > 0;)
                WT_ASSERT_EQ(id_of(weft__deque_pop(&d)), 100 + i);   /* newest first */
            for (unsigned i = have; i-- > 1;)
                WT_ASSERT_EQ(id_of(weft__deque_pop(&d)), i);
            WT_ASSERT(weft__deque_pop(&d) == NULL);
            weft__deque_fini(&d);
        }
    }
}

/* ---- the global ring, one thread -------------------------------------- */

static void pop_expect(weft__inject *q, unsigned max, unsigned first, unsigned count)
{
    weft__node *out[64];
    unsigned got = weft__inject_pop_batch(q, out, max);
    WT_ASSERT_EQ(got, count);
    for (unsigned i = 0; i < got; i++)
        WT_ASSERT_EQ(id_of(out[i]), first + i);
}

WT_TEST(inject, init_rejects_bad_capacity)
{
    weft__inject q;
    WT_ASSERT_EQ(weft__inject_init(&q, 0, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__inject_init(&q, 2, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__inject_init(&q, 3, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__inject_init(&q, 6, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft__inject_init(&q, 4, NULL), WEFT_OK);
    WT_ASSERT(weft__inject_empty(&q), "the queue should be empty");
    weft__inject_fini(&q);
}

/* Capacity 4: the ring holds 3; the 4th push spills. */
WT_TEST(inject, fifo_across_overflow_cap4)
{
    items_init();
    weft__inject q;
    WT_ASSERT_EQ(weft__inject_init(&q, 4, NULL), WEFT_OK);
    WT_ASSERT(weft__inject_empty(&q), "the queue should be empty");
    pop_expect(&q, 8, 0, 0);

    /* ring only */
    for (unsigned i = 0; i < 3; i++)
        weft__inject_push(&q, &items[i].link);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).spilled, 0);
    WT_ASSERT_EQ(weft__inject_size(&q), 3);
    /* ring full -> overflow */
    for (unsigned i = 3; i < 10; i++)
        weft__inject_push(&q, &items[i].link);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).spilled, 7);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).overflows, 1);
    WT_ASSERT_EQ(weft__inject_size(&q), 10);
    WT_ASSERT(!weft__inject_empty(&q), "the queue should hold items");

    /* the ring has room again, but the list is non-empty: pushes go behind it */
    pop_expect(&q, 2, 0, 2);
    weft__inject_push(&q, &items[10].link);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).spilled, 8);
    /* a batch that crosses from ring to list: ring first (2), then list up to max */
    pop_expect(&q, 4, 2, 4);
    pop_expect(&q, 64, 6, 5);
    WT_ASSERT(weft__inject_empty(&q), "the queue should be empty");
    pop_expect(&q, 64, 0, 0);

    /* list drained: back to the ring */
    weft__inject_push(&q, &items[11].link);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).spilled, 8);
    /* a batch push that fills the ring and spills its tail, kept in order */
    weft__node *v[6];
    for (unsigned i = 0; i < 6; i++)
        v[i] = &items[12 + i].link;
    weft__inject_push_batch(&q, v, 6);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).spilled, 8 + 4);
    WT_ASSERT_EQ(weft__inject_size(&q), 7);
    pop_expect(&q, 1, 11, 1);
    /* room in the ring, list non-empty: a batch goes behind the list */
    for (unsigned i = 0; i < 3; i++)
        v[i] = &items[18 + i].link;
    weft__inject_push_batch(&q, v, 3);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).spilled, 8 + 4 + 3);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).overflows, 2);
    pop_expect(&q, 64, 12, 9);
    WT_ASSERT(weft__inject_empty(&q), "the queue should be empty");
    WT_ASSERT_EQ(weft__inject_size(&q), 0);
    weft__inject_fini(&q);
}

/* A long overflow list wraps the lanes many times: batches of 128 (an
 * offload) go in, pops of 32 (a grab) and of odd sizes come out, and a
 * push while the list drains lands behind it, all in one FIFO order. */
WT_TEST(inject, fifo_across_lanes_cap4)
{
    items_init();
    weft__inject q;
    WT_ASSERT_EQ(weft__inject_init(&q, 4, NULL), WEFT_OK);
    weft__node *v[128];
    unsigned next = 0;
    for (unsigned b = 0; b < 7; b++) {
        for (unsigned i = 0; i < 128; i++)
            v[i] = &items[next++].link;
        weft__inject_push_batch(&q, v, 128);
    }
    WT_ASSERT_EQ(weft__inject_size(&q), 7 * 128);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).overflows, 1);
    unsigned lo = 0;
    pop_expect(&q, 32, lo, 32);   /* the ring's 3, then 29 from the lanes */
    lo += 32;
    for (unsigned k = 1; lo < next; k = k % 37 + 1) {
        if (k % 5 == 0 && next < MAX_ITEMS)
            weft__inject_push(&q, &items[next++].link);
        unsigned want = next - lo < k ? next - lo : k;
        pop_expect(&q, k, lo, want);
        lo += want;
        WT_ASSERT_EQ(weft__inject_size(&q), next - lo);
    }
    WT_ASSERT(weft__inject_empty(&q), "the queue should be empty");
    /* Drained: the ring again, and a new list starts where the lanes are. */
    for (unsigned i = 0; i < 40; i++)
        v[i] = &items[i].link;
    weft__inject_push_batch(&q, v, 40);
    WT_ASSERT_EQ(weft__inject_get_stats(&q).overflows, 2);
    pop_expect(&q, 64, 0, 40);
    WT_ASSERT(weft__inject_empty(&q), "the queue should be empty");
    weft__inject_fini(&q);
}

/* Random pushes, batch pushes and batch pops against a FIFO model. */
WT_TEST(inject, random_ops_against_fifo_model_cap4)
{
    items_init();
    uint64_t rng = wt_seed() ^ 0x1234;
    weft__inject q;
    WT_ASSERT_EQ(weft__inject_init(&q, 4, NULL), WEFT_OK);
    unsigned lo = 0, hi = 0;       /* ids in flight: [lo, hi), mod MAX_ITEMS */
    weft__node *v[16];
    for (unsigned i = 0; i < 300000; i++) {
        unsigned r = (unsigned)(wt_rand(&rng) % 3);
        unsigned k = 1 + (unsigned)(wt_rand(&rng) % 16);
        if (r == 0 && hi - lo + 1 < MAX_ITEMS) {
            weft__inject_push(&q, &items[hi++ % MAX_ITEMS].link);
        } else if (r == 1 && hi - lo + k < MAX_ITEMS) {
            for (unsigned j = 0; j < k; j++)
                v[j] = &items[hi++ % MAX_ITEMS].link;
            weft__inject_push_batch(&q, v, k);
        } else {
            unsigned want = hi - lo < k ? hi - lo : k;
            unsigned got = weft__inject_pop_batch(&q, v, k);
            WT_ASSERT_EQ(got, want);
            for (unsigned j = 0; j < got; j++)
                WT_ASSERT_EQ(id_of(v[j]), lo++ % MAX_ITEMS);
        }
        WT_ASSERT_EQ(weft__inject_size(&q), hi - lo);
        WT_ASSERT_EQ(weft__inject_empty(&q), hi == lo);
    }
    WT_ASSERT(weft__inject_get_stats(&q).spilled > 0, "the overflow list was never used");
    weft__inject_fini(&q);
}
