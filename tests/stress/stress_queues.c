/* Queues under contention (docs/reliability.md tests 2, 3 and 4): a plain C
 * program, run in release, ASan and TSAN builds alike.
 *
 *   2. owner vs 3 thieves, tagged items, a full deque offloading its
 *      oldest half to the global ring: every tag consumed exactly once.
 *   3. last-element race: one item per round, owner pop vs 2 thieves:
 *      exactly one winner each round. Odd rounds pop as a join does
 *      (pop_expected).
 *   4. global ring: 4 producers, 2 batch grabbers, a small ring so the
 *      overflow list is used all the time: exactly once, per-producer FIFO
 *      as seen by each grabber.
 *
 * Built twice: capacity 64 (stress_queues) and, with
 * WEFT_TEST_SMALL_QUEUES, capacity 4 (stress_queues_small), where
 * wrap-around, full, overflow and last-element paths are hit constantly.
 * Sizes scale with WEFT_STRESS_SCALE; WEFT_SEED replays a run. SIGQUIT
 * (sent by the runner's watchdog) prints progress.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "deque.h"
#include "global_ring.h"
#include "wtest.h"

#ifdef WEFT_TEST_SMALL_QUEUES
# define DEQUE_CAP  4u
# define INJECT_CAP 4u
# define VARIANT "small (capacity 4)"
#else
# define DEQUE_CAP  64u
# define INJECT_CAP 64u
# define VARIANT "capacity 64"
#endif

/* ---- shared helpers ------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Progress for the watchdog's SIGQUIT: what a hang was doing. */
static _Atomic uint64_t progress_done, progress_total;
static const char *volatile progress_name = "none";

static void put_u64(char **p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *(*p)++ = tmp[--n];
}

static void on_sigquit(int sig)
{
    char buf[256], *p = buf;
    const char *head = "stress_queues: hung in ";
    for (const char *s = head; *s; s++) *p++ = *s;
    for (const char *s = progress_name; *s && p < buf + 150; s++) *p++ = *s;
    *p++ = ':'; *p++ = ' ';
    put_u64(&p, atomic_load_explicit(&progress_done, memory_order_relaxed));
    *p++ = '/';
    put_u64(&p, atomic_load_explicit(&progress_total, memory_order_relaxed));
    *p++ = '\n';
    ssize_t r = write(2, buf, (size_t)(p - buf));
    (void)r;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void begin(const char *name, uint64_t total, const char *unit)
{
    signal(SIGQUIT, on_sigquit);
    progress_name = name;
    atomic_store(&progress_total, total);
    atomic_store(&progress_done, 0);
    printf("%s [%s]: %llu %s, deque %u, ring %u, %ld CPUs, scale %.3g\n",
           name, VARIANT, (unsigned long long)total, unit, DEQUE_CAP, INJECT_CAP,
           sysconf(_SC_NPROCESSORS_ONLN), wt_scale());
    fflush(stdout);
    (void)wt_seed();   /* prints it */
}

static uint32_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t)x;
}

/* Simulated task body: about k nanoseconds of work. */
static void work(unsigned k)
{
    for (volatile unsigned i = k; i; i--)
        ;
}

typedef struct titem {
    weft__node link;   /* first member */
    uint32_t tag;
    uint32_t check;    /* mix(tag): written before the push, checked by the taker */
} titem;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    WT_ASSERT(p != NULL, "out of memory for %zu x %zu", n, size);
    return p;
}

/* ---- test 2: owner vs 3 thieves, overflow to the global ring ---------- */

#define T2_THIEVES 3

static struct {
    weft__deque d;
    weft__inject q;
    titem *items;
    uint64_t n;
    uint8_t *seen[T2_THIEVES + 1];      /* per taker: [0] owner, [1..] thieves */
    uint64_t steals[T2_THIEVES + 1];    /* per taker, written by that taker only */
    uint64_t grabs[T2_THIEVES + 1];     /* items taken from the global ring */
    _Atomic uint64_t consumed;
    _Atomic int bad_check;
} t2;

