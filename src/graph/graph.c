/* This file is private to weft: building task graphs (the check made
 * before a run where the build left something to check, duplicate edges
 * in long successor lists and edges against build order, is check.c's;
 * this comment describes both).
 *
 * Synchronization
 *   Every field a build call writes (nodes, successor lists, npred, join
 *   between runs, the roots array, the counts, the arena, names, the check
 *   flags, attr.c's attributes) is written under g's lock, and only while
 *   no run is in flight (the calls check `run` under the lock and return
 *   WEFT_EBUSY otherwise;
 *   names are the exception: set under the lock at any time, read under
 *   it by the dump). A run reads the structure without the lock:
 *   weft_graph_run sets `run` under the lock after the last change, and
 *   the roots reach the workers through the queues (release/acquire), so
 *   every worker sees the finished structure.
 *   join   equals npred between runs, except for a root (npred 0), whose
 *          join is its place in the roots array. Edges added here set it
 *          (relaxed: no run reads it now; the run's start publishes it).
 *
 * What a build call costs. A task is one cache line (graph.h) written in
 * place in a block of nodes: no allocation but one per 1024 tasks. An
 * edge appends an index to the predecessor's list (inline for the first
 * two successors) and counts the successor's predecessor; a task with
 * fewer than WEFT__SUCC_SCAN successors is first searched for the new
 * one, so an edge added twice is one edge without any later pass. Roots
 * and sinks are counted as edges are added: a task added is a root and a
 * sink until an edge says otherwise.
 *
 * The check, before a run, does only what the build left to do:
 *   duplicates  a task with WEFT__SUCC_SCAN successors or more takes
 *               edges unsearched (adding one stays O(1) even for a task
 *               with 10^5 successors); such tasks are listed (big), and
 *               the check sorts each listed list and drops repeats, once
 *               per change.
 *   cycles      an edge from a task to one added before it is a back
 *               edge; a graph with none is acyclic, since build order is
 *               then a topological order. So the common case, tasks added
 *               before their successors, costs nothing; a graph with back
 *               edges gets Kahn's algorithm over all its nodes once per
 *               change (a scratch word per node, freed after).
 *
 * Memory. Nodes live in blocks of WEFT__BLOCK_NODES (their addresses never
 * move: weft_task pointers stay valid). Successor arrays come from a bump
 * arena of chunks; a successor array that outgrows its capacity is copied
 * into one twice as large, and the old one stays in the arena (at most as
 * much again as the final arrays). Names are blocks of their own, reused
 * or freed when replaced (see weft_task_set_name), since renaming is
 * allowed at any time. Everything is freed by weft_graph_destroy.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <ck_pr.h>

#include "block_cache.h"
#include "graph.h"
#include "solo.h"

/* ---- pieces: node blocks and arena chunks --------------------------------------
 * Both are block_cache.h's kept blocks of WEFT__PIECE bytes: a destroyed graph's
 * pieces are kept (up to 64 MiB for the process, default allocator only)
 * for the next graph built, so a program that builds a graph per frame or
 * per request writes into memory it already has, instead of the kernel
 * handing out (and zeroing) fresh pages for every build and taking them
 * back at every destroy, which cost more than the build itself (a chain
 * of 2^20 tasks: about 20 ns of its 50 per task). */

#define WEFT__PIECE (sizeof(weft_task) * WEFT__BLOCK_NODES)
_Static_assert(WEFT__PIECE == WEFT__KEPT_SIZE, "a node block is a kept block");

static void *piece_alloc(void)
{
    return weft__kept_alloc();
}

static void piece_free(void *p)
{
    weft__kept_free(p);
}

/* A node block of g's size (graph.h: a piece, or a small block of a
 * sub-graph's). NULL: out of memory. */
static weft_task *block_alloc(const weft_graph *g)
{
    if (WEFT_LIKELY(g->bshift == WEFT__BLOCK_SHIFT))
        return piece_alloc();
    return weft__alloc(sizeof(weft_task) << g->bshift);   /* cache-line aligned (alloc.h) */
}

