/* This file is private to weft: task graphs (src/graph).
 *
 * Files: graph.c (building: nodes, edges, the arena, names), check.c
 * (the check made once per change), run.c (visiting: join counters, continuation,
 * skipping), series.c (a run's start and end, waiting), inspect.c
 * (introspection, failure, cancel marks, state), attr.c (task
 * attributes: priority, pin, semaphore), module.c (graphs in graphs),
 * run_lock.c (a run's start: its graph's lock and the module check),
 * subflow.c (subflow tasks, their sub-graphs, multi-condition tasks),
 * dot.c (the Graphviz dump), report.c (what stall reports say of graphs).
 *
 * Vocabulary
 *   node     a weft_task: one cache line holding the user's function,
 *            its first successors and counters; it is its own queue
 *            record (a hook record of core's), so running allocates
 *            nothing.
 *   visit    what happens to every node exactly once per run: it is
 *            claimed, then run or skipped, then its successors' join
 *            counters drop.
 *   epoch    the number of the run (24 bits, wrapping). A node's ctl word
 *            holds the epoch of its last visit, so nothing needs clearing
 *            between runs: a node whose epoch is not the graph's has not
 *            been visited in the run in flight.
 *   root     a node with no predecessors. The roots array is kept as
 *            edges are added (a node leaves it when it gains its first
 *            predecessor), so a run needs no pass over the nodes.
 *   sink     a node with no successors. A run ends when its last sink has
 *            been visited: every node is a sink or precedes one, so by
 *            then every node has been visited.
 *   spread   how the roots get queued: only roots[0] is queued by the run;
 *            each root queues the roots heading the halves of its range of
 *            the roots array (recursive halving, the ranges implied by the
 *            place, run.c), so many roots fan out over the workers in
 *            O(log n) steps, thieves take whole ranges, and no thread
 *            pushes them all through one deque. Not where a root has a
 *            priority or a pin: there the first root queues them all,
 *            each where it goes (attr.c, weft__attr_place_roots).
 */
#ifndef WEFT_GRAPH_H
#define WEFT_GRAPH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core_api.h"
#include "spin.h"

/* Successors kept in the node itself, as indices; longer lists are
 * arrays of indices in the arena, their capacity in the word before them
 * (graph.c). */
#define WEFT__SUCC_INLINE 2
/* A task with fewer successors than this is searched for the successor
 * being added (an edge added twice is one edge): at most this many
 * compares, in the node's own line or one more. From this many on, adds
 * append without a search and the check removes duplicates once
 * (graph.c). */
#define WEFT__SUCC_SCAN 8

/* Nodes come in blocks of 2^WEFT__BLOCK_SHIFT (64 KiB, allocated but not
 * touched until used), so a node's address never changes and index ->
 * node is two loads. */
#define WEFT__BLOCK_SHIFT 10
#define WEFT__BLOCK_NODES (1u << WEFT__BLOCK_SHIFT)
/* A subflow task's sub-graph starts with blocks of 2^WEFT__SMALL_SHIFT
 * nodes (512 bytes, from the allocator): most hold a few tasks, and a
 * 64 KiB block each put every sub-graph's nodes on a page of its own (a
 * recursive fib(22): 28 000 sub-graphs, 170 MB resident, each call's
 * nodes a TLB and cache miss). One that held more than
 * WEFT__SMALL_MAX_NODES tasks at its emptying goes to big blocks for its
 * next builds (graph.c, weft__graph_clear). The shift is the graph's
 * (bshift, bmask), fixed while it holds tasks. */
#define WEFT__SMALL_SHIFT 3
#define WEFT__SMALL_MAX_NODES 64
/* Its first arrays' capacities, inline in its header (two lines). */
#define WEFT__INL_ROOTS 8
#define WEFT__INL_SUBFLOWS 2
#define WEFT__INL_BLOCKS 2

/* ---- a node's ctl word ---------------------------------------------------
 *   bit 0      CANCEL: set by weft_task_cancel, cleared by weft_task_reset.
 *   bit 1      POISON: the visit made ready by the node's strong
 *              predecessors is to skip it (one was skipped or failed): set
 *              by the predecessor whose visit makes it ready (from the
 *              join's WEFT__JOIN_POISON when it has several), before the
 *              node is queued or continued; cleared when it is claimed.
 *   bits 2-3   what the last visit did: NONE, RAN, SKIPPED or FAILED (RAN,
 *              then weft_task_fail: set when fn returns).
 *   bit 4      COND: a condition task (weft_graph_add_cond); its edges out
 *              are weak. Set at add, never changed.
 *   bit 5      WEAK_IN: a condition task has an edge to this one, so with
 *              no strong predecessor it is still no root. Set by an edge,
 *              never cleared (edges are never removed).
 *   bit 6      QUEUED (graphs with condition tasks only): the node's own
 *              record is in a queue. A node picked again before that
 *              record has run is queued through a task record of core's
 *              instead (run.c): a record can sit in one queue only.
 *   bit 7      ATTR: the task has attributes (priority, pin or semaphore:
 *              attr.c), kept in g->attrs. Set and cleared by the
 *              weft_task_set_* calls between runs (an RMW: a cancel may
 *              race), read by the general walk only (run.c).
 *   bits 8-31  the epoch of the last visit. */
