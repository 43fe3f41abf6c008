/* Task groups (weft/flow.h), from the header first: the public API only,
 * at 0 (this thread bound), 1, 2 and 8 workers.
 *
 *   join_*        a task spawns 200 members and joins: all ran once; a
 *                 plain thread and a bound thread join their own groups;
 *                 a group joined twice (spawns between)
 *   nested        members that make groups of their own, three deep
 *                 (fib 18 by groups): the exact result
 *   block         a member waits on an event that another member sets
 *                 (spawned after it); a member waits for an async handle
 *   cancel        a member cancels the group while 400 more wait behind
 *                 a blocked one: the join says ECANCELED, a spawn after
 *                 the cancel is refused, the skipped members did not run,
 *                 and the next join is WEFT_OK again
 *   cancel_queued 300 members queued, then a cancel: none runs; with
 *                 weft_group_set_skip each calls the skip function once
 *                 with its own heap argument (ASan: none leaks)
 *   respawn       1000 members, each spawning one more of the same group,
 *                 twice over (a member's spawn right after it started,
 *                 where a freed member may be reused at once), from a
 *                 task, a plain thread and a bound one; the first member
 *                 waits for the last to set an event: every member ran
 *                 exactly once, with its own argument
 * Members never assert: they count what went wrong, and the test checks. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "weft.h"
#include "wtest.h"
#include "flow_util.h"

static atomic_long bad;
static atomic_long ran;

static void count(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
}

typedef struct job {
    weft_sched *s;
    int n;
} job;

static void spawner(void *arg)
{
    job *j = arg;
    weft_group g;
    if (weft_group_init(&g, j->s) != WEFT_OK) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < j->n; i++)
            if (weft_group_spawn(&g, count, NULL) != WEFT_OK)
                atomic_fetch_add(&bad, 1);
        if (weft_group_join(&g) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    }
    weft_group_destroy(&g);
}

static void *spawner_thread(void *arg)
{
    spawner(arg);
    return NULL;
}

static void *spawner_bound(void *arg)
{
    job *j = arg;
    if (weft_sched_bind(j->s) != WEFT_OK) {
        atomic_fetch_add(&bad, 1);
        return NULL;
    }
    spawner(arg);
    weft_sched_unbind();
    return NULL;
}

WT_TEST(group, join, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        job j = { s, 200 };
        atomic_store(&bad, 0);
        atomic_store(&ran, 0);
        WT_ASSERT_EQ(weft_spawn(s, spawner, &j), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), 400);
        if (w) {
            on_thread(spawner_thread, &j);
            on_thread(spawner_bound, &j);
            WT_ASSERT_EQ(atomic_load(&ran), 1200);
        } else {
            spawner(&j);   /* this thread is bound */
            WT_ASSERT_EQ(atomic_load(&ran), 800);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        flow_sched_end(s, w);
    }
}

/* ---- nested --------------------------------------------------------------------- */

typedef struct fib {
    weft_sched *s;
    int n;
    long r;
} fib;

