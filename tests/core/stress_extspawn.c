/* Spawns from outside the workers through per-thread ports (issue 22,
 * item 7): a plain-runner stress program, so that it runs under TSAN too.
 *
 * races_destroy: spawner threads, alive across rounds, spawn to the
 *   round's scheduler in a loop while another thread destroys it; each
 *   spawn either runs exactly once or returns WEFT_ESHUTDOWN (both are
 *   counted), and a spawner stops at its first WEFT_ESHUTDOWN. Rounds
 *   follow back to back and each new scheduler is put at the address of
 *   the one before (the test's allocator hands the freed block back), so
 *   a thread cache keyed by the pointer alone would hand out the old
 *   scheduler's records and push to its freed port: ASan reports the
 *   use-after-free, and every build sees tasks run twice or not at all.
 *   Between spawns to the round's scheduler the spawners spawn to a
 *   scheduler that lives through every round (a thread spawning to two
 *   schedulers in turn), and now and then to a third one, so that a
 *   thread's two entries are evicted and ports given back to schedulers
 *   alive and gone.
 *   Now and then a spawn is a weft_spawn_ex with a name, or at LOW
 *   priority.
 *   The allocator's free hook holds back the free of the scheduler
 *   struct itself (destroy's last step) until every spawner has seen
 *   WEFT_ESHUTDOWN: so no spawn starts after destroy has returned, which
 *   would be the test's use-after-free, not weft's; everything else
 *   destroy frees goes back at once, so a spawn that touched it late is
 *   caught.
 * thread_exit: short-lived threads spawn and exit while the scheduler
 *   lives: their ports go back at thread exit, so ports stay bounded by
 *   the threads alive at once, and every task runs once; then more
 *   threads at once than a queue makes ports for (the rest spawn without
 *   one).
 * bound_thread: a bound thread (beside 0, 1, 2 workers) spawns through
 *   its port, tasks it runs while it waits spawn through it too; it then
 *   unbinds and goes on spawning as a plain thread, through the same
 *   port, and destroy runs what is left: every task runs once.
 * fork_child: a thread with ports forks while others churn the entries
 *   (three schedulers, two entries each: every spawn gives a port back
 *   and claims one); the child, single-threaded, spawns to a scheduler
 *   of its own from outside and destroys it. A child that inherited the
 *   registry's lock held, or that gave back a port of a parent's
 *   scheduler (whose queue lock a vanished thread may hold), would hang.
 * port_fifo: one port of a small queue (capacity 4, so the ring and the
 *   overflow list swap all the time) with its producer racing consumers:
 *   with one consumer every item comes out in order, with two each comes
 *   out once and each consumer sees its items in order; a producer on
 *   the main queue beside it changes neither.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "global_ring.h"
#include "weft.h"
#include "wtest.h"

/* ---- an allocator that hands the scheduler's block back -------------------- */

typedef struct reuse_alloc {
    pthread_mutex_t m;
    pthread_cond_t c;
    void *watched;              /* the round's scheduler: its free waits for `stopped` */
    unsigned stopped, spawners; /* under m */
    void *stash;                /* the last scheduler's block, for the next one; under m */
    bool want_stash;            /* the next allocation is a create's first (the struct); under m */
    size_t stash_size;
    atomic_long blocks;         /* outstanding, the stash included */
} reuse_alloc;

static void *ra_alloc(size_t size, void *ctx)
{
    reuse_alloc *a = ctx;
    pthread_mutex_lock(&a->m);
    void *p = NULL;
    if (a->want_stash && a->stash && a->stash_size == size) {
        p = a->stash;
        a->stash = NULL;
    }
    a->want_stash = false;
    pthread_mutex_unlock(&a->m);
    if (!p) {
        if (posix_memalign(&p, 64, size) != 0)
            return NULL;
        atomic_fetch_add(&a->blocks, 1);
    }
    return p;
}

static void ra_free(void *p, size_t size, void *ctx)
{
    reuse_alloc *a = ctx;
    pthread_mutex_lock(&a->m);
    if (p == a->watched) {
        /* destroy's last free: no spawn on it may start after destroy
         * returns, so wait for every spawner to have stopped. */
        while (a->stopped < a->spawners)
            pthread_cond_wait(&a->c, &a->m);
        a->watched = NULL;
        if (!a->stash) {
            a->stash = p;   /* the next scheduler goes here */
            a->stash_size = size;
            pthread_mutex_unlock(&a->m);
            return;
        }
    }
    pthread_mutex_unlock(&a->m);
    free(p);
    atomic_fetch_sub(&a->blocks, 1);
}