enum {
    WEFT__CTL_CANCEL = 1u << 0,
    WEFT__CTL_POISON = 1u << 1,
    WEFT__CTL_VISIT_SHIFT = 2,
    WEFT__CTL_VISIT_MASK = 3u << 2,
    WEFT__CTL_COND = 1u << 4,
    WEFT__CTL_WEAK_IN = 1u << 5,
    WEFT__CTL_QUEUED = 1u << 6,
    WEFT__CTL_ATTR = 1u << 7,
    WEFT__CTL_KEEP = WEFT__CTL_CANCEL | WEFT__CTL_COND | WEFT__CTL_WEAK_IN | WEFT__CTL_QUEUED |
                     WEFT__CTL_ATTR,   /* what a claim keeps */
    WEFT__CTL_EPOCH_SHIFT = 8,
};
enum { WEFT__VISIT_NONE = 0, WEFT__VISIT_RAN = 1, WEFT__VISIT_SKIPPED = 2, WEFT__VISIT_FAILED = 3 };
#define WEFT__EPOCH_MASK ((1u << 24) - 1)
#define WEFT__CTL_VISIT(c) (((c) & WEFT__CTL_VISIT_MASK) >> WEFT__CTL_VISIT_SHIFT)
#define WEFT__CTL_EPOCH(c) ((c) >> WEFT__CTL_EPOCH_SHIFT)
/* A node's join word during a run, for a node with more than one strong
 * predecessor: the count of them not yet visited, and this bit, set by
 * one that was skipped or failed (run.c). The visit that takes the count
 * to 0 moves the bit into ctl's POISON for the visit it makes ready; a
 * visit resets the word (each visit counts afresh), so a poison of a
 * count that never ended (a loop) does not skip a condition's pick. */
#define WEFT__JOIN_POISON (1u << 31)

/* Which copy of the walk a run's visits take (weft_graph.special, run.c):
 * the plain one; the condition walk, for a graph whose only special kind
 * is the condition task; the general one; the nest walk, the general one
 * less attr.c's tests and condition tasks, for a graph that would run the
 * general one but has no task with attributes and no condition task (a
 * subflow's sub-graph, mostly). */
enum { WEFT__WALK_PLAIN = 0, WEFT__WALK_COND = 1, WEFT__WALK_ALL = 2, WEFT__WALK_NEST = 3 };

/* Never an epoch: the initial value of done and cancel_epoch. */
#define WEFT__NO_EPOCH UINT32_MAX

/* One cache line. The node is itself its queue record: a hook record of
 * core's (node.h), which core runs as weft__node_entry(node) and of which
 * it reads only the link, so a node needs none of a task record's
 * fields. */
struct weft_task {
    weft__node link;                /* core's; carries WEFT__NODE_HOOK */
    weft_fn fn;                     /* NULL: an empty task */
    void *arg;
    weft_graph *g;
    union {
        uint32_t inl[WEFT__SUCC_INLINE];   /* nsucc <= WEFT__SUCC_INLINE */
        uint32_t *arr;                     /* otherwise, in the arena */
    } succ;                         /* successor indices; built under g's lock */
    uint32_t nsucc;                 /* distinct, except past WEFT__SUCC_SCAN before a check */
    uint32_t npred;                 /* strong predecessors (not condition tasks), counted as nsucc is */
    _Atomic uint32_t join;          /* between runs: npred; during a run:
                                       predecessors not yet visited; for a
                                       root (npred 0): its place in g->roots */
    _Atomic uint32_t ctl;           /* see above */
    _Atomic uint32_t done;          /* epoch in which fn last returned */
    uint32_t index;                 /* position in the graph, from 0 */
};

_Static_assert(sizeof(struct weft_task) == 64, "a graph node is one cache line");

/* A subflow task's record (subflow.c): in its graph's sfrecs array, the
 * task's arg holding its place there. Its sub-graph is made (or taken
 * from the graph's spares) by the first add of a visit's function, not
 * by the task's add: a recursion's leaves (half of its calls) add
 * nothing and never touch a sub-graph. A record only moves (the array
 * grows) while its graph is built, never while it runs, and the
 * function's sf is its record: valid while the function runs. */
typedef struct weft__sfrec {
    weft_task *task;                /* the subflow task */
    weft_subflow_fn fn;             /* the user's function and arg */
    void *arg;
    _Atomic(struct weft_graph *) sub;   /* NULL until a visit's function first adds */
    atomic_bool busy;               /* a visit of task is building or running its sub-graph */
} weft__sfrec;

/* A condition task's edges out are weak; nothing else changes a kind
 * bit, so a relaxed load of ctl is enough. */
static inline bool weft__is_cond(const weft_task *t)
{
    return atomic_load_explicit(&((weft_task *)t)->ctl, memory_order_relaxed) & WEFT__CTL_COND;
}

/* Has t attributes (attr.c)? Only the general walk asks: a graph with a
 * task that has them runs special (weft__run_setup). */
static inline bool weft__has_attr(const weft_task *t)
{
    return atomic_load_explicit(&((weft_task *)t)->ctl, memory_order_relaxed) & WEFT__CTL_ATTR;
}

/* Is t in the roots array: no predecessor at all, strong or weak? */
static inline bool weft__is_root(const weft_task *t)
{
    return t->npred == 0 &&
           !(atomic_load_explicit(&((weft_task *)t)->ctl, memory_order_relaxed) & WEFT__CTL_WEAK_IN);
}

