/* Subflow sub-graphs of changing sizes, held to what weft/graph.h and
 * docs/reference/graph.md promise of weft_graph_add_subflow (the
 * sub-graph is rebuilt at every visit and keeps its memory; nesting to
 * any depth), public API only. A sub-graph takes its tasks in small
 * blocks and goes to big ones after a large build: these tests cross
 * both limits in either direction.
 *
 *   sizes_*      a chain of 3 tasks, then 9, 70, 5, 1500, 2, 200, 8 in
 *                one sub-graph, visit after visit: each visit's chain
 *                runs whole and in order
 *   steady_*     after the build that crosses to big blocks, the same
 *                large shape again allocates nothing
 *   blocking_*   a large sub-graph's tasks blocking on each other in a
 *                valid order (an event set by a task added later, no
 *                edge between them), after small visits
 *   nested_*     a recursion whose every level holds a few tasks, run
 *                again after its top level grew past the small blocks
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers. A
 * task never asserts: it counts what went wrong in `bad`, which the test
 * checks. */
#include <stdatomic.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"

static atomic_int bad;

/* ---- sizes: a chain whose length changes from one visit to the next ------------------ */

static const int sz_sizes[] = { 3, 9, 70, 5, 1500, 2, 200, 8 };
#define SZ_COUNT ((int)(sizeof sz_sizes / sizeof sz_sizes[0]))
#define SZ_MAX 1500
struct sz_slot {
    int visit, *stamp, *prev;
};
static int sz_stamps[SZ_MAX];
static struct sz_slot sz_slots[SZ_MAX];
static int sz_visit, sz_len;

static void sz_step(void *arg)
{
    struct sz_slot *x = arg;
    if (x->prev && *x->prev != x->visit)
        atomic_fetch_add(&bad, 1);   /* its predecessor has not run in this visit */
    *x->stamp = x->visit;
}

/* A chain of sz_len tasks, each checking that the one before it ran. */
static void sz_fn(weft_subflow *sf, void *arg)
{
    (void)arg;
    weft_task *prev = NULL;
    for (int i = 0; i < sz_len; i++) {
        sz_slots[i] = (struct sz_slot){ sz_visit, &sz_stamps[i], i ? &sz_stamps[i - 1] : NULL };
        weft_task *t = weft_subflow_add(sf, sz_step, &sz_slots[i]);
        if (!t || (prev && weft_task_precede(prev, t) != WEFT_OK)) {
            atomic_fetch_add(&bad, 1);
            return;
        }
        prev = t;
    }
}

static void sz_run(weft_sched *s, weft_graph *g, int visit, int len)
{
    sz_visit = visit;
    sz_len = len;
    run_wait(s, g, "sizes");
    for (int i = 0; i < len; i++)
        WT_ASSERT_EQ(sz_stamps[i], visit);   /* every task of this visit's chain ran */
}