/* ---- races_destroy ------------------------------------------------------------------ */

#define NSPAWNERS 3
#define TRACKED 4096            /* spawns per spawner and round with a counter of their own */

typedef struct race {
    reuse_alloc ra;
    weft_sched *other, *third;  /* live through every round */
    /* The round, under m: the scheduler, and its number (0: none yet,
     * UINT_MAX: the end). */
    pthread_mutex_t m;
    pthread_cond_t c;
    weft_sched *s;
    unsigned round;
    atomic_long ok, refused, ran;                    /* this round's scheduler */
    atomic_long other_ok, other_ran;                 /* `other` and `third`, all rounds */
    atomic_uchar runs[NSPAWNERS][TRACKED];           /* this round: runs of each tracked spawn */
    unsigned made[NSPAWNERS];                        /* this round: each spawner's accepted spawns; under ra.m */
    long reused;                                     /* rounds whose scheduler got the last one's address */
    uint64_t seed;
} race;

typedef struct tracked {
    race *r;
    atomic_uchar *slot;         /* NULL: untracked */
    bool other;
} tracked;

static void count_run(void *arg)
{
    tracked *t = arg;
    if (t->other) {
        atomic_fetch_add_explicit(&t->r->other_ran, 1, memory_order_relaxed);
    } else {
        if (t->slot)
            atomic_fetch_add_explicit(t->slot, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->r->ran, 1, memory_order_relaxed);
    }
    free(t);
}

typedef struct spawner {
    race *r;
    unsigned id;
    pthread_t thread;
} spawner;

static tracked *new_tracked(race *r, atomic_uchar *slot, bool other)
{
    tracked *t = malloc(sizeof *t);
    WT_ASSERT(t != NULL);
    t->r = r;
    t->slot = slot;
    t->other = other;
    return t;
}

static void *spawner_main(void *arg)
{
    spawner *sp = arg;
    race *r = sp->r;
    uint64_t rng = r->seed ^ (0x9e3779b97f4a7c15ull * (sp->id + 1));
    unsigned seen = 0;
    for (;;) {
        pthread_mutex_lock(&r->m);
        while (r->round == seen)
            pthread_cond_wait(&r->c, &r->m);
        seen = r->round;
        weft_sched *s = r->s;
        pthread_mutex_unlock(&r->m);
        if (seen == UINT32_MAX)
            return NULL;
        unsigned n = 0;
        for (;;) {
            /* The round's scheduler, then (mostly) the other one, now
             * and then the third: two entries, three schedulers. */
            tracked *t = new_tracked(r, n < TRACKED ? &r->runs[sp->id][n] : NULL, false);
            uint64_t how = wt_rand(&rng) % 16;
            int rc;
            if (how < 14) {
                rc = weft_spawn(s, count_run, t);
            } else {
                /* weft_spawn_ex from outside: a name (NORMAL, through the
                 * port), or LOW (its ring); the record is taken and, if
                 * refused, given back inside the announcement. */
                weft_spawn_opts o = { 0 };
                o.name = "extspawn";
                o.priority = how == 14 ? WEFT_PRIORITY_NORMAL : WEFT_PRIORITY_LOW;
                rc = weft_spawn_ex(s, count_run, t, &o);
            }
            if (rc == WEFT_ESHUTDOWN) {
                free(t);
                atomic_fetch_add_explicit(&r->refused, 1, memory_order_relaxed);
                break;
            }
            WT_ASSERT_EQ(rc, WEFT_OK);
            atomic_fetch_add_explicit(&r->ok, 1, memory_order_relaxed);
            n++;
            uint64_t x = wt_rand(&rng) % 16;
            if (x < 12) {
                weft_sched *o = x == 0 ? r->third : r->other;
                WT_ASSERT_EQ(weft_spawn(o, count_run, new_tracked(r, NULL, true)), WEFT_OK);
                atomic_fetch_add_explicit(&r->other_ok, 1, memory_order_relaxed);
            }
            if (x == 15)
                sched_yield();
        }
        /* Stopped: no call on s from this thread from here on. */
        pthread_mutex_lock(&r->ra.m);
        r->made[sp->id] = n;
        r->ra.stopped++;
        pthread_cond_broadcast(&r->ra.c);
        pthread_mutex_unlock(&r->ra.m);
    }
}