static inline uint32_t *weft__succ(weft_task *t)
{
    return t->nsucc <= WEFT__SUCC_INLINE ? t->succ.inl : t->succ.arr;
}

/* The node as core's queue record (a hook record: core reads the link). */
static inline weft__task *weft__node_rec(weft_task *t)
{
    return (weft__task *)(void *)&t->link;
}

/* A task's failure as visits and runs keep it (weft__visiting.fail,
 * weft_graph.fail_err): 0 = none; else whose code it is in the high half
 * and the code itself in the low half. A user's err may be any int but 0,
 * weft's own codes included, so the code alone cannot say whose it is:
 * the run's result can (WEFT_EFAILED for a user's, weft's code as is). */
#define WEFT__FAIL_USER ((uint64_t)1 << 32)   /* weft_task_fail's err */
#define WEFT__FAIL_WEFT ((uint64_t)2 << 32)   /* a WEFT_E* weft failed the task with */
/* Not a failure: a module's graph's run skipped tasks (module_done). */
#define WEFT__FAIL_SKIPPED ((uint64_t)3 << 32)

static inline uint64_t weft__fail_user(int err)
{
    return WEFT__FAIL_USER | (uint32_t)err;
}

static inline uint64_t weft__fail_weft(int err)
{
    return WEFT__FAIL_WEFT | (uint32_t)err;
}

/* The code a failure word carries (0 for none). */
static inline int weft__fail_code(uint64_t f)
{
    return (int)(int32_t)(uint32_t)f;
}

/* What a run whose first failure is f returns (weft_graph_wait): OK for
 * none, WEFT_EFAILED for a user's, weft's code for weft's. */
static inline int weft__fail_result(uint64_t f)
{
    return f == 0 ? WEFT_OK : (f & WEFT__FAIL_USER) ? WEFT_EFAILED : weft__fail_code(f);
}

/* What a fiber visiting nodes shows of itself (weft__fstate.upper points
 * at it, in weft__node_entry's frame): the node whose function runs, and
 * the failure its function asked for (weft_task_fail) or weft gives it
 * (0: none). Owner only. */
typedef struct weft__visiting {
    weft_graph *g;                  /* the graph whose nodes this fiber visits */
    weft_task *cur;                 /* NULL until the first function runs */
    unsigned nest;                  /* fstate.nest where the functions run:
                                       deeper is work nested in one */
    uint64_t fail;                  /* a failure word (WEFT__FAIL_*) */
    weft_sem *unit;                 /* attr.c: the semaphore a unit of which the
                                       node visited next holds, NULL = none;
                                       given back once its function returns */
    bool skip;                      /* attr.c: the node visited next is skipped,
                                       whatever a reset does meanwhile: it was
                                       let through without its unit */
    uint32_t *left;                 /* run.c, node_entry's hops: the takes this
                                       record has left, NULL = no hop */
    weft_task *other;               /* run.c: the node of another graph the walk
                                       took to go on with (a hop), or NULL */
} weft__visiting;

/* The visit whose task's function is the code running now, or NULL:
 * not on a fiber visiting nodes, before its first function, or in work
 * nested in the function (an inline child, a loop's chunk: fstate.nest
 * deeper than the visit's). */
static inline weft__visiting *weft__visiting_fn(void)
{
    weft__worker *w = weft__tls_worker;
    if (!w)
        return NULL;
    const weft__fstate *st = weft__fstate_cur(w);
    weft__visiting *vis = (weft__visiting *)st->upper;
    return vis && vis->cur && vis->nest == st->nest ? vis : NULL;
}

/* No failed task: weft_graph.failed. */
#define WEFT__NO_TASK UINT32_MAX

/* A task's name: a block of its own from the allocator, cap bytes for
 * the string and its NUL; g->names points at s. */
typedef struct weft__name {
    size_t cap;
    char s[];
} weft__name;

/* A chunk of the arena: successor arrays. */
typedef struct weft__chunk {
    struct weft__chunk *next;
    size_t size;                    /* bytes, header included */
} weft__chunk;

/* A graph's life tag (base.h's life tags): written by create, turned to
 * WEFT__TAG_DEAD by destroy. In checked builds (WEFT_DEBUG) destroy keeps
 * the header, dead, among the blocks freed late (base.h, weft__free_late:
 * the last 4096) instead of freeing it at once, and a task's node
 * keeps pointing at it while its block is kept, so a call on the graph,
 * or on one of its tasks, after destroy aborts naming the graph instead
 * of reading freed memory. Release builds free the header at once (a use
 * after destroy is undefined, as weft.h says). */
#define WEFT__TAG_GRAPH 0x67720001u