/* g's blocks go back (g holds no task); returns the bytes freed to the
 * allocator (kept pieces not counted). The array stays. */
static size_t blocks_free(weft_graph *g)
{
    size_t freed = 0;
    for (uint32_t b = 0; b < g->nblocks; b++) {
        if (g->bshift == WEFT__BLOCK_SHIFT) {
            piece_free(g->blocks[b]);
        } else {
            freed += sizeof(weft_task) << g->bshift;
            weft__free(g->blocks[b], sizeof(weft_task) << g->bshift);
        }
    }
    g->nblocks = 0;
    return freed;
}

/* g's next tasks go in blocks of 1 << shift nodes. Caller holds g's lock
 * (or g is new), g holds no task. */
static void blocks_resize(weft_graph *g, uint32_t shift)
{
    (void)blocks_free(g);
    g->bshift = shift;
    g->bmask = (1u << shift) - 1;
}

void weft__graph_small_blocks(weft_graph *g)
{
    blocks_resize(g, WEFT__SMALL_SHIFT);
    /* Its first arrays in its header's lines of them, not three blocks
     * of their own: a few tasks fit (graph.h). */
    g->roots = g->roots_inl;
    g->roots_cap = WEFT__INL_ROOTS;
    g->sfrecs = g->sfrecs_inl;
    g->subflows_cap = WEFT__INL_SUBFLOWS;
    g->blocks = g->blocks_inl;
    g->blocks_cap = WEFT__INL_BLOCKS;
}

/* ---- the arena -------------------------------------------------------------- */

/* Caller holds the lock. 8-byte aligned; NULL: out of memory. */
static void *arena_alloc(weft_graph *g, size_t bytes)
{
    bytes = (bytes + 7) & ~(size_t)7;
    if ((size_t)(g->bump_end - g->bump) < bytes) {
        size_t size = sizeof(weft__chunk) + bytes;
        if (size < WEFT__PIECE)
            size = WEFT__PIECE;
        weft__chunk *c = g->spare_chunks;   /* kept by an emptying (weft__graph_clear) */
        if (c && size == WEFT__PIECE)
            g->spare_chunks = c->next;
        else
            c = size == WEFT__PIECE ? piece_alloc() : weft__alloc(size);
        if (!c)
            return NULL;
        c->next = g->chunks;
        c->size = size;
        g->chunks = c;
        g->bump = (char *)(c + 1);
        g->bump_end = (char *)c + size;
    }
    void *p = g->bump;
    g->bump += bytes;
    return p;
}

/* ---- create and destroy ---------------------------------------------------- */

static size_t name_free(char *s);

static pthread_once_t namer_once = PTHREAD_ONCE_INIT;

static void add_namer(void)
{
    weft__set_record_hook(weft__node_entry);   /* core runs nodes through it */
    weft__task_namer_add(weft__node_entry, "graph task", weft__report_task);
    weft__wait_namer_add("graph", weft__report_wait);   /* weft_graph_wait's waiter (series.c) */
}

int weft_graph_create(weft_graph **out)
{
    if (!out)
        return WEFT_EINVAL;
    *out = NULL;
    pthread_once(&namer_once, add_namer);   /* stall reports name graph tasks */
    weft_graph *g = weft__calloc(sizeof *g);
    if (!g)
        return WEFT_ENOMEM;
    g->tag = WEFT__TAG_GRAPH;
    weft__spin_init(&g->lock);
    atomic_init(&g->run, 0);
    atomic_init(&g->cancel_epoch, WEFT__NO_EPOCH);
    atomic_init(&g->sinks_left, 0);
    atomic_init(&g->skipped, false);
    atomic_init(&g->fail_err, 0);
    atomic_init(&g->failed, WEFT__NO_TASK);
    atomic_init(&g->listed, false);
    g->bshift = WEFT__BLOCK_SHIFT;
    g->bmask = WEFT__BLOCK_NODES - 1;
    g->result = WEFT_OK;
    *out = g;
    return WEFT_OK;
}