WT_TEST(subflow_sizes, sizes_grow_and_shrink_between_visits, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        WT_ASSERT(weft_graph_add_subflow(g, sz_fn, NULL) != NULL);
        for (int r = 0; r < 2 * SZ_COUNT; r++)
            sz_run(s, g, r + 1, sz_sizes[r % SZ_COUNT]);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- steady: the large shape again allocates nothing ----------------------------------- */

WT_TEST(subflow_sizes, steady_large_shape_allocates_nothing, .timeout = 60)
{
    static walloc a = WALLOC_INIT("graphs");
    weft_set_allocator(walloc_hooks(&a));
    WT_FOR_WORKERS(w, 0, 2) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        WT_ASSERT(weft_graph_add_subflow(g, sz_fn, NULL) != NULL);
        sz_run(s, g, 1, 5);      /* small blocks */
        sz_run(s, g, 2, 1000);   /* many small blocks */
        sz_run(s, g, 3, 1000);   /* emptied after a large build: big blocks from here */
        long calls = atomic_load(&a.calls);
        for (int r = 0; r < 4; r++)
            sz_run(s, g, 4 + r, 1000);
        WT_ASSERT(atomic_load(&a.calls) == calls, "the same large shape allocated: %ld calls",
                  atomic_load(&a.calls) - calls);
        sz_run(s, g, 8, 3);      /* small again: fits the big blocks */
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- blocking: tasks of a large sub-graph wait on each other ------------------------- */

/* Visit k builds bl_sizes[k] independent tasks; the first waits for an
 * event that the last one sets (added after it, no edge between them):
 * a valid order whatever runs first. */
static const int bl_sizes[] = { 2, 4, 300, 6, 300 };
struct bl {
    weft_event ev;
    atomic_int ran;
};

static void bl_wait(void *arg)
{
    struct bl *b = arg;
    if (weft_event_wait(&b->ev) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&b->ran, 1);
}

static void bl_set(void *arg)
{
    struct bl *b = arg;
    weft_event_signal(&b->ev);
    atomic_fetch_add(&b->ran, 1);
}

static void bl_other(void *arg)
{
    struct bl *b = arg;
    atomic_fetch_add(&b->ran, 1);
}

static int bl_n;

static void bl_fn(weft_subflow *sf, void *arg)
{
    for (int i = 0; i < bl_n; i++) {
        weft_fn fn = i == 0 ? bl_wait : i == bl_n - 1 ? bl_set : bl_other;
        if (!weft_subflow_add(sf, fn, arg))
            atomic_fetch_add(&bad, 1);
    }
}

WT_TEST(subflow_sizes, blocking_subtasks_in_a_valid_order, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct bl b;
        weft_event_init(&b.ev, true, false);
        WT_ASSERT(weft_graph_add_subflow(g, bl_fn, &b) != NULL);
        for (int r = 0; r < (int)(sizeof bl_sizes / sizeof bl_sizes[0]); r++) {
            bl_n = bl_sizes[r];
            weft_event_clear(&b.ev);
            atomic_store(&b.ran, 0);
            run_wait(s, g, "blocking");
            WT_ASSERT_EQ(atomic_load(&b.ran), bl_n);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&b.ev);
        close_sched(s, w);
    }
}

/* ---- nested: a recursion after its top level grew ------------------------------------- */

/* Each level adds `width` leaves and one subflow a level down, which
 * the leaves follow; the top level's width changes between runs. */
struct nest_level {
    int depth, width;
    atomic_int *leaves;
};
static struct nest_level nest_levels[16];

static void nest_leaf(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void nest_fn(weft_subflow *sf, void *arg)
{
    struct nest_level *l = arg;
    weft_task *down = NULL;
    if (l->depth > 0) {
        nest_levels[l->depth - 1] = (struct nest_level){ l->depth - 1, 3, l->leaves };
        down = weft_subflow_add_subflow(sf, nest_fn, &nest_levels[l->depth - 1]);
        if (!down)
            atomic_fetch_add(&bad, 1);
    }
    for (int i = 0; i < l->width; i++) {
        weft_task *t = weft_subflow_add(sf, nest_leaf, l->leaves);
        if (!t || (down && weft_task_precede(down, t) != WEFT_OK))
            atomic_fetch_add(&bad, 1);
    }
}

WT_TEST(subflow_sizes, nested_levels_after_the_top_grew, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        atomic_int leaves = 0;
        struct nest_level top = { 12, 3, &leaves };
        WT_ASSERT(weft_graph_add_subflow(g, nest_fn, &top) != NULL);
        static const int widths[] = { 3, 100, 2, 100, 7 };
        for (int r = 0; r < 5; r++) {
            top.width = widths[r];
            atomic_store(&leaves, 0);
            run_wait(s, g, "nested");
            WT_ASSERT_EQ(atomic_load(&leaves), widths[r] + 12 * 3);   /* the top's, then 3 at each level below */
        }
        char *text = dot_text(g);
        WT_ASSERT(strstr(text, "subflow: 8 tasks") != NULL, "%s", text);   /* the top's last visit: 1 subflow, 7 leaves */
        free(text);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}