struct weft_graph {
    uint32_t tag;                   /* WEFT__TAG_GRAPH, or DEAD after destroy: written by create and destroy only */
    /* Build state: under lock. */
    weft__spin lock;                /* a spin lock (spin.h); see run.c for why not a mutex */
    bool cyclic;                    /* found a cycle: stays (no edge removal) */
    bool need_dedup;                /* a list past WEFT__SUCC_SCAN grew unsearched */
    bool need_order;                /* back_edges and an edge since the last order check */
    /* subflow.c, "Solo builds": a sub-graph its task's own visit builds
     * without the lock (while lock's word is WEFT__LOCK_SOLO). solo_op:
     * 1 while the visit is inside an unlocked add or edge; solo_revoked:
     * a taker of the lock ended this build's solo (no new arming until
     * the next emptying); solo_fib: the visit's fiber. */
    _Atomic uint8_t solo_op;
    _Atomic uint8_t solo_revoked;
    bool has_cond;                  /* a condition task is in it: runs end by `pending` */
    bool has_module;                /* a module task is in it (module.c) */
    uint32_t *modules;              /* indices of its module tasks */
    uint32_t nmodules, modules_cap;
    bool has_subflow;               /* a subflow task is in it (subflow.c) */
    bool has_nested;                /* has_module || has_subflow: one test in the visit */
    struct weft__sfrec *sfrecs;     /* its subflow tasks' records, in add order (subflow.c) */
    uint32_t nsubflows, subflows_cap;
    /* subflow.c: g as a subflow task's sub-graph. Written by the add that
     * makes it and by the task's visit (sf_up), read by the visit. */
    weft_subflow_fn sf_fn;          /* the task's function, NULL: g is no sub-graph */
    void *sf_arg;
    weft_task *sf_task;             /* the subflow task (of another graph) owning g */
    weft_task *sf_up;               /* during a join's run: sf_task (cancel crosses it) */
    _Atomic(weft__fiber *) solo_fib;   /* subflow.c: the fiber of the visit building g solo */
    bool sf_dirty;                  /* the last run ended with a failure or not OK
                                       (series.c, under lock): a visit that builds
                                       nothing clears what it left (subflow.c) */
    _Atomic(struct weft_graph *) sf_spare;   /* sub-graphs of tasks emptied away, kept for reuse;
                                       written under lock, read without it by a
                                       visit's prefetch (subflow.c) */
    struct weft_graph *sf_next;     /* next in the owner's sf_spare */
    weft__chunk *spare_chunks;      /* arena chunks kept by an emptying (weft__graph_clear) */
    uint32_t n;                     /* nodes; in the sf_* line, which a visit reads */
    /* A sub-graph's first roots, blocks and subflow records (graph.c,
     * weft__graph_small_blocks): two lines of the header instead of
     * three blocks of their own; the first growth copies them out.
     * Unused by other graphs. */
    uint32_t roots_inl[WEFT__INL_ROOTS];
    weft_task *blocks_inl[WEFT__INL_BLOCKS];
    struct weft__sfrec sfrecs_inl[WEFT__INL_SUBFLOWS];
    uint64_t checked_in;            /* run_lock.c: the module check that found g and every
                                       graph under it sound (0 = none), so that one
                                       check looks at a shared graph once */
    uint32_t checked_height;        /* run_lock.c: then, the module levels under g */
    weft_task **blocks;             /* node blocks */
    uint32_t nblocks, blocks_cap;
    uint32_t bshift, bmask;         /* a block's nodes: 1 << bshift, mask bmask; changed only
                                       while g holds no task (graph.c) */
    weft__chunk *chunks;            /* the arena */
    char *bump, *bump_end;
    char **names;                   /* by node index: a weft__name's s, or NULL */
    uint32_t names_cap;
    uint32_t *roots;                /* indices of the nodes with no predecessor, kept as edges are added */
    uint32_t nroots, roots_cap;
    uint32_t nsinks;                /* nodes with no successor */
    uint32_t *big;                  /* indices of nodes with WEFT__SUCC_SCAN successors or more */
    uint32_t nbig, big_cap;
    uint64_t back_edges;            /* strong edges u -> v with u added after v */
    /* report.c: in the list of graphs that tracked fibers wait for (stall
     * reports describe them), under report.c's lock. */
    atomic_bool listed;
    struct weft_graph *listed_prev, *listed_next;

    /* Run state. */
    weft_sched *sched;              /* the run's scheduler: written before the roots are queued */
    _Atomic uint32_t run;           /* epoch << 1 | running; written under lock */
    _Atomic uint32_t cancel_epoch;  /* weft_graph_cancel: the epoch it cancelled */
    int result;                     /* the last run's result: under lock */
    weft__waitq waiters;            /* under lock */
    bool fail_fast;                 /* under lock, read by the run it starts */
    uint64_t runs_left;             /* runs of the series after this one (run_n); under lock */
    uint64_t trace_start;           /* the trace clock when this run was queued, 0 = not recording (series.c) */
    bool (*until)(void *);          /* run_until's predicate, NULL = none; under lock */
    void *until_ctx;
    bool until_while;               /* the predicate is run_while's: go on while true */
    uint64_t queued;                /* weft_graph_run_queued: runs queued behind this one; under lock */
    bool inside;                    /* the run in flight is part of another graph's
                                       (weft__graph_up): set by its start, read by claims */
    _Atomic uint64_t up_clear;      /* module.c: a weft__cancel_gen at which no graph
                                       this run is inside was cancelled (0 = not
                                       known); set by the start, or by a claim
                                       that looked up the chain */
    uint8_t special;                /* the run in flight's walk (WEFT__WALK_*): PLAIN, COND
                                       (has_cond only), ALL (has_nested, inside, nattr or
                                       small blocks too) or NEST (ALL's, with neither nattr
                                       nor has_cond): set by its start (run.c) */
    weft_task *parent;              /* running as a module (or a subflow's sub-graph):
                                       the task (of another graph) whose visit started
                                       this run; under lock, read by the run's visits
                                       (its start publishes it) */
    struct weft__attr *attrs;       /* attr.c: by node index, made at the first
                                       weft_task_set_* call; NULL = none. Under
                                       lock between runs; read by the run's visits */
    uint32_t attrs_cap;
    uint32_t nattr;                 /* tasks with WEFT__CTL_ATTR: the run goes special */
    uint32_t npinned;               /* of them pinned: weft_graph_run checks their threads */
    uint32_t nhigh;                 /* of them HIGH: visits leave the picking to core */
    bool flat_roots;                /* a root has a place (priority or pin): the first
                                       root queues every root where it goes and none
                                       spreads (attr.c, weft__attr_place_roots); set by the start */
    uint32_t flat_epoch;            /* the run whose roots the first root queued: its
                                       own record's, which the queue orders after */