static void t2_take(int who, weft__node *x)
{
    titem *it = (titem *)x;
    if (it->tag >= t2.n || it->check != mix(it->tag))
        atomic_store(&t2.bad_check, 1);
    else
        t2.seen[who][it->tag]++;
    atomic_fetch_add_explicit(&t2.consumed, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&progress_done, 1, memory_order_relaxed);
}

static unsigned t2_grab(int who)
{
    weft__node *buf[8];
    unsigned k = weft__inject_pop_batch(&t2.q, buf, 8);
    for (unsigned i = 0; i < k; i++)
        t2_take(who, buf[i]);
    t2.grabs[who] += k;
    return k;
}

static void *t2_thief(void *arg)
{
    int who = (int)(intptr_t)arg;
    uint64_t rng = wt_seed() ^ (0x2000 + (unsigned)who);
    unsigned idle = 0;
    while (atomic_load_explicit(&t2.consumed, memory_order_relaxed) < t2.n) {
        weft__node *x = weft__deque_steal(&t2.d);
        if (x) {
            t2.steals[who]++;
            t2_take(who, x);
            work((unsigned)(wt_rand(&rng) % 256));
            continue;
        }
        if (t2_grab(who) == 0 && ++idle % 64 == 0)
            sched_yield();   /* 2 cores, 4 threads: let the owner run */
    }
    return NULL;
}