static void fib_task(void *arg)
{
    fib *f = arg;
    if (f->n < 2) {
        f->r = f->n;
        return;
    }
    fib a = { f->s, f->n - 1, 0 }, b = { f->s, f->n - 2, 0 };
    weft_group g;
    weft_group_init(&g, f->s);
    if (weft_group_spawn(&g, fib_task, &a) != WEFT_OK || weft_group_spawn(&g, fib_task, &b) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (weft_group_join(&g) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    weft_group_destroy(&g);
    f->r = a.r + b.r;
}

WT_TEST(group, nested, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        atomic_store(&bad, 0);
        fib f = { s, 18, 0 };
        WT_ASSERT_EQ(weft_spawn(s, fib_task, &f), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(f.r, 2584);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        flow_sched_end(s, w);
    }
}

/* ---- blocking on each other ------------------------------------------------------- */

typedef struct blk {
    weft_sched *s;
    weft_event ev;
    weft_async *h;
    atomic_int order;
} blk;

static void waits_event(void *arg)
{
    blk *b = arg;
    if (weft_event_wait(&b->ev) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (atomic_fetch_add(&b->order, 1) != 1)
        atomic_fetch_add(&bad, 1);
}

static void sets_event(void *arg)
{
    blk *b = arg;
    if (atomic_fetch_add(&b->order, 1) != 0)
        atomic_fetch_add(&bad, 1);
    weft_event_signal(&b->ev);
}

static void waits_async(void *arg)
{
    blk *b = arg;
    if (weft_async_wait(b->h) != WEFT_OK || (intptr_t)weft_async_result(b->h) != 5)
        atomic_fetch_add(&bad, 1);
}

static void *five(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)5;
}

static void block_task(void *arg)
{
    blk *b = arg;
    weft_group g;
    weft_group_init(&g, b->s);
    if (weft_async_spawn(b->s, five, NULL, NULL, 0, &b->h) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    /* The waiter first: a join that runs members inline runs the newest
     * (the setter) first, a thief may take the waiter first; both are
     * valid orders. */
    if (weft_group_spawn(&g, waits_event, b) != WEFT_OK || weft_group_spawn(&g, waits_async, b) != WEFT_OK ||
        weft_group_spawn(&g, sets_event, b) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (weft_group_join(&g) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    weft_group_destroy(&g);
    weft_async_release(b->h);
}

WT_TEST(group, block, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        atomic_store(&bad, 0);
        for (int round = 0; round < 100; round++) {
            blk b = { .s = s, .order = 0 };
            weft_event_init(&b.ev, true, false);
            WT_ASSERT_EQ(weft_spawn(s, block_task, &b), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&b.order), 2);
            weft_event_destroy(&b.ev);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        flow_sched_end(s, w);
    }
}

/* ---- cancel ----------------------------------------------------------------------- */

typedef struct cjob {
    weft_sched *s;
    weft_group g;
    weft_event go;
    atomic_int ran_after;
} cjob;

static void blocker(void *arg)
{
    cjob *c = arg;
    weft_group_cancel(&c->g);
    if (!weft_group_cancelled(&c->g))
        atomic_fetch_add(&bad, 1);
    weft_event_signal(&c->go);
}

static void late(void *arg)
{
    cjob *c = arg;
    atomic_fetch_add(&c->ran_after, 1);
}

static void cancel_task(void *arg)
{
    cjob *c = arg;
    weft_group_init(&c->g, c->s);
    /* The members queue behind one another; the first one the joiner or
     * a thief runs cancels the rest (they are checked at their start). */
    weft_event_init(&c->go, true, false);
    if (weft_group_spawn(&c->g, blocker, c) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (weft_event_wait(&c->go) != WEFT_OK)   /* the cancel has happened */
        atomic_fetch_add(&bad, 1);
    for (int i = 0; i < 400; i++)
        if (weft_group_spawn(&c->g, late, c) != WEFT_ECANCELED)
            atomic_fetch_add(&bad, 1);
    if (weft_group_join(&c->g) != WEFT_ECANCELED)
        atomic_fetch_add(&bad, 1);
    if (weft_group_cancelled(&c->g))
        atomic_fetch_add(&bad, 1);
    /* After the join the group takes members again. */
    if (weft_group_spawn(&c->g, late, c) != WEFT_OK || weft_group_join(&c->g) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    weft_group_destroy(&c->g);
    weft_event_destroy(&c->go);
}

WT_TEST(group, cancel, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        atomic_store(&bad, 0);
        cjob c = { .s = s, .ran_after = 0 };
        WT_ASSERT_EQ(weft_spawn(s, cancel_task, &c), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT(atomic_load(&c.ran_after) == 1, "only the member spawned after the join ran");
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        flow_sched_end(s, w);
    }
}

/* Members queued before a cancel are skipped: with nobody to take them
 * meanwhile (no workers and this thread bound; or one worker, busy with
 * the task that spawns them), 300 members are queued, the group is
 * cancelled, and the join runs none of them. */
typedef struct skip {
    weft_sched *s;
    atomic_int ran;
    atomic_int skip_calls;   /* weft_group_set_skip's function */
    bool with_skip;
    int join_rc;
} skip;

/* A member's own heap argument, freed by whichever of fn and skip runs
 * (ASan's leak check sees one that neither freed); without a skip
 * function every member shares one that is not on the heap (a skipped
 * member would leak its own). */
typedef struct member_arg {
    skip *k;
    bool heap;
} member_arg;

static void member_free(member_arg *m)
{
    if (m && m->heap)
        free(m);
}

static void skipped(void *arg)
{
    member_arg *m = arg;
    atomic_fetch_add(&m->k->ran, 1);
    member_free(m);
}

static void on_skip(void *arg)
{
    member_arg *m = arg;
    atomic_fetch_add(&m->k->skip_calls, 1);
    member_free(m);
}

static member_arg *member_of(skip *k)
{
    static member_arg shared;   /* one test at a time uses it */
    member_arg *m = k->with_skip ? malloc(sizeof *m) : &shared;
    if (m)
        *m = (member_arg){ .k = k, .heap = k->with_skip };
    return m;
}

static void queue_and_cancel(void *arg)
{
    skip *k = arg;
    weft_group g;
    weft_group_init(&g, k->s);
    if (k->with_skip)
        weft_group_set_skip(&g, on_skip);
    for (int i = 0; i < 300; i++) {
        member_arg *m = member_of(k);
        if (!m || weft_group_spawn(&g, skipped, m) != WEFT_OK) {
            atomic_fetch_add(&bad, 1);
            member_free(m);
        }
    }
    weft_group_cancel(&g);
    member_arg *late = member_of(k);
    if (!late || weft_group_spawn(&g, skipped, late) != WEFT_ECANCELED)
        atomic_fetch_add(&bad, 1);
    member_free(late);   /* refused: still ours */
    k->join_rc = weft_group_join(&g);
    weft_group_destroy(&g);
}

WT_TEST(group, cancel_queued, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1) {
      for (int with_skip = 0; with_skip < 2; with_skip++) {
        weft_sched *s = flow_sched(w);
        atomic_store(&bad, 0);
        skip k = { .s = s, .ran = 0, .skip_calls = 0, .with_skip = with_skip, .join_rc = 1 };
        if (w == 0)
            queue_and_cancel(&k);
        else {
            WT_ASSERT_EQ(weft_spawn(s, queue_and_cancel, &k), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        }
        WT_ASSERT_EQ(k.join_rc, WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&k.ran), 0);
        WT_ASSERT_EQ(atomic_load(&k.skip_calls), with_skip ? 300 : 0);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        flow_sched_end(s, w);
      }
    }
}

/* ---- members that spawn members of their own group ------------------------------- */

#define RESPAWN_TOP 1000   /* members the first spawner makes; each makes one more, twice over */

static struct {
    weft_group g;
    weft_event ev;
    atomic_int hits[3 * RESPAWN_TOP];
} rs;

static void respawn_member(void *arg)
{
    uintptr_t i = (uintptr_t)arg;
    if (i == 0 && weft_event_wait(&rs.ev) != WEFT_OK)   /* set by the last member, spawned long after */
        atomic_fetch_add(&bad, 1);
    if (i == 3 * RESPAWN_TOP - 1)
        weft_event_signal(&rs.ev);
    if (i >= 3 * RESPAWN_TOP || atomic_fetch_add(&rs.hits[i], 1) != 0)
        atomic_fetch_add(&bad, 1);
    else if (i + RESPAWN_TOP < 3 * RESPAWN_TOP &&
             weft_group_spawn(&rs.g, respawn_member, (void *)(i + RESPAWN_TOP)) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void respawn_top(void *arg)
{
    if (weft_group_init(&rs.g, arg) != WEFT_OK) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    for (uintptr_t i = 0; i < RESPAWN_TOP; i++)
        if (weft_group_spawn(&rs.g, respawn_member, (void *)i) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    if (weft_group_join(&rs.g) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    for (int i = 0; i < 3 * RESPAWN_TOP; i++)   /* every member ended before the join returned */
        if (atomic_load(&rs.hits[i]) != 1)
            atomic_fetch_add(&bad, 1);
    weft_group_destroy(&rs.g);
}

static void *respawn_thread(void *arg)
{
    respawn_top(arg);
    return NULL;
}

WT_TEST(group, respawn, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        for (int from = 0; from < 2; from++) {   /* a task; then a plain thread (this one, bound, with no workers) */
            atomic_store(&bad, 0);
            for (int i = 0; i < 3 * RESPAWN_TOP; i++)
                atomic_store(&rs.hits[i], 0);
            weft_event_init(&rs.ev, true, false);
            if (from == 0) {
                WT_ASSERT_EQ(weft_spawn(s, respawn_top, s), WEFT_OK);
                WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            } else if (w) {
                on_thread(respawn_thread, s);
            } else {
                respawn_top(s);
            }
            WT_ASSERT_EQ(atomic_load(&bad), 0);
            for (int i = 0; i < 3 * RESPAWN_TOP; i++)
                WT_ASSERT_EQ(atomic_load(&rs.hits[i]), 1);
            weft_event_destroy(&rs.ev);
        }
        flow_sched_end(s, w);
    }
}

WT_TEST(group, bad_input, .timeout = 60)
{
    weft_group g;
    WT_ASSERT_EQ(weft_group_init(NULL, NULL), WEFT_EINVAL);
    weft_sched *s = flow_sched(1);
    WT_ASSERT_EQ(weft_group_init(&g, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_group_init(&g, s), WEFT_OK);
    WT_ASSERT_EQ(weft_group_spawn(NULL, count, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_group_spawn(&g, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_group_join(&g), WEFT_OK);   /* empty */
    weft_group_destroy(&g);
    flow_sched_end(s, 1);
}