    /* Written by the workers during a run: a line of its own. */
    _Alignas(WEFT_CACHELINE) _Atomic uint32_t sinks_left;
    atomic_bool skipped;            /* a node was skipped this run */
    _Atomic uint64_t fail_err;      /* the run's first failure (a WEFT__FAIL_* word), 0 = none */
    _Atomic uint64_t pending;       /* graphs with condition tasks: records queued or running (run.c) */
    _Atomic uint32_t failed;        /* its task's index, WEFT__NO_TASK = none */
};

static inline weft_task *weft__graph_node(const weft_graph *g, uint32_t i)
{
    return &g->blocks[i >> g->bshift][i & g->bmask];
}

/* weft__graph_node in a walk: unless the walk is the general one (all),
 * its graph has big blocks (a graph with small ones runs WEFT__WALK_ALL:
 * weft__run_setup), so the shift is the constant. */
static inline weft_task *weft__graph_node_sp(const weft_graph *g, uint32_t i, const bool all)
{
    return all ? weft__graph_node(g, i) : &g->blocks[i >> WEFT__BLOCK_SHIFT][i & (WEFT__BLOCK_NODES - 1)];
}

/* Starts fetching every line of g's header at once (a hint: nothing of
 * g is read). For a recursion's sub-graphs, kept from run to run and
 * cold when a visit comes back to them (subflow.c, module.c), so that
 * their lines arrive together instead of one miss after another. */
static inline void weft__graph_prefetch(const weft_graph *g)
{
    for (size_t off = 0; off < sizeof *g; off += WEFT_CACHELINE)
        __builtin_prefetch((const char *)g + off, 1);
}

/* run_lock.c */
/* weft__graph_lock, giving up after about patience_ns (UINT64_MAX: never):
 * false, not held. For stall reports, which must not hang on a graph. */
bool weft__graph_lock_for(weft_graph *g, uint64_t patience_ns);

/* g's spin lock (run.c says why not a mutex). Inline: every build call
 * takes it, and uncontended it is one exchange. */
/* Aborts, in checked builds, if g (or t's graph) was destroyed: call is
 * the public function's name. */
#define WEFT__GRAPH_CHECK(g, call) WEFT__CHECK_TAG((g)->tag, WEFT__TAG_GRAPH, (call), "graph", (g))
#define WEFT__TASK_CHECK(t, call) WEFT__GRAPH_CHECK((t)->g, (call))

/* subflow.c, "Solo builds": g's lock word while the visit that builds
 * g holds it to build without taking it (1: held, 0: free). A taker's
 * exchange that reads it holds the lock and ends the solo build
 * (weft__solo_revoke, steps R1-R3) before it reads or writes anything of
 * g; a plain lock never reads it otherwise, so a graph that is no
 * sub-graph pays nothing for it. */
#define WEFT__LOCK_SOLO 2u
/* subflow.c: R1-R3, by a thread whose exchange read WEFT__LOCK_SOLO
 * (it holds the lock now). */
void weft__solo_revoke(weft_graph *g);
/* run_lock.c: the contended half of weft__graph_lock (old: what its
 * exchange read). */
void weft__graph_lock_slow(weft_graph *g, uint32_t old);

static inline void weft__graph_lock(weft_graph *g)
{
    WEFT__GRAPH_CHECK(g, "weft_graph call (its lock)");   /* every build and inspect call takes it */
    uint32_t old = atomic_exchange_explicit(&g->lock.v, 1, memory_order_acquire);   /* acquire: pairs with the release in unlock, or the visit's arming */
    if (WEFT_UNLIKELY(old != 0))
        weft__graph_lock_slow(g, old);
}

static inline void weft__graph_unlock(weft_graph *g)
{
    weft__spin_unlock(&g->lock);   /* release: pairs with the acquire in lock */
}

/* The record function of every node. */
void weft__node_entry(void *arg);

/* run.c: visits t and goes on from there on this fiber, as a record of
 * t's graph does (weft__node_entry). completion: NULL, or t is a module
 * task whose graph's run just ended with *completion (0: it ran; its
 * first failure's word; WEFT__FAIL_SKIPPED: it skipped tasks), and t's
 * visit is finished with that instead of starting. */
void weft__graph_walk(weft__worker *w, weft_task *t, const uint64_t *completion);
/* series.c: a run's setup under the lock (its epoch, counts, series);
 * returns the first root to queue. Caller holds g's lock; g is checked,
 * has roots and is not running. */
weft_task *weft__run_setup(weft_graph *g, weft_sched *s, uint64_t runs_left,
                           bool (*until)(void *), void *ctx);
/* series.c: claims the waiters and ends the run (step 4), leaving run at
 * the run's epoch; rc is its result. */
