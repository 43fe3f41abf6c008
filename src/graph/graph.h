/* This file is private to weft: task graphs (src/graph).
 *
 * Files: graph.c (building: nodes, edges, the arena, names, the check
 * made once per change), run.c (running: join counters, continuation,
 * cancel, the end of a run, waiting), dot.c (the Graphviz dump).
 *
 * Vocabulary
 *   node     a weft_task: the user's function, its successors, and an
 *            embedded queue record (weft__task) so running allocates
 *            nothing.
 *   visit    what happens to every node exactly once per run: it is
 *            claimed, then run or skipped, then its successors' join
 *            counters drop.
 *   epoch    the number of the run (28 bits, wrapping). A node's ctl word
 *            holds the epoch of its last visit, so nothing needs clearing
 *            between runs: a node whose epoch is not the graph's has not
 *            been visited in the run in flight.
 *   sink     a node with no successors. A run ends when its last sink has
 *            been visited: every node is a sink or precedes one, so by
 *            then every node has been visited.
 *   spread   how the roots get queued: only roots[0] is queued by the run;
 *            each root queues the roots heading the halves of its range of
 *            the roots array (recursive halving, the ranges implied by the
 *            place, run.c), so many roots fan out over the workers in
 *            O(log n) steps, thieves take whole ranges, and no thread
 *            pushes them all through one deque.
 */
#ifndef WEFT_GRAPH_H
#define WEFT_GRAPH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core.h"

/* Successors kept in the node itself; longer lists are arrays in the
 * arena with a power-of-two capacity (at least 4) implied by nsucc. */
#define WEFT__SUCC_INLINE 2

/* Nodes come in blocks of 2^WEFT__BLOCK_SHIFT, so a node's address never
 * changes and index -> node is two loads. */
#define WEFT__BLOCK_SHIFT 8
#define WEFT__BLOCK_NODES (1u << WEFT__BLOCK_SHIFT)

/* ---- a node's ctl word ---------------------------------------------------
 *   bit 0      CANCEL: set by weft_task_cancel, cleared by weft_task_reset.
 *   bit 1      POISON: a predecessor was skipped in the run coming up;
 *              set before that predecessor's join decrement, cleared when
 *              the node is claimed.
 *   bits 2-3   what the last visit did: NONE, RAN or SKIPPED.
 *   bits 4-31  the epoch of the last visit. */
enum {
    WEFT__CTL_CANCEL = 1u << 0,
    WEFT__CTL_POISON = 1u << 1,
    WEFT__CTL_VISIT_SHIFT = 2,
    WEFT__CTL_VISIT_MASK = 3u << 2,
    WEFT__CTL_EPOCH_SHIFT = 4,
};
enum { WEFT__VISIT_NONE = 0, WEFT__VISIT_RAN = 1, WEFT__VISIT_SKIPPED = 2 };
#define WEFT__EPOCH_MASK ((1u << 28) - 1)
#define WEFT__CTL_VISIT(c) (((c) & WEFT__CTL_VISIT_MASK) >> WEFT__CTL_VISIT_SHIFT)
#define WEFT__CTL_EPOCH(c) ((c) >> WEFT__CTL_EPOCH_SHIFT)
/* Never an epoch: the initial value of done and cancel_epoch. */
#define WEFT__NO_EPOCH UINT32_MAX

/* Two cache lines: the queue record, then the node's own fields. */
struct weft_task {
    weft__task rec;                 /* queued when ready; rec.arg == this */
    weft_fn fn;                     /* NULL: an empty task */
    void *arg;
    weft_graph *g;
    union {
        weft_task *inl[WEFT__SUCC_INLINE];   /* nsucc <= WEFT__SUCC_INLINE */
        weft_task **arr;                     /* otherwise, in the arena */
    } succ;
    uint32_t nsucc;                 /* distinct after the check; built under g's lock */
    uint32_t npred;                 /* predecessors (distinct after the check) */
    _Atomic uint32_t join;          /* predecessors not yet visited this run;
                                       for a root: its place in g->roots */
    _Atomic uint32_t ctl;           /* see above */
    _Atomic uint32_t done;          /* epoch in which fn last returned */
    uint32_t index;                 /* position in the graph, from 0 */
};

_Static_assert(sizeof(struct weft_task) == 128, "a graph node is two cache lines");

static inline weft_task **weft__succ(weft_task *t)
{
    return t->nsucc <= WEFT__SUCC_INLINE ? t->succ.inl : t->succ.arr;
}

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

struct weft_graph {
    /* Build state: under lock. */
    atomic_bool lock;               /* a spin lock; see run.c for why not a mutex */
    uint32_t n;                     /* nodes */
    weft_task **blocks;             /* node blocks */
    uint32_t nblocks, blocks_cap;
    weft__chunk *chunks;            /* the arena */
    char *bump, *bump_end;
    char **names;                   /* by node index: a weft__name's s, or NULL */
    uint32_t names_cap;
    bool checked;                   /* deduplicated, acyclic, roots known */
    bool cyclic;                    /* found a cycle: stays (no edge removal) */
    weft_task **roots;              /* nodes with no predecessors, after the check */
    uint32_t nroots;
    uint32_t nsinks;

    /* Run state. */
    weft_sched *sched;              /* the run's scheduler: written before the roots are queued */
    _Atomic uint32_t run;           /* epoch << 1 | running; written under lock */
    _Atomic uint32_t cancel_epoch;  /* weft_graph_cancel: the epoch it cancelled */
    int result;                     /* the last run's result: under lock */
    weft__waitq waiters;            /* under lock */

    /* Written by the workers during a run: a line of its own. */
    _Alignas(WEFT_CACHELINE) _Atomic uint32_t sinks_left;
    atomic_bool skipped;            /* a node was skipped this run */
};

static inline weft_task *weft__graph_node(const weft_graph *g, uint32_t i)
{
    return &g->blocks[i >> WEFT__BLOCK_SHIFT][i & (WEFT__BLOCK_NODES - 1)];
}

/* run.c */
void weft__graph_lock(weft_graph *g);
void weft__graph_unlock(weft_graph *g);
/* weft__graph_lock, giving up after about patience_ns: false, not held.
 * For stall reports, which must not hang on a graph. */
bool weft__graph_lock_for(weft_graph *g, uint64_t patience_ns);
/* The record function of every node. */
void weft__node_entry(void *arg);

/* graph.c: the check made once per change. Caller holds g's lock and no
 * run is in flight. OK, ECYCLE or ENOMEM. */
int weft__graph_check(weft_graph *g);

#endif /* WEFT_GRAPH_H */