static weft_sched *race_sched(race *r, unsigned workers)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    c.allocator.alloc = ra_alloc;
    c.allocator.free = ra_free;
    c.allocator.ctx = &r->ra;
    weft_sched *s = NULL;
    pthread_mutex_lock(&r->ra.m);
    r->ra.want_stash = true;   /* create's first allocation is the struct */
    pthread_mutex_unlock(&r->ra.m);
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    return s;
}

WT_TEST(extspawn, races_destroy, .timeout = 280)
{
    static race r;   /* the runs[] array is large */
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.ra.m, NULL);
    pthread_cond_init(&r.ra.c, NULL);
    pthread_mutex_init(&r.m, NULL);
    pthread_cond_init(&r.c, NULL);
    r.seed = wt_seed();
    r.ra.spawners = NSPAWNERS;
    r.other = race_sched(&r, 1);
    r.third = race_sched(&r, 2);
    spawner sp[NSPAWNERS];
    for (unsigned i = 0; i < NSPAWNERS; i++) {
        sp[i].r = &r;
        sp[i].id = i;
        WT_ASSERT_EQ(pthread_create(&sp[i].thread, NULL, spawner_main, &sp[i]), 0);
    }
    static const unsigned workers[] = { 0, 1, 2 };
    unsigned rounds = (unsigned)wt_scaled(1000, 30);
    uint64_t rng = r.seed * 31 + 7;
    long ok = 0, refused = 0;
    void *last = NULL;
    for (unsigned k = 1; k <= rounds; k++) {
        weft_sched *s = race_sched(&r, workers[k % 3]);
        if ((void *)s == last)
            r.reused++;
        last = s;
        atomic_store(&r.ok, 0);
        atomic_store(&r.refused, 0);
        atomic_store(&r.ran, 0);
        for (unsigned i = 0; i < NSPAWNERS; i++)
            for (unsigned j = 0; j < TRACKED; j++)
                atomic_store_explicit(&r.runs[i][j], 0, memory_order_relaxed);
        pthread_mutex_lock(&r.ra.m);
        r.ra.watched = s;
        r.ra.stopped = 0;
        pthread_mutex_unlock(&r.ra.m);
        pthread_mutex_lock(&r.m);
        r.s = s;
        r.round = k;
        pthread_cond_broadcast(&r.c);
        pthread_mutex_unlock(&r.m);
        /* Let them spawn a while (up to 2 ms), then destroy under them. */
        struct timespec d = { 0, (long)(wt_rand(&rng) % 2000000) };
        nanosleep(&d, NULL);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        /* Every spawner has stopped (the free hook waited), and destroy
         * ran everything queued: each accepted spawn ran exactly once. */
        WT_ASSERT_EQ(atomic_load(&r.refused), NSPAWNERS);
        WT_ASSERT_EQ(atomic_load(&r.ran), atomic_load(&r.ok));
        for (unsigned i = 0; i < NSPAWNERS; i++) {
            pthread_mutex_lock(&r.ra.m);
            unsigned made = r.made[i];
            pthread_mutex_unlock(&r.ra.m);
            for (unsigned j = 0; j < TRACKED; j++) {
                unsigned runs = atomic_load_explicit(&r.runs[i][j], memory_order_relaxed);
                WT_ASSERT(runs == (j < made ? 1u : 0u), "round %u: spawn %u of spawner %u (of %u) ran %u times",
                          k, j, i, made, runs);
            }
        }
        ok += atomic_load(&r.ok);
        refused += atomic_load(&r.refused);
    }
    pthread_mutex_lock(&r.m);
    r.round = UINT32_MAX;
    pthread_cond_broadcast(&r.c);
    pthread_mutex_unlock(&r.m);
    for (unsigned i = 0; i < NSPAWNERS; i++)
        pthread_join(sp[i].thread, NULL);   /* their ports of other and third go back */
    WT_ASSERT_EQ(weft_sched_destroy(r.other), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(r.third), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&r.other_ran), atomic_load(&r.other_ok));
    WT_ASSERT(r.reused >= rounds - 1, "only %ld of %u schedulers reused the last address",
              r.reused, rounds);
    pthread_mutex_lock(&r.ra.m);
    if (r.ra.stash) {
        free(r.ra.stash);
        atomic_fetch_sub(&r.ra.blocks, 1);
        r.ra.stash = NULL;
    }
    pthread_mutex_unlock(&r.ra.m);
    WT_ASSERT_EQ(atomic_load(&r.ra.blocks), 0);
    fprintf(stderr, "races_destroy: %u rounds, %ld spawns ran, %ld refused (ESHUTDOWN), "
                    "%ld to the long-lived schedulers\n",
            rounds, ok, refused, atomic_load(&r.other_ok));
}