void weft__run_finish(weft_graph *g, int rc);
/* series.c: weft__run_finish for a module's run (g->parent set), under
 * the same lock clearing g->parent; returns what it was. */
weft_task *weft__run_finish_up(weft_graph *g, int rc);
/* series.c: the visit that took sinks_left to 0 ends the run: a module's
 * goes back to its task, a series starts its next run, else the run
 * finishes with its result. tail: this is the record's last act (w goes
 * back to its loop after it: run.c, step 4). Callable from: that visit's
 * walk (run.c). */
void weft__run_ended(weft__worker *w, weft_graph *g, bool tail);

/* series.c: a join's start (subflow.c, weft_subflow_join) of sub-graph
 * g in one hold of its lock: what weft_graph_run(s, g) does, with
 * g->sf_up set to its task before the setup, where start() would take
 * its short way (no run in flight, no module, no pinned task, a root, w
 * a worker of s); returns WEFT_OK (queued from w), WEFT__JOIN_EMPTY (g
 * holds no task: nothing done), WEFT__JOIN_GENERAL (none of that holds:
 * nothing done, the caller takes weft_graph_run's way), or the check's
 * ECYCLE or ENOMEM (nothing run). Callable from: the join, on w. */
#define WEFT__JOIN_EMPTY (-1001)
#define WEFT__JOIN_GENERAL (-1002)
int weft__run_start_join(weft_sched *s, weft_graph *g, weft__worker *w);

/* The task of another graph that g's run in flight is part of: the
 * module or subflow task that started it (parent), or the subflow task
 * whose join started it (sf_up); NULL for a run of its own. */
static inline weft_task *weft__graph_up(const weft_graph *g)
{
    return g->parent ? g->parent : g->sf_up;
}

/* module.c */
/* Module graphs nest at most this deep (modules inside modules): a
 * deeper chain is refused as a cycle would be (ECYCLE), which also bounds
 * the check's recursion, and the DOT dump draws no deeper (dot.c). */
#define WEFT__MODULE_DEPTH 64
/* The function of every module task (never called: it marks them). */
void weft__module_mark(void *sub);
static inline bool weft__is_module(const weft_graph *g, const weft_task *t)
{
    return WEFT_UNLIKELY(g->has_module) && t->fn == weft__module_mark;
}
/* A module task's visit, after its claim: starts its graph's run as part
 * of this one. true: started (the task's visit finishes when that run
 * ends: weft__module_end); false: *rc says why not (OK: nothing to run,
 * the task is done now; else it fails with *rc). */
bool weft__module_start(weft__worker *w, weft_task *m, weft_graph *sub, int *rc);
/* A module or subflow task's visit, after its claim (ran, not failed
 * before its start): a subflow's function builds its sub-graph first
 * (subflow.c); then the graph's run starts as part of this one. true:
 * started (t finishes when it ends: weft__module_end; hooked: the trace
 * hook's task end is recorded); false: t is done now, or failed
 * (vis->fail). Callable from: the visit (run.c), vis->cur is t. */
bool weft__nested_start(weft__worker *w, weft__visiting *vis, weft_task *t, bool hooked);
/* The end of a run of sub that a module task started, with result rc
 * and first failure fail (its word, 0 = none): ends sub's run, then
 * finishes the module task's visit with them and goes on in its graph. */
void weft__module_end(weft__worker *w, weft_graph *sub, int rc, uint64_t fail);
/* Counts the cancels of runs (weft_graph_cancel, fail-fast), from 1:
 * bumped (release) after each sets its mark (cancel_epoch). A run inside
 * another graph's (g->inside) that found no graph above it cancelled at
 * count c keeps c in up_clear: while the count is still c, no graph above
 * it can have been cancelled since, and its claims look no further than
 * that compare (module.c). */
extern _Atomic uint64_t weft__cancel_gen;
/* After a run's cancel mark was set: later claims under it look again. */
static inline void weft__cancel_bump(void)
{
    atomic_fetch_add_explicit(&weft__cancel_gen, 1, memory_order_release);   /* release: the mark before the count */
}
/* Walks up from g (no cache): is a graph that g runs inside cancelled?
 * If not, notes the count read before the walk in g->up_clear. */
bool weft__module_cancelled_walk(weft_graph *g);
/* Is a graph that g runs inside (as a module or a subflow's sub-graph,
 * at any depth) cancelled? O(1) while no cancel happened since the run
 * started (or since the last walk). */
static inline bool weft__module_cancelled(weft_graph *g)
{
    uint64_t c = atomic_load_explicit(&weft__cancel_gen, memory_order_acquire);   /* acquire: pairs with the bump */
    if (atomic_load_explicit(&g->up_clear, memory_order_relaxed) == c)
        return false;
    return weft__module_cancelled_walk(g);
}
/* For a run of g inside another graph's starting now (its start, under
 * g's lock): up_clear from the graph above, if that one is known clear
 * and not cancelled itself, so that no claim of the run walks up. */
void weft__module_clear_setup(weft_graph *g);
/* Locks g for a run and checks it: WEFT_EBUSY if a run of g is in
 * flight; else weft__graph_check's answer and, with modules, whether
 * their graphs (to any depth) check too and none contains g (OK, ECYCLE,
 * ENOMEM). m: the module task g runs under (set as g->parent before its
 * modules are checked, as their path starts above g), or NULL for a run
 * of its own. Returns with g locked, whatever it answers. Callable from:
 * any thread holding no graph lock (run_lock.c says why: the check may
 * have to let go of g and start over). */