/* Is p one of g's inline arrays (a sub-graph's first roots and
 * blocks, subflow records: graph.h), not to be freed? */
static bool is_inline(const weft_graph *g, const void *p)
{
    uintptr_t a = (uintptr_t)p, h = (uintptr_t)g;   /* as integers: p may be another object */
    return a >= h && a < h + sizeof *g;
}

/* Makes room for index i in a growable array of pointers of g's: *arrp
 * points to it (a T ** for some T, any of weft's pointer arrays), *cap is
 * its capacity, which doubles from `first`. New slots are NULL. Caller
 * holds the lock. false: out of memory, nothing changed. */
static __attribute__((noinline)) bool slots_grow(const weft_graph *g, void *arrp, uint32_t *cap, uint32_t i,
                                                 uint32_t first)
{
    uint32_t n = *cap ? *cap : first;
    while (n <= i) {
        if (n > UINT32_MAX / 2)
            return false;   /* past 2^31 slots */
        n *= 2;
    }
    void **nn = weft__calloc(sizeof *nn * n);
    if (!nn)
        return false;
    void **old;
    memcpy(&old, arrp, sizeof old);   /* the T ** as a void **: same representation */
    if (old) {
        memcpy(nn, old, sizeof *nn * *cap);
        if (!is_inline(g, old))
            weft__free(old, sizeof *nn * *cap);
    }
    memcpy(arrp, &nn, sizeof nn);
    *cap = n;
    return true;
}

static inline bool slots_reserve(const weft_graph *g, void *arrp, uint32_t *cap, uint32_t i, uint32_t first)
{
    return i < *cap || slots_grow(g, arrp, cap, i, first);   /* the growth out of line: adds inline the test */
}

/* The same for an array of indices. */
static __attribute__((noinline)) bool u32_grow(const weft_graph *g, uint32_t **arr, uint32_t *cap, uint32_t i,
                                               uint32_t first)
{
    uint32_t n = *cap ? *cap : first;
    while (n <= i) {
        if (n > UINT32_MAX / 2)
            return false;
        n *= 2;
    }
    uint32_t *nn = weft__alloc(sizeof *nn * n);
    if (!nn)
        return false;
    if (*arr) {
        memcpy(nn, *arr, sizeof *nn * *cap);
        if (!is_inline(g, *arr))
            weft__free(*arr, sizeof *nn * *cap);
    }
    *arr = nn;
    *cap = n;
    return true;
}

static inline bool u32_reserve(const weft_graph *g, uint32_t **arr, uint32_t *cap, uint32_t i, uint32_t first)
{
    return i < *cap || u32_grow(g, arr, cap, i, first);
}

static bool running(const weft_graph *g)
{
    return atomic_load_explicit(&g->run, memory_order_relaxed) & 1u;   /* under lock: the lock orders it */
}

/* The end of a destroy: g is dead. In checked builds the header stays
 * readable, tagged dead, for a while (base.h, weft__free_late), so that a
 * call after the destroy aborts naming g. Callable from: its destroy. */
static void header_retire(weft_graph *g)
{
#ifdef WEFT_DEBUG
    memset((char *)g + sizeof g->tag, 0, sizeof *g - sizeof g->tag);   /* nothing to follow */
    g->tag = WEFT__TAG_DEAD;
#endif
    weft__free_late(g, sizeof *g);
}

int weft_graph_destroy(weft_graph *g)
{
    if (!g)
        return WEFT_EINVAL;
    WEFT__GRAPH_CHECK(g, "weft_graph_destroy");
    weft__graph_lock(g);
    if (running(g)) {
        weft__graph_unlock(g);
        return WEFT_EBUSY;
    }
    /* Not running: the finisher's unlock was the last touch of g by any
     * worker (run.c), and we hold the lock after it. A stall report may
     * still read g (a waiter is listed until its fiber resumes): report.c
     * lets go of it first, with g's lock released (lock order). */
    weft__graph_unlock(g);
    weft__graph_free(g);
    return WEFT_OK;
}

/* A chunk list's chunks go back; returns the bytes freed to the
 * allocator (kept pieces not counted). */