/* ---- thread_exit --------------------------------------------------------------------- */

static atomic_long exit_ran;

static void exit_task(void *arg)
{
    (void)arg;
    atomic_fetch_add_explicit(&exit_ran, 1, memory_order_relaxed);
}

static void *short_lived(void *arg)
{
    weft_sched *s = arg;
    for (int i = 0; i < 200; i++)
        WT_ASSERT_EQ(weft_spawn(s, exit_task, NULL), WEFT_OK);
    return NULL;
}

struct many_arg {
    weft_sched *s;
    pthread_barrier_t *go;
};

/* Spawns, waits until every such thread has spawned (so all hold their
 * ports, or have none, at once), spawns again past PORTLESS_RETRY. */
static void *many_main(void *arg)
{
    struct many_arg *m = arg;
    for (int i = 0; i < 600; i++)
        WT_ASSERT_EQ(weft_spawn(m->s, exit_task, NULL), WEFT_OK);
    pthread_barrier_wait(m->go);
    for (int i = 0; i < 600; i++)
        WT_ASSERT_EQ(weft_spawn(m->s, exit_task, NULL), WEFT_OK);
    return NULL;
}

WT_TEST(extspawn, thread_exit, .timeout = 120)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = 2;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    atomic_store(&exit_ran, 0);
    unsigned waves = (unsigned)wt_scaled(200, 20);
    for (unsigned k = 0; k < waves; k++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            WT_ASSERT_EQ(pthread_create(&t[i], NULL, short_lived, s), 0);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
    }
    /* Ports go back at thread exit: no more than the threads alive at
     * once (4) were ever needed. */
    WT_ASSERT(ck_pr_load_uint(&s->global.nports) <= 4, "%u ports for 4 threads at a time",
              ck_pr_load_uint(&s->global.nports));
    /* More threads at once than a queue makes ports for: the others
     * spawn without one, and every task still runs once. */
    enum { MANY = WEFT__INJECT_PORTS_MAX + 8 };
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, MANY);
    struct many_arg m = { s, &go };
    pthread_t t[MANY];
    for (int i = 0; i < MANY; i++)
        WT_ASSERT_EQ(pthread_create(&t[i], NULL, many_main, &m), 0);
    for (int i = 0; i < MANY; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&go);
    WT_ASSERT(ck_pr_load_uint(&s->global.nports) <= WEFT__INJECT_PORTS_MAX, "%u ports",
              ck_pr_load_uint(&s->global.nports));
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&exit_ran), (long)waves * 4 * 200 + (long)MANY * 2 * 600);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- bound_thread ------------------------------------------------------------------ */

static atomic_long bound_ran;

static void bound_leaf(void *arg)
{
    (void)arg;
    atomic_fetch_add_explicit(&bound_ran, 1, memory_order_relaxed);
}

/* Runs on a worker, or on the bound thread while it waits (then its
 * spawn goes through the thread's port too). */
static void bound_parent(void *arg)
{
    WT_ASSERT_EQ(weft_spawn((weft_sched *)arg, bound_leaf, NULL), WEFT_OK);
    atomic_fetch_add_explicit(&bound_ran, 1, memory_order_relaxed);
}

