/* Shuffle mode (weft_config.shuffle): with one worker, or a bound thread
 * alone, ready tasks and fibers run in an order drawn from the seed. The
 * same seed replays the same order; other seeds give other orders; an
 * order-dependent bug in user code shows up under some seed and replays
 * under it. */
#include <stdatomic.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"

#define NTASKS 24

static weft_sched *make_shuffled(unsigned workers, uint64_t seed)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    c.shuffle = true;
    c.seed = seed;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    return s;
}

struct trace {
    int order[NTASKS];
    atomic_int n;
    weft_event go;               /* the fibers' part: all wait, one signal */
    bool with_fibers;
};

struct item {
    struct trace *tr;
    int id;
};

static void record(void *arg)
{
    struct item *it = arg;
    if (it->tr->with_fibers)
        WT_ASSERT_EQ(weft_event_wait(&it->tr->go), WEFT_OK);
    int k = atomic_fetch_add(&it->tr->n, 1);   /* one worker: no race, but the counter is shared with the test */
    it->tr->order[k] = it->id;
}

static bool all_done(void *arg)
{
    return atomic_load(&((struct trace *)arg)->n) == NTASKS;
}

struct root {
    struct trace *tr;
    struct item items[NTASKS];
};

static void root_task(void *arg)
{
    struct root *r = arg;
    for (int i = 0; i < NTASKS; i++) {
        r->items[i] = (struct item){ r->tr, i };
        WT_ASSERT_EQ(weft_spawn(weft_sched_current(), record, &r->items[i]), WEFT_OK);
    }
    if (r->tr->with_fibers) {
        weft_yield();   /* let them block first (or not, as the draw says) */
        weft_event_signal(&r->tr->go);
    }
    WT_ASSERT_EQ(weft_wait_until(all_done, r->tr), WEFT_OK);
}

/* The order NTASKS tasks ran in, under workers (0: a bound thread) and seed. */
static void run_order(unsigned workers, uint64_t seed, bool with_fibers, int out[NTASKS])
{
    weft_sched *s = make_shuffled(workers, seed);
    struct trace tr;
    memset(&tr, 0, sizeof tr);
    atomic_init(&tr.n, 0);
    tr.with_fibers = with_fibers;
    weft_event_init(&tr.go, true, false);
    struct root r = { .tr = &tr };
    if (workers == 0)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, root_task, &r), WEFT_OK);
    if (workers == 0) {
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        weft_sched_unbind();
    } else {
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    }
    WT_ASSERT_EQ(atomic_load(&tr.n), NTASKS);
    memcpy(out, tr.order, sizeof tr.order);
    weft_event_destroy(&tr.go);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(shuffle, more_than_one_worker_is_einval)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = 2;
    c.shuffle = true;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    WT_ASSERT(s == NULL);
}

WT_TEST(shuffle, same_seed_same_order_other_seeds_other_orders, .timeout = 120)
{
    for (unsigned workers = 0; workers <= 1; workers++) {
        for (int fibers = 0; fibers <= 1; fibers++) {
            int first[NTASKS], again[NTASKS], other[NTASKS];
            run_order(workers, 42, fibers, first);
            run_order(workers, 42, fibers, again);
            WT_ASSERT(memcmp(first, again, sizeof first) == 0,
                      "seed 42 gave two orders (workers %u, fibers %d)", workers, fibers);
            int differ = 0;
            for (uint64_t seed = 1; seed <= 8; seed++) {
                run_order(workers, seed, fibers, other);
                differ += memcmp(first, other, sizeof first) != 0;
            }
            WT_ASSERT(differ >= 6, "only %d of 8 other seeds changed the order (workers %u, fibers %d)",
                      differ, workers, fibers);
        }
    }
}

/* An order-dependent bug: the reader assumes the writer, spawned first,
 * has run. */
struct race { int value; int seen; };

static void writer(void *arg) { ((struct race *)arg)->value = 1; }
static void reader(void *arg) { struct race *r = arg; r->seen = r->value; }

static void race_root(void *arg)
{
    WT_ASSERT_EQ(weft_spawn(weft_sched_current(), writer, arg), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(weft_sched_current(), reader, arg), WEFT_OK);
}

static int race_outcome(uint64_t seed)
{
    weft_sched *s = make_shuffled(1, seed);
    struct race r = { 0, -1 };
    WT_ASSERT_EQ(weft_spawn(s, race_root, &r), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    return r.seen;
}

WT_TEST(shuffle, order_bug_shows_up_and_replays, .timeout = 120)
{
    uint64_t bad = 0, good = 0;
    for (uint64_t seed = 1; seed <= 64 && !(bad && good); seed++) {
        if (race_outcome(seed) == 0)
            bad = bad ? bad : seed;
        else
            good = good ? good : seed;
    }
    WT_ASSERT(bad != 0, "no seed in 64 ran the reader first");
    WT_ASSERT(good != 0, "no seed in 64 ran the writer first");
    for (int i = 0; i < 5; i++) {
        WT_ASSERT_EQ(race_outcome(bad), 0);
        WT_ASSERT_EQ(race_outcome(good), 1);
    }
}