static size_t chunks_free(weft__chunk *c)
{
    size_t freed = 0;
    for (weft__chunk *next; c; c = next) {
        next = c->next;
        if (c->size == WEFT__PIECE) {
            piece_free(c);
        } else {
            freed += c->size;
            weft__free(c, c->size);
        }
    }
    return freed;
}

void weft__graph_free(weft_graph *g)
{
    weft__report_unlist(g);
    /* A subflow task's sub-graph is the task's: freed with it, as are
     * the spare ones (subflow.c). */
    for (uint32_t k = 0; k < g->nsubflows; k++)
        if (g->sfrecs[k].sub)   /* made by a visit's first add (subflow.c) */
            weft__graph_free(g->sfrecs[k].sub);
    for (weft_graph *sub = atomic_load_explicit(&g->sf_spare, memory_order_relaxed), *next; sub; sub = next) {   /* no run: nothing races */
        next = sub->sf_next;
        weft__graph_free(sub);
    }
    /* What goes back to the allocator, not counting kept pieces (they
     * stay weft's): for weft__trim_freed, below. */
    size_t freed = sizeof *g + blocks_free(g);
    if (g->blocks && !is_inline(g, g->blocks)) {
        freed += sizeof *g->blocks * g->blocks_cap;
        weft__free(g->blocks, sizeof *g->blocks * g->blocks_cap);
    }
    freed += chunks_free(g->chunks) + chunks_free(g->spare_chunks);
    if (g->names) {
        for (uint32_t i = 0; i < g->names_cap; i++)
            freed += name_free(g->names[i]);
        freed += sizeof *g->names * g->names_cap;
        weft__free(g->names, sizeof *g->names * g->names_cap);
    }
    if (g->roots && !is_inline(g, g->roots)) {
        freed += sizeof *g->roots * g->roots_cap;
        weft__free(g->roots, sizeof *g->roots * g->roots_cap);
    }
    if (g->big) {
        freed += sizeof *g->big * g->big_cap;
        weft__free(g->big, sizeof *g->big * g->big_cap);
    }
    if (g->modules)
        weft__free(g->modules, sizeof *g->modules * g->modules_cap);
    if (g->sfrecs && !is_inline(g, g->sfrecs))
        weft__free(g->sfrecs, sizeof *g->sfrecs * g->subflows_cap);
    weft__attr_free(g);   /* task attributes (attr.c) */
    header_retire(g);
    /* malloc keeps what is freed for its own reuse, and pages freed
     * between blocks still in use (other graphs, kept pieces) stay
     * resident: a program that made big graphs would hold their memory
     * for ever. alloc.c hands free pages back once enough was freed. */
    weft__trim_freed(freed);
}

/* weft__graph_clear's work, for a caller that holds g's lock or may go
 * without it. */
static void clear_tasks(weft_graph *g)
{
    if (g->n == 0)
        return;   /* empty already (new, or emptied since): names, attributes and arena bytes all belong to tasks */
    /* Last first: the spare list is a stack, so the next visit's first
     * subflow task gets back the first one's sub-graph, and a build of the
     * same shape finds each sub-graph (and its own spares) where it was. */
    for (uint32_t k = g->nsubflows; k-- > 0;)
        if (g->sfrecs[k].sub)   /* under g's lock, or a spare's owner's: no visit holds it */
            weft__subflow_give(g, atomic_load_explicit(&g->sfrecs[k].sub, memory_order_relaxed));
    if (g->names)
        for (uint32_t i = 0; i < g->names_cap; i++) {
            name_free(g->names[i]);
            g->names[i] = NULL;
        }
    if (g->chunks) {
        /* Every chunk is spare again (a big one, past a piece, is freed:
         * taken again only by a list that long). */
        weft__chunk *c = g->chunks;
        while (c) {
            weft__chunk *next = c->next;
            if (c->size == WEFT__PIECE) {
                c->next = g->spare_chunks;
                g->spare_chunks = c;
            } else {
                weft__free(c, c->size);
            }
            c = next;
        }
        g->chunks = NULL;
        g->bump = g->bump_end = NULL;
    }
    weft__attr_clear(g);   /* attr.c: no task has attributes */
    if (WEFT_UNLIKELY(g->n > WEFT__SMALL_MAX_NODES) && g->bshift != WEFT__BLOCK_SHIFT)
        blocks_resize(g, WEFT__BLOCK_SHIFT);   /* builds this big take a piece per 1024 tasks, not an allocation per 8 */
    g->cyclic = g->need_dedup = g->need_order = false;
    g->has_cond = g->has_module = g->has_subflow = g->has_nested = false;
    g->nmodules = g->nsubflows = 0;
    g->checked_in = 0;
    g->n = g->nroots = g->nsinks = g->nbig = 0;
    g->back_edges = 0;
}