WT_TEST(queues, t02_owner_vs_3_thieves_with_overflow, .timeout = 300)
{
    t2.n = wt_scaled(2000000, 20000);
    begin("test 2 owner vs 3 thieves", t2.n, "items");
    uint64_t rng = wt_seed() ^ 2;
    WT_ASSERT_EQ(weft__deque_init(&t2.d, DEQUE_CAP, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft__inject_init(&t2.q, INJECT_CAP, NULL), WEFT_OK);
    t2.items = xcalloc(t2.n, sizeof *t2.items);
    for (int w = 0; w <= T2_THIEVES; w++)
        t2.seen[w] = xcalloc(t2.n, 1);

    double t0 = now_s();
    pthread_t th[T2_THIEVES];
    for (int i = 0; i < T2_THIEVES; i++)
        WT_ASSERT_EQ(pthread_create(&th[i], NULL, t2_thief, (void *)(intptr_t)(i + 1)), 0);

    /* The owner works like a worker: a burst of spawns (sometimes more
     * than the deque holds, so it offloads its oldest half to the global
     * ring), then it runs some of its newest items while the thieves take
     * the oldest, and now and then it takes a batch from the global ring. */
    uint64_t offloads = 0, offloaded = 0, pops = 0;
    weft__node *half[DEQUE_CAP];
    uint64_t i = 0, bursts = 0;
    while (i < t2.n) {
        unsigned burst = 1 + (unsigned)(wt_rand(&rng) % (2 * DEQUE_CAP));
        for (unsigned j = 0; j < burst && i < t2.n; j++, i++) {
            titem *it = &t2.items[i];
            it->tag = (uint32_t)i;
            it->check = mix(i);
            unsigned nothing = 0;
            while (!weft__deque_push(&t2.d, &it->link)) {
                unsigned k = weft__deque_pop_oldest(&t2.d, half, DEQUE_CAP / 2);
                if (k) {
                    weft__inject_push_batch(&t2.q, half, k);
                    offloads++;
                    offloaded += k;
                } else {
                    /* "full" once with a stale top, then empty: possible once; twice is a broken deque */
                    WT_ASSERT(++nothing < 2, "item %llu: push says full, pop_oldest finds nothing",
                              (unsigned long long)i);
                }
            }
        }
        unsigned runs = (unsigned)(wt_rand(&rng) % (burst + 1));
        for (unsigned j = 0; j < runs; j++) {
            weft__node *x = weft__deque_pop(&t2.d);
            if (!x)
                break;
            pops++;
            t2_take(0, x);
            work((unsigned)(wt_rand(&rng) % 256));
        }
        if (wt_rand(&rng) % 8 == 0)
            t2_grab(0);
        if (++bursts % 64 == 0)
            sched_yield();   /* on a busy machine the thieves may not run otherwise */
    }
    /* Drain: the owner's own deque, then the global ring, until every item is taken. */
    while (atomic_load(&t2.consumed) < t2.n) {
        weft__node *x = weft__deque_pop(&t2.d);
        if (x) {
            pops++;
            t2_take(0, x);
        } else if (t2_grab(0) == 0) {
            sched_yield();
        }
    }
    for (int w = 0; w < T2_THIEVES; w++)
        pthread_join(th[w], NULL);
    double took = now_s() - t0;

    WT_ASSERT(!atomic_load(&t2.bad_check), "an item's payload was not visible to its taker");
    uint64_t lost = 0, dup = 0;
    for (uint64_t tag = 0; tag < t2.n; tag++) {
        unsigned s = 0;
        for (int w = 0; w <= T2_THIEVES; w++)
            s += t2.seen[w][tag];
        lost += s == 0;
        dup += s > 1;
    }
    uint64_t steals = 0, grabs = 0;
    for (int w = 0; w <= T2_THIEVES; w++) {
        steals += t2.steals[w];
        grabs += t2.grabs[w];
    }
    printf("  %.3f s: %llu popped by owner, %llu stolen, %llu via global ring "
           "(%llu offloads, %llu items, %llu spilled to overflow); %llu lost, %llu duplicated\n",
           took, (unsigned long long)pops, (unsigned long long)steals,
           (unsigned long long)grabs, (unsigned long long)offloads,
           (unsigned long long)offloaded, (unsigned long long)weft__inject_get_stats(&t2.q).spilled,
           (unsigned long long)lost, (unsigned long long)dup);
    WT_ASSERT_EQ(lost, 0);
    WT_ASSERT_EQ(dup, 0);
    WT_ASSERT_EQ(pops + steals + grabs, t2.n);
    WT_ASSERT_EQ(grabs, offloaded);
    WT_ASSERT(offloads > 0, "the deque never filled: the overflow path was not exercised");
    WT_ASSERT_EQ(weft__deque_size(&t2.d), 0);
    WT_ASSERT(weft__inject_empty(&t2.q), "items left in the global ring");

    weft__inject_fini(&t2.q);
    weft__deque_fini(&t2.d);
    for (int w = 0; w <= T2_THIEVES; w++)
        free(t2.seen[w]);
    free(t2.items);
}

/* ---- test 3: the last-element race ------------------------------------ */

/* Each round the owner pushes `per_round` items (1: the last-element race,
 * decided by the CAS on top; 2: the owner takes the newer item without a
 * CAS while thieves take the older one, which is where a missing StoreLoad
 * fence in pop shows up as a duplicate), then pops until the deque is
 * empty while two thieves steal. Every item must have exactly one taker. */

#define T3_THIEVES 2

static struct {
    weft__deque d;
    titem *items;
    uint64_t n;                          /* items in all */
    uint8_t *seen[T3_THIEVES + 1];
    uint64_t wins[T3_THIEVES + 1];
    struct { _Alignas(64) _Atomic uint64_t n; } attempts[T3_THIEVES + 1]; /* per thief: steals tried */
    _Atomic int done;
    _Atomic int bad_check;
} t3;

static void *t3_thief(void *arg)
{
    int who = (int)(intptr_t)arg;
    unsigned idle = 0;
    while (!atomic_load_explicit(&t3.done, memory_order_relaxed)) {
        weft__node *x = weft__deque_steal(&t3.d);
        atomic_fetch_add_explicit(&t3.attempts[who].n, 1, memory_order_relaxed);
        if (!x) {
            if (++idle % 4096 == 0)
                sched_yield();   /* oversubscribed: do not starve the owner */
            continue;
        }
        titem *it = (titem *)x;
        if (it->tag >= t3.n || it->check != mix(it->tag))
            atomic_store(&t3.bad_check, 1);
        else
            t3.seen[who][it->tag]++;
        t3.wins[who]++;
    }
    return NULL;
}

static uint64_t t3_attempts(void)
{
    uint64_t sum = 0;
    for (int w = 1; w <= T3_THIEVES; w++)
        sum += atomic_load_explicit(&t3.attempts[w].n, memory_order_relaxed);
    return sum;
}

static void race_rounds(const char *name, unsigned per_round)
{
    uint64_t rounds = wt_scaled(1000000, 10000);
    memset(&t3, 0, sizeof t3);
    t3.n = rounds * per_round;
    begin(name, rounds, "rounds");
    printf("  %u item(s) per round, %d thieves\n", per_round, T3_THIEVES);
    uint64_t rng = wt_seed() ^ (3 + per_round);
    WT_ASSERT_EQ(weft__deque_init(&t3.d, DEQUE_CAP, NULL), WEFT_OK);
    t3.items = xcalloc(t3.n, sizeof *t3.items);
    for (int w = 0; w <= T3_THIEVES; w++)
        t3.seen[w] = xcalloc(t3.n, 1);

    double t0 = now_s();
    pthread_t th[T3_THIEVES];
    for (int i = 0; i < T3_THIEVES; i++)
        WT_ASSERT_EQ(pthread_create(&th[i], NULL, t3_thief, (void *)(intptr_t)(i + 1)), 0);

    unsigned idle_rounds = 0;
    for (uint64_t r = 0; r < rounds; r++) {
        titem *first = &t3.items[r * per_round];
        for (unsigned j = 0; j < per_round; j++) {
            titem *it = first + j;
            it->tag = (uint32_t)(r * per_round + j);
            it->check = mix(it->tag);
            WT_ASSERT(weft__deque_push(&t3.d, &it->link), "round %llu: push into an empty deque failed",
                      (unsigned long long)r);
        }
        /* Three kinds of round: pop at once (the owner usually wins); or
         * wait until a thief is seen trying (so one is on a CPU right now,
         * even on an oversubscribed machine), then pop after a short random
         * delay (a close race) or a longer one (a thief usually wins). */
        uint64_t d = wt_rand(&rng);
        if (d % 4 != 0) {
            uint64_t before = t3_attempts();
            unsigned spins = 0;
            while (t3_attempts() == before && ++spins < 2000)
                ;
            if (spins == 2000 && ++idle_rounds % 64 == 0)
                sched_yield();   /* thieves off-CPU: let them in now and then */
            work(d % 4 == 3 ? (unsigned)(d >> 8) % 1024 : (unsigned)(d >> 8) % 96);
        }
        /* Odd rounds pop as a join does (weft__deque_pop_expected: no
         * early empty look, so the final pop on an empty deque goes
         * through the claim, the fence and the restore). */
        weft__node *x;
        unsigned popped = 0;
        while ((x = (r & 1) ? weft__deque_pop_expected(&t3.d) : weft__deque_pop(&t3.d)) != NULL) {
            titem *it = (titem *)x;
            WT_ASSERT(it >= first && it < first + per_round,
                      "round %llu: pop returned another round's item", (unsigned long long)r);
            WT_ASSERT(++popped <= per_round, "round %llu: popped more than was pushed",
                      (unsigned long long)r);
            t3.seen[0][it->tag]++;
            t3.wins[0]++;
        }
        /* pop said empty: every item of the round has left the deque */
        WT_ASSERT_EQ(weft__deque_size(&t3.d), 0);
        atomic_store_explicit(&progress_done, r + 1, memory_order_relaxed);
    }
    atomic_store(&t3.done, 1);
    for (int i = 0; i < T3_THIEVES; i++)
        pthread_join(th[i], NULL);
    double took = now_s() - t0;

    WT_ASSERT(!atomic_load(&t3.bad_check), "an item's payload was not visible to its thief");
    uint64_t none = 0, multi = 0;
    for (uint64_t i = 0; i < t3.n; i++) {
        unsigned sum = 0;
        for (int w = 0; w <= T3_THIEVES; w++)
            sum += t3.seen[w][i];
        none += sum == 0;
        multi += sum > 1;
    }
    uint64_t thief_wins = 0;
    for (int w = 1; w <= T3_THIEVES; w++)
        thief_wins += t3.wins[w];
    printf("  %.3f s (%.0f ns/round): owner took %llu, thieves took %llu; %llu items without a taker, %llu with several\n",
           took, took * 1e9 / (double)rounds, (unsigned long long)t3.wins[0],
           (unsigned long long)thief_wins, (unsigned long long)none, (unsigned long long)multi);
    WT_ASSERT_EQ(none, 0);
    WT_ASSERT_EQ(multi, 0);
    WT_ASSERT_EQ(t3.wins[0] + thief_wins, t3.n);

    weft__deque_fini(&t3.d);
    for (int w = 0; w <= T3_THIEVES; w++)
        free(t3.seen[w]);
    free(t3.items);
}

WT_TEST(queues, t03_last_element_race, .timeout = 300)
{
    race_rounds("test 3 last-element race", 1);
}

WT_TEST(queues, t03_two_item_race, .timeout = 300)
{
    race_rounds("test 3b two-item race (CAS-free pop vs steal)", 2);
}

/* ---- test 4: the global ring, 4 producers x 2 batch grabbers ---------- */

#define T4_PRODUCERS 4
#define T4_GRABBERS 2

typedef struct pitem {
    weft__node link;   /* first member */
    uint32_t producer;
    uint32_t seq;
} pitem;

static struct {
    weft__inject q;
    pitem *items;                       /* producer p's items at [p * per, (p + 1) * per) */
    uint64_t per;
    uint8_t *seen[T4_GRABBERS];
    uint64_t batches[T4_GRABBERS];
    _Atomic uint64_t consumed;
    _Atomic int order_bad, bad_item;
    _Atomic int producers_left;
} t4;

static void *t4_producer(void *arg)
{
    unsigned p = (unsigned)(intptr_t)arg;
    uint64_t rng = wt_seed() ^ (0x4000 + p);
    pitem *mine = &t4.items[(uint64_t)p * t4.per];
    weft__node *v[8];
    uint64_t i = 0, burst_left = 0;
    while (i < t4.per) {
        /* Bursts of up to twice the ring, then a pause: the ring overflows,
         * the grabbers catch up and drain the list, pushes go back to the
         * ring, over and over. */
        if (burst_left == 0) {
            /* Half the time, wait for the grabbers to bring the queue down
             * to half a ring: the list drains and pushes return to the ring. */
            if (wt_rand(&rng) % 2)
                while (weft__inject_size(&t4.q) > INJECT_CAP / 2)
                    sched_yield();
            burst_left = 1 + wt_rand(&rng) % (2 * INJECT_CAP);
        }
        burst_left--;
        if (wt_rand(&rng) % 2) {
            mine[i].producer = p;
            mine[i].seq = (uint32_t)i;
            weft__inject_push(&t4.q, &mine[i].link);
            i++;
        } else {
            unsigned k = 2 + (unsigned)(wt_rand(&rng) % 7);
            if (k > t4.per - i)
                k = (unsigned)(t4.per - i);
            for (unsigned j = 0; j < k; j++, i++) {
                mine[i].producer = p;
                mine[i].seq = (uint32_t)i;
                v[j] = &mine[i].link;
            }
            weft__inject_push_batch(&t4.q, v, k);
        }
    }
    atomic_fetch_sub(&t4.producers_left, 1);
    return NULL;
}

static void *t4_grabber(void *arg)
{
    int g = (int)(intptr_t)arg;
    uint64_t rng = wt_seed() ^ (0x5000 + (unsigned)g);
    int64_t last[T4_PRODUCERS];
    for (int p = 0; p < T4_PRODUCERS; p++)
        last[p] = -1;
    weft__node *out[32];
    uint64_t total = t4.per * T4_PRODUCERS;
    while (atomic_load_explicit(&t4.consumed, memory_order_relaxed) < total) {
        unsigned max = 1 + (unsigned)(wt_rand(&rng) % 32);
        unsigned k = weft__inject_pop_batch(&t4.q, out, max);
        if (k == 0) {
            sched_yield();
            continue;
        }
        t4.batches[g]++;
        for (unsigned i = 0; i < k; i++) {
            pitem *it = (pitem *)out[i];
            if (it->producer >= T4_PRODUCERS || it->seq >= t4.per ||
                it != &t4.items[it->producer * t4.per + it->seq]) {
                atomic_store(&t4.bad_item, 1);
                continue;
            }
            if ((int64_t)it->seq <= last[it->producer])
                atomic_store(&t4.order_bad, 1);
            last[it->producer] = it->seq;
            t4.seen[g][it->producer * t4.per + it->seq]++;
        }
        atomic_fetch_add_explicit(&t4.consumed, k, memory_order_relaxed);
        atomic_fetch_add_explicit(&progress_done, k, memory_order_relaxed);
    }
    return NULL;
}

WT_TEST(queues, t04_global_ring_4_producers_2_grabbers, .timeout = 300)
{
    t4.per = wt_scaled(250000, 5000);
    uint64_t total = t4.per * T4_PRODUCERS;
    begin("test 4 global ring 4 producers x 2 grabbers", total, "items");
    WT_ASSERT_EQ(weft__inject_init(&t4.q, INJECT_CAP, NULL), WEFT_OK);
    t4.items = xcalloc(total, sizeof *t4.items);
    for (int g = 0; g < T4_GRABBERS; g++)
        t4.seen[g] = xcalloc(total, 1);
    atomic_store(&t4.producers_left, T4_PRODUCERS);

    double t0 = now_s();
    pthread_t prod[T4_PRODUCERS], grab[T4_GRABBERS];
    for (int p = 0; p < T4_PRODUCERS; p++)
        WT_ASSERT_EQ(pthread_create(&prod[p], NULL, t4_producer, (void *)(intptr_t)p), 0);
    for (int g = 0; g < T4_GRABBERS; g++)
        WT_ASSERT_EQ(pthread_create(&grab[g], NULL, t4_grabber, (void *)(intptr_t)g), 0);
    for (int p = 0; p < T4_PRODUCERS; p++)
        pthread_join(prod[p], NULL);
    for (int g = 0; g < T4_GRABBERS; g++)
        pthread_join(grab[g], NULL);
    double took = now_s() - t0;

    uint64_t lost = 0, dup = 0;
    for (uint64_t i = 0; i < total; i++) {
        unsigned s = 0;
        for (int g = 0; g < T4_GRABBERS; g++)
            s += t4.seen[g][i];
        lost += s == 0;
        dup += s > 1;
    }
    weft__inject_stats st = weft__inject_get_stats(&t4.q);
    printf("  %.3f s: %llu batches, %llu items spilled to the overflow list (%.1f%%) "
           "in %llu overflow episodes; %llu lost, %llu duplicated, order %s\n",
           took, (unsigned long long)(t4.batches[0] + t4.batches[1]),
           (unsigned long long)st.spilled, 100.0 * (double)st.spilled / (double)total,
           (unsigned long long)st.overflows,
           (unsigned long long)lost, (unsigned long long)dup,
           atomic_load(&t4.order_bad) ? "VIOLATED" : "kept");
    WT_ASSERT(!atomic_load(&t4.bad_item), "a grabber got a pointer that is not an item");
    WT_ASSERT_EQ(lost, 0);
    WT_ASSERT_EQ(dup, 0);
    WT_ASSERT(!atomic_load(&t4.order_bad), "per-producer FIFO order violated");
    WT_ASSERT(st.overflows > 0, "the overflow list was never used");
    WT_ASSERT(st.spilled < total, "the ring was never used");
    WT_ASSERT(weft__inject_empty(&t4.q), "items left in the global ring");
    WT_ASSERT_EQ(weft__inject_size(&t4.q), 0);

    weft__inject_fini(&t4.q);
    for (int g = 0; g < T4_GRABBERS; g++)
        free(t4.seen[g]);
    free(t4.items);
}