WT_TEST(extspawn, bound_thread, .timeout = 200)
{
    long n = (long)wt_scaled(20000, 2000);
    for (unsigned workers = 0; workers <= 2; workers++) {
        for (unsigned flags = 0; flags <= WEFT_BIND_NO_HELP; flags += WEFT_BIND_NO_HELP) {
            weft_config c;
            weft_config_init(&c);
            c.workers = wt_workers(workers);
            weft_sched *s = NULL;
            WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
            atomic_store(&bound_ran, 0);
            WT_ASSERT_EQ(weft_sched_bind_ex(s, workers ? flags : 0), WEFT_OK);
            long expect = 0;
            weft_spawn_opts o = { 0 };
            o.name = "bound";
            for (long i = 0; i < n; i++) {
                if (i % 7 == 0) {
                    WT_ASSERT_EQ(weft_spawn_ex(s, bound_leaf, NULL, &o), WEFT_OK);
                    expect += 1;
                } else {
                    WT_ASSERT_EQ(weft_spawn(s, bound_parent, s), WEFT_OK);
                    expect += 2;
                }
                if (i % 1000 == 999)
                    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);   /* runs tasks here (helping, or with no workers) */
            }
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&bound_ran), expect);
            /* The bound thread's own spawns went through one port. */
            WT_ASSERT_EQ(ck_pr_load_uint(&s->global.nports), 1);
            WT_ASSERT(weft__inject_ports_pushed(&s->global) > 0);
            weft_sched_unbind();
            /* A plain thread now: the same entry and port. */
            for (long i = 0; i < n; i++) {
                WT_ASSERT_EQ(weft_spawn(s, bound_parent, s), WEFT_OK);
                expect += 2;
            }
            WT_ASSERT_EQ(ck_pr_load_uint(&s->global.nports), 1);
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);   /* with no workers, it binds and runs them */
            WT_ASSERT_EQ(atomic_load(&bound_ran), expect);
        }
    }
}

/* ---- fork_child ----------------------------------------------------------------------- */

static atomic_bool churn_stop;

static void *fork_churn(void *arg)
{
    weft_sched **ss = arg;
    for (unsigned i = 0; !atomic_load_explicit(&churn_stop, memory_order_relaxed); i++)
        WT_ASSERT_EQ(weft_spawn(ss[i % 3], exit_task, NULL), WEFT_OK);
    return NULL;
}

static void fork_leaf(void *arg)
{
    ++*(int *)arg;
}

/* The child: no threads of its own (TSAN refuses them after a
 * multi-threaded fork), so a scheduler without workers. */
static void fork_child_main(void)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = WEFT_WORKERS_NONE;
    weft_sched *s = NULL;
    if (weft_sched_create(&s, &c) != WEFT_OK)
        _exit(2);
    int ran = 0;
    for (int i = 0; i < 16; i++)
        if (weft_spawn(s, fork_leaf, &ran) != WEFT_OK)
            _exit(3);
    if (weft_sched_destroy(s) != WEFT_OK)
        _exit(4);
    _exit(ran == 16 ? 0 : 5);
}