void weft__graph_clear(weft_graph *g)
{
    weft__graph_lock(g);
    clear_tasks(g);
    weft__graph_unlock(g);
}

void weft__graph_clear_locked(weft_graph *g)
{
    clear_tasks(g);   /* a spare: no task holds g, no run, no dump reaches it: its lock would order nothing */
}

/* ---- tasks ----------------------------------------------------------------- */

/* Both entries below share this body, inlined into each: a plain add
 * (extra NULL, folded away) pays no test for the record a multi-condition
 * carries, and the rare kinds (module, subflow, extra) are behind one
 * test each way. */
static inline __attribute__((always_inline)) int add_node(weft_graph *g, weft_fn fn, void *arg,
                                                          uint32_t kind, const void *extra,
                                                          size_t extra_size, weft_task **out,
                                                          const bool solo)
{
    if (!out)
        return WEFT_EINVAL;
    *out = NULL;
    if (!g)
        return WEFT_EINVAL;
    if (!solo)
        weft__graph_lock(g);   /* solo: the building visit's own, between solo_enter and solo_exit (subflow.c) */
    int rc = WEFT_OK;
    if (running(g)) {
        rc = WEFT_EBUSY;
        goto out;
    }
    uint32_t i = g->n;
    if (i == UINT32_MAX) {
        rc = WEFT_ENOMEM;   /* indices are 32-bit */
        goto out;
    }
    /* Room first, so that a failure leaves nothing behind: a place in
     * the roots array (it starts as a root), then a block if i starts
     * one. A larger roots array holding the same roots is no change. */
    bool module = fn == weft__module_mark, subflow = fn == weft__subflow_mark;
    bool rare = module | subflow | (extra != NULL);
    if (!u32_reserve(g, &g->roots, &g->roots_cap, g->nroots, 16) ||
        (WEFT_UNLIKELY(rare) &&
         ((module && !u32_reserve(g, &g->modules, &g->modules_cap, g->nmodules, 4)) ||
          (subflow && g->nsubflows == g->subflows_cap && !weft__subflow_grow(g))))) {
        rc = WEFT_ENOMEM;
        goto out;
    }
    if ((i & g->bmask) == 0 && (i >> g->bshift) >= g->nblocks) {   /* i starts a block; an emptied graph keeps its blocks */
        if (!slots_reserve(g, &g->blocks, &g->blocks_cap, g->nblocks, 16)) {
            rc = WEFT_ENOMEM;
            goto out;
        }
        weft_task *blk = block_alloc(g);
        if (!blk) {
            rc = WEFT_ENOMEM;
            goto out;
        }
        g->blocks[g->nblocks++] = blk;   /* kept if what follows fails: the next add takes it */
    }
    if (WEFT_UNLIKELY(rare) && extra) {
        void *x = arena_alloc(g, extra_size);   /* a multi-condition's record (subflow.c) */
        if (!x) {
            rc = WEFT_ENOMEM;
            goto out;
        }
        memcpy(x, extra, extra_size);   /* under the lock: no run reads it before */
        arg = x;
    }
    weft_task *t = weft__graph_node(g, i);
    t->link.next = (weft__node *)WEFT__NODE_HOOK;   /* a hook record (core runs it as weft__node_entry) */
    t->fn = fn;
    t->arg = arg;
    t->g = g;
    t->succ.arr = NULL;
    t->nsucc = 0;
    t->npred = 0;
    atomic_init(&t->join, g->nroots);   /* a root: its place */
    /* Visited in no run: the last run's epoch with no visit recorded. */
    uint32_t epoch = atomic_load_explicit(&g->run, memory_order_relaxed) >> 1;
    atomic_init(&t->ctl, (epoch << WEFT__CTL_EPOCH_SHIFT) | kind);
    if (kind & WEFT__CTL_COND)
        g->has_cond = true;
    if (WEFT_UNLIKELY(rare)) {
        if (module) {
            g->modules[g->nmodules++] = i;
            g->has_module = g->has_nested = true;
        }
        if (subflow) {
            /* arg holds the task's function and its arg (subflow.c); the
             * task's arg is its record's place. No sub-graph yet: the
             * visit's first add takes one. */
            weft__sfrec *rec = &g->sfrecs[g->nsubflows];
            rec->task = t;
            rec->fn = ((const weft__sf_init *)arg)->fn;
            rec->arg = ((const weft__sf_init *)arg)->arg;
            atomic_init(&rec->sub, NULL);
            atomic_init(&rec->busy, false);
            t->arg = (void *)(uintptr_t)g->nsubflows++;
            g->has_subflow = g->has_nested = true;
        }
    }
    atomic_init(&t->done, WEFT__NO_EPOCH);
    t->index = i;
    g->roots[g->nroots++] = i;
    g->nsinks++;
    g->n = i + 1;
    *out = t;
out:
    if (!solo)
        weft__graph_unlock(g);
    return rc;
}

