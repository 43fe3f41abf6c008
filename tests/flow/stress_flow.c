/* Stress of src/flow under contention: dependent asyncs spawned from four
 * plain threads and from tasks at once, each after up to six random
 * handles of a shared window of recent ones (finished, running or still
 * waiting: the attach-vs-complete window arises at random, many thousand
 * times per run), and pipelines and groups running beside them. Checks:
 * every async ran exactly once and after each of its predecessors; every
 * pipeline token passed every stage in order; every group member ran.
 * A plain program (the plain runner), run under TSAN too.
 * Sizes follow WEFT_STRESS_SCALE (default 1). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "flow_util.h"

#define WINDOW 64
#define NPRED 6

typedef struct node {
    atomic_int ran;
    int npred;
    struct node *pred[NPRED];
} node;

static atomic_long bad;

static void *run_node(void *arg)
{
    node *n = arg;
    for (int i = 0; i < n->npred; i++)
        if (atomic_load(&n->pred[i]->ran) != 1)
            atomic_fetch_add(&bad, 1);
    if (atomic_fetch_add(&n->ran, 1) != 0)
        atomic_fetch_add(&bad, 1);
    return n;
}

typedef struct shared {
    weft_sched *s;
    pthread_mutex_t lock;          /* the window */
    weft_async *win[WINDOW];       /* each holds a reference of the window's */
    node *wnode[WINDOW];
    long per_thread;
    node *nodes;
    atomic_long next;
} shared;

static unsigned long rnd(unsigned long *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void spawn_some(shared *sh, unsigned long seed)
{
    unsigned long x = seed | 1;
    for (long k = 0; k < sh->per_thread; k++) {
        long id = atomic_fetch_add(&sh->next, 1);
        node *n = &sh->nodes[id];
        weft_async *p[NPRED];
        pthread_mutex_lock(&sh->lock);
        int np = (int)(rnd(&x) % (NPRED + 1));
        int m = 0;
        for (int i = 0; i < np; i++) {
            unsigned slot = (unsigned)(rnd(&x) % WINDOW);
            if (sh->win[slot]) {
                p[m] = sh->win[slot];
                weft_async_retain(p[m]);
                n->pred[m] = sh->wnode[slot];
                m++;
            }
        }
        n->npred = m;
        pthread_mutex_unlock(&sh->lock);
        weft_async *h;
        if (weft_async_spawn(sh->s, run_node, n, p, (size_t)m, &h) != WEFT_OK) {
            atomic_fetch_add(&bad, 1);
            h = NULL;
        }
        for (int i = 0; i < m; i++)
            weft_async_release(p[i]);
        if (!h)
            continue;
        pthread_mutex_lock(&sh->lock);
        unsigned slot = (unsigned)(rnd(&x) % WINDOW);
        weft_async *old = sh->win[slot];
        sh->win[slot] = h;
        sh->wnode[slot] = n;
        pthread_mutex_unlock(&sh->lock);
        weft_async_release(old);
    }
}

static shared sh;

static void *spawner_thread(void *arg)
{
    spawn_some(&sh, (unsigned long)(uintptr_t)arg * 0x9e3779b97f4a7c15ul);
    return NULL;
}

static void spawner_task(void *arg)
{
    spawn_some(&sh, (unsigned long)(uintptr_t)arg * 0x2545f4914f6cdd1dul);
}

/* ---- a pipeline and a group beside them ---------------------------------------- */

typedef struct pctx {
    uint64_t next[3];
    uint64_t ntok;
    atomic_long sum;
} pctx;

static void p_first(weft_pipe *pf, void *arg)
{
    pctx *c = arg;
    if (weft_pipe_token(pf) != c->next[0]++)
        atomic_fetch_add(&bad, 1);
    if (weft_pipe_token(pf) == c->ntok)
        weft_pipe_stop(pf);
}

static void p_par(weft_pipe *pf, void *arg)
{
    atomic_fetch_add(&((pctx *)arg)->sum, (long)weft_pipe_token(pf));
}

static void p_ser(weft_pipe *pf, void *arg)
{
    pctx *c = arg;
    if (weft_pipe_token(pf) != c->next[2]++)
        atomic_fetch_add(&bad, 1);
}

static atomic_long members;

static void member(void *arg)
{
    (void)arg;
    atomic_fetch_add(&members, 1);
}

static void pipe_and_group(void *arg)
{
    weft_sched *s = arg;
    static pctx c;
    memset(&c, 0, sizeof c);
    c.ntok = 2000;
    weft_pipe_stage st[3] = { { WEFT_PIPE_SERIAL, p_first, &c }, { WEFT_PIPE_PARALLEL, p_par, &c },
                              { WEFT_PIPE_SERIAL, p_ser, &c } };
    weft_pipeline *pl;
    if (weft_pipeline_create(3, st, 3, &pl) != WEFT_OK) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    weft_group g;
    weft_group_init(&g, s);
    for (int i = 0; i < 500; i++)
        if (weft_group_spawn(&g, member, NULL) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    if (weft_pipeline_run(s, pl) != WEFT_OK || weft_pipeline_tokens(pl) != c.ntok ||
        atomic_load(&c.sum) != (long)(c.ntok * (c.ntok - 1) / 2))
        atomic_fetch_add(&bad, 1);
    if (weft_group_join(&g) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    weft_group_destroy(&g);
    weft_pipeline_destroy(pl);
}

WT_TEST(flow_stress, mixed, .timeout = 600)
{
    const char *sc = getenv("WEFT_STRESS_SCALE");
    long scale = sc ? atol(sc) : 1;
    if (scale < 1)
        scale = 1;
    WT_FOR_WORKERS(w, 1, 2, 8) {
        enum { THREADS = 4, TASKS = 4 };
        memset(&sh, 0, sizeof sh);
        pthread_mutex_init(&sh.lock, NULL);
        sh.s = flow_sched(w);
        sh.per_thread = 5000 * scale;
        long total = sh.per_thread * (THREADS + TASKS);
        sh.nodes = calloc((size_t)total, sizeof(node));
        atomic_store(&bad, 0);
        atomic_store(&members, 0);
        pthread_t t[THREADS];
        for (uintptr_t i = 0; i < TASKS; i++)
            WT_ASSERT_EQ(weft_spawn(sh.s, spawner_task, (void *)(i + 1)), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(sh.s, pipe_and_group, sh.s), WEFT_OK);
        for (uintptr_t i = 0; i < THREADS; i++)
            WT_ASSERT_EQ(pthread_create(&t[i], NULL, spawner_thread, (void *)(i + 100)), 0);
        for (int i = 0; i < THREADS; i++)
            WT_ASSERT_EQ(pthread_join(t[i], NULL), 0);
        WT_ASSERT_EQ(weft_sched_wait_idle(sh.s), WEFT_OK);
        for (int i = 0; i < WINDOW; i++)
            weft_async_release(sh.win[i]);
        long ran = 0;
        for (long i = 0; i < total; i++)
            ran += atomic_load(&sh.nodes[i].ran);
        WT_ASSERT_EQ(ran, total);
        WT_ASSERT_EQ(atomic_load(&members), 500);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        free(sh.nodes);
        pthread_mutex_destroy(&sh.lock);
        flow_sched_end(sh.s, w);
    }
}