int weft__graph_lock_checked(weft_graph *g, weft_task *m);
/* Does a graph that g's run is part of (g itself, or one that runs g as
 * a module) equal x? For weft_graph_wait's refusal. */
bool weft__runs_within(const weft_graph *g, const weft_graph *x);

/* run.c: queues v as a record of its own from w (a worker of the run's
 * scheduler, or NULL from any other thread), as a visit queues a ready
 * successor: counted in `pending` first with condition tasks unless
 * counted (the caller counted it already), through attr.c's placement if
 * v has attributes. Callable from: any thread, while v's run is in
 * flight and v is ready. */
void weft__graph_queue(weft__worker *w, weft_task *v, bool counted);

/* series.c */
/* Test seam: when set, called by a worker whose record ended a run with a
 * plain thread among its waiters, after its step 4 (core's
 * weft__search_before_wake: searching now, unless it had work in sight or
 * others search at the cap) and the wake, before it goes back to its loop
 * (run.c, step 4). Set and cleared by a test while no run ends. */
#ifdef WEFT_TEST_SEAMS
extern void (*weft__graph_woke_seam)(void);
#endif

/* attr.c */
/* Test seam: when set, called by a release that handed a graph task a
 * semaphore unit, after the task left its scheduler's list of parked
 * waits and before it is queued (attr.c, D3). Set and cleared by a test
 * while no such release runs. */
#ifdef WEFT_TEST_SEAMS
extern void (*weft__attr_grant_seam)(void);
#endif
/* Queues rec (v's own record, or a task record that visits v) where v's
 * priority and pin say (core's weft__submit_placed), marking it placed
 * for the visit it arrives at; if v's thread is gone, plainly (the
 * arrival then fails v). Callable from: as weft__graph_queue. */
void weft__attr_submit(weft_graph *g, weft__worker *w, weft__task *rec, weft_task *v);
/* Does t (with attributes) have a place (a priority or a pin), so that
 * it is queued there rather than continued? *high is set if it is HIGH.
 * Callable from: a visit. */
bool weft__attr_placed(const weft_task *t, bool *high);
/* Should root t (with attributes) spread now? Once per readiness: not
 * again when it arrives where it was sent. Callable from: the walk. */
bool weft__attr_spread(weft_task *t);
/* t (with attributes) is ready on w: true if it is to be visited now
 * (vis->unit set if it holds a unit of its semaphore; vis->skip if it is
 * to be skipped without one; vis->fail set to weft's WEFT_EINVAL if its
 * pinned thread is gone: it fails without running);
 * false if it went elsewhere (queued where it is placed, or on its
 * semaphore). fresh: t came off a queue (not a continuation). Callable
 * from: the general walk, on a worker of the run's scheduler. */
bool weft__attr_ready(weft__worker *w, weft__visiting *vis, weft_task *t, bool fresh);
/* A module task keeps the unit of its semaphore while its graph runs:
 * keep true moves vis->unit (if any) into t's attributes before the run
 * starts (it may end at once), false moves it back (the run did not
 * start); weft__attr_module_done gives it back when the run has ended.
 * Callable from: t's visit; module_done. */
void weft__attr_module_unit(weft__visiting *vis, weft_task *t, bool keep);
void weft__attr_module_done(weft_task *t);
/* Ends the waits for semaphore units of g's run, once it is cancelled
 * (weft_graph_cancel, fail-fast), and of the graphs running as its
 * modules: each waiting task leaves its semaphore's queue at once and is
 * queued to be skipped (attr.c, "Ending a wait"). Caller holds g's lock
 * and has set the run's cancel mark. Callable from: any thread. */
void weft__attr_end_waits(weft_graph *g);
/* The same for t alone, after weft_task_cancel set its mark. Takes g's
 * lock. Callable from: any thread. */
void weft__attr_cancel_task(weft_task *t);
/* The spread's stand-in where a root has a place (g->flat_roots): at the
 * first root's first arrival, queues every root (t too) where it goes.
 * true: t was queued so, and is not to be visited here. Callable from:
 * run.c's general walk, t a root, before its visit. */
bool weft__attr_place_roots(weft__worker *w, weft_graph *g, weft_task *t);
/* Has a root of g a place (a priority other than NORMAL, or a pin)?
 * O(roots). Caller holds g's lock, no run in flight. */
bool weft__attr_roots_placed(const weft_graph *g);
/* Before a run of g on s: EINVAL if a task is pinned to an id that is
 * no thread of s now. Caller holds g's lock. */
int weft__attr_check(weft_graph *g, weft_sched *s);
/* No task of g has attributes any more (an emptying: weft__graph_clear).
 * Caller holds g's lock, no run in flight. */
void weft__attr_clear(weft_graph *g);
/* Frees g's attributes. Callable from: weft_graph_destroy. */
void weft__attr_free(weft_graph *g);

/* report.c: what stall reports say of graphs, through core's namer
 * hooks (graph.c registers them). */
/* Describes graph task arg (a weft_task) in which a fiber is blocked.
 * Callable from: a report, under that fiber's worker's reg_lock. */
void weft__report_task(void *arg, char *buf, size_t cap);
/* Describes graph arg that a fiber waits for (weft_graph_wait): its
 * failures and skips so far; nothing unless listed. Callable from: a
 * report, under that fiber's worker's reg_lock. */