/* Adds a task (kind: 0, or WEFT__CTL_COND for a condition task). */
int weft__graph_add_node(weft_graph *g, weft_fn fn, void *arg, uint32_t kind, weft_task **out)
{
    return add_node(g, fn, arg, kind, NULL, 0, out, false);
}

int weft__graph_add_node_x(weft_graph *g, weft_fn fn, void *arg, uint32_t kind,
                           const void *extra, size_t extra_size, weft_task **out)
{
    return add_node(g, fn, arg, kind, extra, extra_size, out, false);
}

int weft__graph_add_node_solo(weft_graph *g, weft_fn fn, void *arg, weft_task **out)
{
    return add_node(g, fn, arg, 0, NULL, 0, out, true);
}

int weft_graph_add_task(weft_graph *g, weft_fn fn, void *arg, weft_task **out)
{
    return add_node(g, fn, arg, 0, NULL, 0, out, false);
}

weft_task *weft_graph_add(weft_graph *g, weft_fn fn, void *arg)
{
    weft_task *t;
    return weft_graph_add_task(g, fn, arg, &t) == WEFT_OK ? t : NULL;
}

/* ---- edges ---------------------------------------------------------------- */

/* An arena successor array holds its capacity in the word before it, so
 * that a list the check shortened (duplicates dropped) keeps its room:
 * edges declared again every frame then fill the same array. */
static uint32_t succ_cap(const weft_task *t)
{
    return t->succ.arr[-1];
}

/* Is v already among t's successors? Only for short lists (the caller
 * checks nsucc < WEFT__SUCC_SCAN). */
static bool succ_has(weft_task *t, uint32_t v)
{
    const uint32_t *s = weft__succ(t);
    for (uint32_t j = 0; j < t->nsucc; j++)
        if (s[j] == v)
            return true;
    return false;
}

/* Makes room for one more successor of t: NULL if the list has room, else
 * the new array (the caller commits it with succ_append), or *rc set and
 * NULL on failure, nothing changed. Caller holds the lock. */
static inline __attribute__((always_inline)) uint32_t *succ_room(weft_graph *g, weft_task *t, int *rc)
{
    uint32_t n = t->nsucc;
    if (n < WEFT__SUCC_INLINE || (n > WEFT__SUCC_INLINE && n < succ_cap(t)))
        return NULL;
    /* Full: the inline slots, or an array at its capacity. */
    uint32_t cap = n == WEFT__SUCC_INLINE ? 4 : n * 2;
    uint32_t *a = cap < n || cap == UINT32_MAX ? NULL   /* 32-bit overflow */
                : arena_alloc(g, sizeof *a * ((size_t)cap + 1));
    if (!a) {
        *rc = WEFT_ENOMEM;
        return NULL;
    }
    a[0] = cap;
    return a + 1;
}