WT_TEST(extspawn, fork_child, .timeout = 200)
{
    weft_sched *ss[3];
    for (int i = 0; i < 3; i++) {
        weft_config c;
        weft_config_init(&c);
        c.workers = 1;
        WT_ASSERT_EQ(weft_sched_create(&ss[i], &c), WEFT_OK);
    }
    /* This thread's two entries name parent schedulers, with ports. */
    WT_ASSERT_EQ(weft_spawn(ss[0], exit_task, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(ss[1], exit_task, NULL), WEFT_OK);
    atomic_store(&churn_stop, false);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        WT_ASSERT_EQ(pthread_create(&t[i], NULL, fork_churn, ss), 0);
    unsigned forks = (unsigned)wt_scaled(300, 30), redone = 0;
    for (unsigned k = 0; k < forks; k++) {
        pid_t pid = fork();
        WT_ASSERT(pid >= 0);
        if (pid == 0)
            fork_child_main();
        int st = wt_reap(pid, 20000000000ull);
        if (st == WT_REAP_SANITIZER) {   /* not weft's hang (wtest.h): fork again */
            WT_ASSERT(++redone < 20, "20 children stuck in the sanitizer's allocator");
            continue;
        }
        WT_ASSERT(st != WT_REAP_HUNG, "fork %u: the child hung spawning from outside", k);
        WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork %u: child status %#x", k, st);
    }
    atomic_store(&churn_stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++)
        WT_ASSERT_EQ(weft_sched_destroy(ss[i]), WEFT_OK);
    if (redone)
        printf("fork_child: %u children stuck in the sanitizer's allocator, not counted\n",
               redone);
}

/* ---- port_fifo ------------------------------------------------------------------------- */

typedef struct item {
    weft__node node;
    long seq;                   /* its producer's count */
    int from;                   /* 0: the port's producer, 1: the main queue's */
} item;

typedef struct fifo {
    weft__inject q;
    weft__inject_port *port;
    item *items[2];
    long n;
    unsigned consumers;
    atomic_long taken;
    atomic_uchar *seen[2];
    atomic_bool bad;
} fifo;

static void *fifo_producer(void *arg)
{
    fifo *f = arg;
    for (long i = 0; i < f->n; i++)
        weft__inject_port_push(f->port, &f->items[0][i].node);
    return NULL;
}

static void *fifo_main_producer(void *arg)
{
    fifo *f = arg;
    for (long i = 0; i < f->n; i += 3) {
        weft__node *v[3];
        unsigned k = 0;
        for (; k < 3 && i + k < f->n; k++)
            v[k] = &f->items[1][i + k].node;
        weft__inject_push_batch(&f->q, v, k);
    }
    return NULL;
}

static void *fifo_consumer(void *arg)
{
    fifo *f = arg;
    long last[2] = { -1, -1 };
    long total = 2 * f->n;
    while (atomic_load_explicit(&f->taken, memory_order_relaxed) < total) {
        weft__node *out[8];
        unsigned got = weft__inject_pop_batch(&f->q, out, 1 + (unsigned)(last[0] & 7));
        for (unsigned i = 0; i < got; i++) {
            item *it = (item *)(void *)out[i];
            if (it->seq <= last[it->from])
                atomic_store(&f->bad, true);   /* out of order for this consumer */
            last[it->from] = it->seq;
            if (atomic_fetch_add_explicit(&f->seen[it->from][it->seq], 1, memory_order_relaxed) != 0)
                atomic_store(&f->bad, true);   /* taken twice */
        }
        atomic_fetch_add_explicit(&f->taken, got, memory_order_relaxed);
        if (!got)
            sched_yield();
    }
    return NULL;
}

static void fifo_run(unsigned consumers, long n)
{
    fifo f;
    memset(&f, 0, sizeof f);
    f.n = n;
    WT_ASSERT_EQ(weft__inject_init(&f.q, 4, NULL), WEFT_OK);
    f.port = weft__inject_port_claim(&f.q);
    WT_ASSERT(f.port != NULL);
    for (int k = 0; k < 2; k++) {
        f.items[k] = calloc((size_t)n, sizeof(item));
        f.seen[k] = calloc((size_t)n, sizeof(atomic_uchar));
        WT_ASSERT(f.items[k] && f.seen[k]);
        for (long i = 0; i < n; i++) {
            f.items[k][i].seq = i;
            f.items[k][i].from = k;
        }
    }
    pthread_t prod, mprod, cons[2];
    for (unsigned i = 0; i < consumers; i++)
        WT_ASSERT_EQ(pthread_create(&cons[i], NULL, fifo_consumer, &f), 0);
    WT_ASSERT_EQ(pthread_create(&prod, NULL, fifo_producer, &f), 0);
    WT_ASSERT_EQ(pthread_create(&mprod, NULL, fifo_main_producer, &f), 0);
    pthread_join(prod, NULL);
    pthread_join(mprod, NULL);
    for (unsigned i = 0; i < consumers; i++)
        pthread_join(cons[i], NULL);
    WT_ASSERT(!atomic_load(&f.bad), "an item came out twice, or out of order");
    for (int k = 0; k < 2; k++)
        for (long i = 0; i < n; i++)
            WT_ASSERT_EQ(atomic_load(&f.seen[k][i]), 1);
    WT_ASSERT(weft__inject_empty(&f.q));
    WT_ASSERT_EQ(weft__inject_ports_pushed(&f.q), n);
    weft__inject_stats st = weft__inject_get_stats(&f.q);
    fprintf(stderr, "port_fifo: %u consumer(s), %ld items each from the port and the main "
                    "queue, %llu spilled to overflow lists\n",
            consumers, n, (unsigned long long)st.spilled);
    weft__inject_port_release(&f.q, f.port);
    WT_ASSERT(weft__inject_port_claim(&f.q) == f.port);   /* released ports are reused */
    weft__inject_fini(&f.q);
    for (int k = 0; k < 2; k++) {
        free(f.items[k]);
        free(f.seen[k]);
    }
}

WT_TEST(extspawn, port_fifo, .timeout = 200)
{
    long n = (long)wt_scaled(400000, 20000);
    fifo_run(1, n);
    fifo_run(2, n);
}