void weft__report_wait(void *arg, char *buf, size_t cap);
/* Lists g for weft__report_wait (once). Callable from: weft_graph_wait on
 * a tracked worker, before it takes g's lock. */
void weft__report_list(weft_graph *g);
/* Unlists g, waiting out a report that reads it. Callable from:
 * weft_graph_destroy, holding no graph lock, before g is freed. */
void weft__report_unlist(weft_graph *g);

/* graph.c: adds a task (kind: 0 or WEFT__CTL_COND). _x: with
 * extra_size bytes copied from extra into the graph's arena, the task's
 * arg pointing at them (extra NULL: arg as given). A subflow task's arg
 * (fn weft__subflow_mark) is a weft__sf_init, read during the call. */
int weft__graph_add_node(weft_graph *g, weft_fn fn, void *arg, uint32_t kind, weft_task **out);
int weft__graph_add_node_x(weft_graph *g, weft_fn fn, void *arg, uint32_t kind,
                           const void *extra, size_t extra_size, weft_task **out);
/* graph.c: empties g (no run in flight, caller holds no graph lock):
 * no tasks, no edges, no names or attributes, keeping its node blocks,
 * arena chunks and arrays for the tasks added next; the sub-graphs of
 * its subflow tasks go to g's spare list. */
void weft__graph_clear(weft_graph *g);
/* graph.c: weft__graph_add_node without g's lock, for the visit that
 * builds g solo, between weft__solo_enter and weft__solo_exit. */
int weft__graph_add_node_solo(weft_graph *g, weft_fn fn, void *arg, weft_task **out);
/* graph.c: weft__graph_clear with g's lock held by the caller (a join
 * that reads its run's result in the same hold), or of a spare
 * sub-graph (subflow.c) without it: on its owner's spare list it belongs
 * to no task, so no run, DOT dump or build call can reach it; the
 * caller holds the owner's lock (which ordered the spare's last
 * emptying or run before it). */
void weft__graph_clear_locked(weft_graph *g);
/* graph.c: g, new and empty, takes small node blocks (a sub-graph:
 * WEFT__SMALL_SHIFT). */
void weft__graph_small_blocks(weft_graph *g);
/* graph.c: frees g's memory (no run in flight, nobody else holds it). */
void weft__graph_free(weft_graph *g);

/* subflow.c */
/* The function of every subflow task (never called: it marks them);
 * the task's arg is its record's place (weft__sfrec_of). */
void weft__subflow_mark(void *sub);
static inline bool weft__is_subflow(const weft_graph *g, const weft_task *t)
{
    return WEFT_UNLIKELY(g->has_subflow) && t->fn == weft__subflow_mark;
}
/* A module or subflow task: runs a graph of its own as part of its
 * visit (t->arg is that graph). */
static inline bool weft__is_nested(const weft_graph *g, const weft_task *t)
{
    return weft__is_module(g, t) || weft__is_subflow(g, t);
}
/* t's record (subflow t of its graph). */
static inline weft__sfrec *weft__sfrec_of(const weft_task *t)
{
    return &t->g->sfrecs[(uintptr_t)t->arg];
}
/* A subflow task's visit, after its claim: takes its record, empties
 * its sub-graph if it has one and calls its function. Returns the
 * sub-graph to run (the record stays taken until that run ends:
 * weft__module_end), or NULL with the record given back: the function
 * added nothing (the task is done now, no run to start: a recursion's
 * leaves, half of its calls) or failed the task (vis->fail); or
 * another visit of t has the record (picked twice by conditions:
 * vis->fail set to EBUSY, as a module whose graph runs elsewhere).
 * Callable from: the visit (vis->cur is t). */
weft_graph *weft__subflow_visit(weft__visiting *vis, weft_task *t);
/* The visit that took t's record (weft__subflow_visit) is done with it:
 * its run ended, or none started. Callable from: that visit,
 * weft__module_end. */
void weft__subflow_release(weft_task *t);
/* subflow.c: the function of every multi-condition task (a weft_cond_fn);
 * the task's arg is a weft__mcond in the graph's arena. */
int weft__mcond_call(void *mc);
typedef struct weft__mcond {
    weft_multi_cond_fn fn;
    void *arg;
} weft__mcond;
typedef struct weft__sf_init {
    weft_subflow_fn fn;
    void *arg;
} weft__sf_init;
/* Room for one more subflow record in g, whose sfrecs are full. false:
 * out of memory, nothing changed. Caller holds g's lock, no run. */
bool weft__subflow_grow(weft_graph *g);
/* Makes a sub-graph for a subflow task of g: from g's spare list, else
 * new. NULL: out of memory. Caller holds g's lock. */
weft_graph *weft__subflow_take(weft_graph *g);
/* Gives sub back to owner g's spare list. Caller holds g's lock. */
void weft__subflow_give(weft_graph *g, weft_graph *sub);
/* graph.c: removes repeated successors of the tasks listed as long, if
 * any may hold repeats. Caller holds g's lock and no run is in flight. */
void weft__graph_dedup(weft_graph *g);
/* graph.c: the check made before a run, once per change and only where
 * needed (duplicates past WEFT__SUCC_SCAN, edges against build order).
 * Caller holds g's lock and no run is in flight. OK, ECYCLE or ENOMEM. */
int weft__graph_check(weft_graph *g);

#endif /* WEFT_GRAPH_H */