/* Appends v to t's successors into the room succ_room made (grown: the
 * new array). Caller holds the lock. */
static void succ_append(weft_task *t, uint32_t *grown, uint32_t v)
{
    uint32_t n = t->nsucc;
    if (grown) {
        memcpy(grown, weft__succ(t), sizeof *grown * n);
        grown[n] = v;
        t->succ.arr = grown;
    } else {
        weft__succ(t)[n] = v;   /* inline while n < WEFT__SUCC_INLINE */
    }
    t->nsucc = n + 1;
}

/* weft_task_precede's body, t and v checked; solo: without g's lock
 * (the building visit's own, subflow.c), else under it. */
static inline __attribute__((always_inline)) int precede(weft_task *t, weft_task *v, const bool solo)
{
    weft_graph *g = t->g;
    if (!solo)
        weft__graph_lock(g);
    int rc = WEFT_OK;
    if (running(g)) {
        rc = WEFT_EBUSY;
        goto out;
    }
    /* A condition task's list is always searched: its order is what its
     * answer indexes, so it is never sorted to drop repeats. */
    bool weak = weft__is_cond(t);
    bool scan = weak || t->nsucc < WEFT__SUCC_SCAN;
    if (scan && succ_has(t, v->index))
        goto out;   /* the edge is there: one edge */
    if (v->npred >= WEFT__JOIN_POISON - 1 || t->nsucc == UINT32_MAX) {
        rc = WEFT_ENOMEM;   /* counts are 32-bit, join's top bit a poison (graph.h) */
        goto out;
    }
    /* Room first, then the change, which cannot fail. */
    if (!weak && t->nsucc == WEFT__SUCC_SCAN - 1 &&
        !u32_reserve(g, &g->big, &g->big_cap, g->nbig, 16)) {
        rc = WEFT_ENOMEM;   /* t is about to be listed as long */
        goto out;
    }
    uint32_t *grown = succ_room(g, t, &rc);
    if (rc != WEFT_OK)
        goto out;
    succ_append(t, grown, v->index);
    if (!weak && t->nsucc == WEFT__SUCC_SCAN)
        g->big[g->nbig++] = t->index;   /* from now on its edges go in unsearched */
    if (!scan)
        g->need_dedup = true;
    if (t->nsucc == 1)
        g->nsinks--;
    if (weft__is_root(v)) {
        /* v leaves the roots: the last root takes its place (usually v
         * itself, added just before its edges). */
        uint32_t place = atomic_load_explicit(&v->join, memory_order_relaxed);
        uint32_t last = g->roots[--g->nroots];
        g->roots[place] = last;
        atomic_store_explicit(&weft__graph_node(g, last)->join, place, memory_order_relaxed);
    }
    if (weak) {
        /* A weak edge: not counted in v's join; it only says v is no root. */
        atomic_fetch_or_explicit(&v->ctl, WEFT__CTL_WEAK_IN, memory_order_relaxed);   /* no run now; a cancel may race: an RMW */
        if (!v->npred)
            atomic_store_explicit(&v->join, 0, memory_order_relaxed);
        goto out;   /* a loop through a weak edge is no cycle */
    }
    v->npred++;
    atomic_store_explicit(&v->join, v->npred, memory_order_relaxed);   /* no run reads it now; the run's start publishes it */
    if (t->index > v->index)
        g->back_edges++;
    if (g->back_edges)
        g->need_order = true;   /* any edge may close a cycle through a back edge */
out:
    if (!solo)
        weft__graph_unlock(g);
    return rc;
}

/* precede without the lock, between weft__solo_enter and its exit. */
static __attribute__((noinline)) int precede_solo(weft_task *t, weft_task *v)
{
    int rc = precede(t, v, true);
    weft__solo_exit(t->g);
    return rc;
}

int weft_task_precede(weft_task *t, weft_task *successor)
{
    if (!t || !successor || t->g != successor->g)
        return WEFT_EINVAL;
    if (t == successor && !weft__is_cond(t))
        return WEFT_EINVAL;   /* a strong self-edge is a cycle; a condition's is a loop */
    /* An edge of a sub-graph its visit builds solo, by that visit
     * (subflow.c, "Solo builds"): no lock. Out of line, so that the
     * locked edge keeps its code. */
    if (WEFT_UNLIKELY(weft__solo_mine(t->g)) && weft__solo_enter(t->g))
        return precede_solo(t, successor);
    return precede(t, successor, false);
}

int weft_task_succeed(weft_task *t, weft_task *predecessor)
{
    return weft_task_precede(predecessor, t);
}

/* ---- names ---------------------------------------------------------------- */

/* Each name is a block of its own (a weft__name), not arena memory: a
 * task renamed every frame during runs would otherwise grow the arena
 * until weft_graph_destroy. A new name that fits the old block, and does
 * not leave most of it unused, is copied into it in place; otherwise a
 * new block replaces the old one, which is freed. So a graph holds, per
 * task, one block the size of about its current name. */

/* Bytes of the block holding a string of len bytes and its NUL: a
 * multiple of 16, so that names of similar lengths reuse one block. 0:
 * too long. */
static size_t name_block_size(size_t len)
{
    size_t head = offsetof(weft__name, s);
    if (len > SIZE_MAX - head - 16)
        return 0;
    return (head + len + 1 + 15) & ~(size_t)15;
}

static weft__name *name_of_string(char *s)
{
    return (weft__name *)(s - offsetof(weft__name, s));
}

/* s: a weft__name's s, or NULL. */
/* Returns the bytes freed. */
static size_t name_free(char *s)
{
    if (!s)
        return 0;
    weft__name *n = name_of_string(s);
    size_t size = offsetof(weft__name, s) + n->cap;
    weft__free(n, size);
    return size;
}

/* Makes room for index i in g->names. Caller holds the lock. false: out
 * of memory, nothing changed. */
static bool names_reserve(weft_graph *g, uint32_t i)
{
    return slots_reserve(g, &g->names, &g->names_cap, i, 64);
}

void weft_task_set_name(weft_task *t, const char *name)
{
    if (!t)
        return;
    weft_graph *g = t->g;
    size_t len = name ? strlen(name) : 0;
    size_t size = name_block_size(len);
    if (name && !size)
        return;   /* cannot be allocated: the old name stays */

    /* In place, if it fits the old block and uses a good part of it. */
    char *old = NULL;
    weft__graph_lock(g);
    if (g->names && t->index < g->names_cap)
        old = g->names[t->index];
    if (name && old) {
        weft__name *o = name_of_string(old);
        size_t cap = o->cap;
        if (len + 1 <= cap && size >= (offsetof(weft__name, s) + cap) / 4) {
            memcpy(old, name, len + 1);
            weft__graph_unlock(g);
            return;
        }
    }
    weft__graph_unlock(g);

    /* A new block, made and filled outside the lock: the dump and the
     * end of a run take the lock too. */
    weft__name *n = NULL;
    if (name) {
        n = weft__alloc(size);
        if (!n)
            return;   /* the old name stays */
        n->cap = size - offsetof(weft__name, s);
        memcpy(n->s, name, len + 1);
    }
    weft__graph_lock(g);
    if (n && !names_reserve(g, t->index)) {
        weft__graph_unlock(g);
        weft__free(n, size);   /* the old name stays */
        return;
    }
    /* What is there now, which another rename may have put there since
     * we looked: we replace it, so we free it. */
    old = g->names && t->index < g->names_cap ? g->names[t->index] : NULL;
    if (g->names && t->index < g->names_cap)
        g->names[t->index] = n ? n->s : NULL;
    weft__graph_unlock(g);
    name_free(old);
}
