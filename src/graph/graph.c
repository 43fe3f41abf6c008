/* This file is private to weft: building task graphs, and the check made
 * once per change (duplicate edges, cycles, roots and sinks).
 *
 * Synchronization
 *   Every field a build call writes (nodes, successor lists, npred, the
 *   arena, names, checked) is written under g's lock, and only while no
 *   run is in flight (the calls check `run` under the lock and return
 *   WEFT_EBUSY otherwise; names are the exception: set under the lock at
 *   any time, read under it by the dump). A run reads the structure
 *   without the lock: weft_graph_run sets `run` under the lock after the
 *   last change, and the roots reach the workers through the queues
 *   (release/acquire), so every worker sees the finished structure.
 *   join   equals npred between runs (for roots after the check: the place
 *          in roots). Edges added here bump it and npred (relaxed: no run
 *          reads it now); the check recomputes both.
 *
 * Memory. Nodes live in blocks of WEFT__BLOCK_NODES (their addresses never
 * move: weft_task pointers stay valid). Successor arrays come from a bump
 * arena of chunks; a successor array that outgrows its capacity is copied
 * into one twice as large, and the old one stays in the arena (at most as
 * much again as the final arrays). Names are blocks of their own, reused
 * or freed when replaced (see weft_task_set_name), since renaming is
 * allowed at any time. Everything is freed by weft_graph_destroy.
 *
 * Duplicate edges are kept when added (an append, no search) and removed
 * by the check, in O(nodes + edges) with one scratch word per node: an edge
 * added twice acts as one edge, and adding one stays O(1) even for a task
 * with 10^5 successors.
 */
#include <stddef.h>
#include <string.h>

#include "graph.h"

/* ---- the arena -------------------------------------------------------------- */

#define CHUNK_BYTES ((size_t)64 * 1024)

/* Caller holds the lock. 8-byte aligned; NULL: out of memory. */
static void *arena_alloc(weft_graph *g, size_t bytes)
{
    bytes = (bytes + 7) & ~(size_t)7;
    if ((size_t)(g->bump_end - g->bump) < bytes) {
        size_t size = sizeof(weft__chunk) + bytes;
        if (size < CHUNK_BYTES)
            size = CHUNK_BYTES;
        weft__chunk *c = weft__alloc(size);
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

static void describe_task(void *arg, char *buf, size_t cap);
static void name_free(char *s);

static pthread_once_t namer_once = PTHREAD_ONCE_INIT;

static void add_namer(void)
{
    weft__task_namer_add(weft__node_entry, "graph task", describe_task);
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
    atomic_init(&g->lock, false);
    atomic_init(&g->run, 0);
    atomic_init(&g->cancel_epoch, WEFT__NO_EPOCH);
    atomic_init(&g->sinks_left, 0);
    atomic_init(&g->skipped, false);
    g->result = WEFT_OK;
    *out = g;
    return WEFT_OK;
}

/* Makes room for index i in a growable array of pointers: *arrp points
 * to it (a T ** for some T, any of weft's pointer arrays), *cap is its
 * capacity, which doubles from `first`. New slots are NULL. Caller holds
 * the lock. false: out of memory, nothing changed. */
static bool slots_reserve(void *arrp, uint32_t *cap, uint32_t i, uint32_t first)
{
    if (i < *cap)
        return true;
    uint32_t n = *cap ? *cap : first;
    while (n <= i)
        n *= 2;
    void **nn = weft__calloc(sizeof *nn * n);
    if (!nn)
        return false;
    void **old;
    memcpy(&old, arrp, sizeof old);   /* the T ** as a void **: same representation */
    if (old) {
        memcpy(nn, old, sizeof *nn * *cap);
        weft__free(old, sizeof *nn * *cap);
    }
    memcpy(arrp, &nn, sizeof nn);
    *cap = n;
    return true;
}

static bool running(const weft_graph *g)
{
    return atomic_load_explicit(&g->run, memory_order_relaxed) & 1u;   /* under lock: the lock orders it */
}

int weft_graph_destroy(weft_graph *g)
{
    if (!g)
        return WEFT_EINVAL;
    weft__graph_lock(g);
    if (running(g)) {
        weft__graph_unlock(g);
        return WEFT_EBUSY;
    }
    /* Not running: the finisher's unlock was the last touch of g by any
     * worker (run.c), and we hold the lock after it. */
    for (uint32_t b = 0; b < g->nblocks; b++)
        weft__free(g->blocks[b], sizeof(weft_task) * WEFT__BLOCK_NODES);
    if (g->blocks)
        weft__free(g->blocks, sizeof *g->blocks * g->blocks_cap);
    for (weft__chunk *c = g->chunks, *next; c; c = next) {
        next = c->next;
        weft__free(c, c->size);
    }
    if (g->names) {
        for (uint32_t i = 0; i < g->names_cap; i++)
            name_free(g->names[i]);
        weft__free(g->names, sizeof *g->names * g->names_cap);
    }
    if (g->roots)
        weft__free(g->roots, sizeof *g->roots * g->nroots);
    weft__free(g, sizeof *g);
    return WEFT_OK;
}

/* ---- tasks ----------------------------------------------------------------- */

int weft_graph_add_task(weft_graph *g, weft_fn fn, void *arg, weft_task **out)
{
    if (!out)
        return WEFT_EINVAL;
    *out = NULL;
    if (!g)
        return WEFT_EINVAL;
    weft__graph_lock(g);
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
    if ((i & (WEFT__BLOCK_NODES - 1)) == 0) {
        /* A new block; first make room to remember it, so a failure
         * leaves nothing behind. */
        if (!slots_reserve(&g->blocks, &g->blocks_cap, g->nblocks, 16)) {
            rc = WEFT_ENOMEM;
            goto out;
        }
        weft_task *blk = weft__alloc(sizeof(weft_task) * WEFT__BLOCK_NODES);
        if (!blk) {
            rc = WEFT_ENOMEM;
            goto out;
        }
        g->blocks[g->nblocks++] = blk;
    }
    weft_task *t = weft__graph_node(g, i);
    memset(t, 0, sizeof *t);
    t->rec.fn = weft__node_entry;
    t->rec.arg = t;
    t->rec.flags = 0;             /* not pooled: the graph owns it */
    t->rec.spawner = NULL;        /* never run inline by wait_until's child rule */
    t->fn = fn;
    t->arg = arg;
    t->g = g;
    t->index = i;
    atomic_init(&t->join, 0);
    /* Visited in no run: the last run's epoch with no visit recorded. */
    uint32_t epoch = atomic_load_explicit(&g->run, memory_order_relaxed) >> 1;
    atomic_init(&t->ctl, epoch << WEFT__CTL_EPOCH_SHIFT);
    atomic_init(&t->done, WEFT__NO_EPOCH);
    g->n = i + 1;
    g->checked = false;
    *out = t;
out:
    weft__graph_unlock(g);
    return rc;
}

weft_task *weft_graph_add(weft_graph *g, weft_fn fn, void *arg)
{
    weft_task *t;
    return weft_graph_add_task(g, fn, arg, &t) == WEFT_OK ? t : NULL;
}

size_t weft_graph_size(const weft_graph *g)
{
    if (!g)
        return 0;
    weft_graph *m = (weft_graph *)g;   /* the lock only */
    weft__graph_lock(m);
    size_t n = g->n;
    weft__graph_unlock(m);
    return n;
}

/* ---- edges ---------------------------------------------------------------- */

/* Capacity of an arena successor array holding n > WEFT__SUCC_INLINE. */
static uint32_t succ_cap(uint32_t n)
{
    uint32_t c = 4;
    while (c < n)
        c *= 2;
    return c;
}

/* Appends v to t's successors. Caller holds the lock. */
static int succ_append(weft_graph *g, weft_task *t, weft_task *v)
{
    uint32_t n = t->nsucc;
    if (n < WEFT__SUCC_INLINE) {
        t->succ.inl[n] = v;
    } else if (n == WEFT__SUCC_INLINE || n == succ_cap(n)) {
        /* Full: the inline slots, or an array at its capacity. */
        uint32_t cap = n == WEFT__SUCC_INLINE ? 4 : n * 2;
        if (cap < n)
            return WEFT_ENOMEM;   /* 32-bit overflow */
        weft_task **a = arena_alloc(g, sizeof *a * cap);
        if (!a)
            return WEFT_ENOMEM;
        memcpy(a, weft__succ(t), sizeof *a * n);
        a[n] = v;
        t->succ.arr = a;
    } else {
        t->succ.arr[n] = v;
    }
    t->nsucc = n + 1;
    return WEFT_OK;
}

int weft_task_precede(weft_task *t, weft_task *successor)
{
    if (!t || !successor || t == successor || t->g != successor->g)
        return WEFT_EINVAL;
    weft_graph *g = t->g;
    weft__graph_lock(g);
    int rc;
    if (running(g)) {
        rc = WEFT_EBUSY;
    } else if (successor->npred == UINT32_MAX) {
        rc = WEFT_ENOMEM;   /* counts are 32-bit */
    } else {
        rc = succ_append(g, t, successor);
        if (rc == WEFT_OK) {
            successor->npred++;
            atomic_store_explicit(&successor->join,
                atomic_load_explicit(&successor->join, memory_order_relaxed) + 1,
                memory_order_relaxed);   /* no run reads it now; the run's start publishes it */
            g->checked = false;
        }
    }
    weft__graph_unlock(g);
    return rc;
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
static void name_free(char *s)
{
    if (s) {
        weft__name *n = name_of_string(s);
        weft__free(n, offsetof(weft__name, s) + n->cap);
    }
}

/* Makes room for index i in g->names. Caller holds the lock. false: out
 * of memory, nothing changed. */
static bool names_reserve(weft_graph *g, uint32_t i)
{
    return slots_reserve(&g->names, &g->names_cap, i, 64);
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

/* How long a stall report waits for a graph's lock to read a name: the
 * report holds a worker's reg_lock meanwhile, and the other locks it
 * takes are bounded too. During a run (the only time a task is
 * described) the graph's lock is held only briefly: by waits, renames,
 * the dump's rendering and the end of the run. */
#define DESCRIBE_PATIENCE_NS ((uint64_t)10 * 1000 * 1000)

/* Stall reports (core's namer interface): the task's name in quotes
 * (control characters as '?') or its number, then its and its graph's
 * addresses; "#N, name not read: graph busy" if g's lock was not had in
 * time. Callable from: a report, under the reg_lock of the worker on
 * which a fiber blocked inside t: t's run is in flight, so t and g stay. */
static void describe_task(void *arg, char *buf, size_t cap)
{
    weft_task *t = arg;
    weft_graph *g = t->g;
    size_t n = 0;
    if (!weft__graph_lock_for(g, DESCRIBE_PATIENCE_NS)) {
        int k = snprintf(buf, cap, "#%u, name not read: graph busy", t->index);
        n = k < 0 ? 0 : (size_t)k;
        if (n < cap)
            snprintf(buf + n, cap - n, " (task %p of graph %p)", (void *)t, (void *)g);
        return;
    }
    const char *name = g->names && t->index < g->names_cap ? g->names[t->index] : NULL;
    if (name && cap > 2) {
        buf[n++] = '"';
        for (; *name && n + 2 < cap; name++)
            buf[n++] = (unsigned char)*name < 0x20 || *name == 0x7f ? '?' : *name;
        buf[n++] = '"';
        buf[n] = '\0';
    } else {
        int k = snprintf(buf, cap, "#%u", t->index);
        n = k < 0 ? 0 : (size_t)k;
    }
    weft__graph_unlock(g);
    if (n < cap)
        snprintf(buf + n, cap - n, " (task %p of graph %p)", (void *)t, (void *)g);
}

/* ---- the check, once per change ---------------------------------------------- */

/* Removes t's duplicate successors, using mark[] (one word per node, the
 * stamp of the last node whose list named it). */
static void dedup(weft_task *t, uint32_t stamp, uint32_t *mark)
{
    weft_task **s = weft__succ(t);
    uint32_t n = t->nsucc, k = 0;
    for (uint32_t j = 0; j < n; j++) {
        weft_task *v = s[j];
        if (mark[v->index] == stamp)
            continue;
        mark[v->index] = stamp;
        s[k++] = v;
    }
    if (k == n)
        return;
    if (n > WEFT__SUCC_INLINE && k <= WEFT__SUCC_INLINE) {
        /* Back inline; the array's storage overlaps the inline slots. */
        weft_task *keep[WEFT__SUCC_INLINE];
        memcpy(keep, s, sizeof *keep * k);
        memcpy(t->succ.inl, keep, sizeof *keep * k);
    }
    t->nsucc = k;
}

int weft__graph_check(weft_graph *g)
{
    if (g->checked)
        return WEFT_OK;
    if (g->cyclic)
        return WEFT_ECYCLE;
    uint32_t n = g->n;
    if (n == 0) {
        if (g->roots)
            weft__free(g->roots, sizeof *g->roots * g->nroots);
        g->roots = NULL;
        g->nroots = g->nsinks = 0;
        g->checked = true;
        return WEFT_OK;
    }
    uint32_t *scratch = weft__calloc(sizeof *scratch * n);
    if (!scratch)
        return WEFT_ENOMEM;

    /* 1. Duplicate edges go; predecessors are counted again. Stamps are
     *    index + 1 so that the zeroed scratch matches no node. */
    for (uint32_t i = 0; i < n; i++)
        weft__graph_node(g, i)->npred = 0;
    for (uint32_t i = 0; i < n; i++) {
        weft_task *t = weft__graph_node(g, i);
        dedup(t, i + 1, scratch);
        weft_task **s = weft__succ(t);
        for (uint32_t j = 0; j < t->nsucc; j++)
            s[j]->npred++;
    }

    /* 2. Kahn's algorithm with the join counters as the in-degrees and
     *    scratch as the queue of indices; roots are queued first. */
    uint32_t head = 0, tail = 0, nsinks = 0;
    for (uint32_t i = 0; i < n; i++) {
        weft_task *t = weft__graph_node(g, i);
        atomic_store_explicit(&t->join, t->npred, memory_order_relaxed);   /* no run now */
        if (t->npred == 0)
            scratch[tail++] = i;
        if (t->nsucc == 0)
            nsinks++;
    }
    uint32_t nroots = tail;
    while (head < tail) {
        weft_task *t = weft__graph_node(g, scratch[head++]);
        weft_task **s = weft__succ(t);
        for (uint32_t j = 0; j < t->nsucc; j++) {
            uint32_t left = atomic_load_explicit(&s[j]->join, memory_order_relaxed) - 1;
            atomic_store_explicit(&s[j]->join, left, memory_order_relaxed);
            if (left == 0)
                scratch[tail++] = s[j]->index;
        }
    }
    bool acyclic = tail == n;

    /* 3. Join counters back to npred: the invariant between runs. A
     *    root's counter is never decremented; it holds its place in the
     *    roots array instead (the spread, run.c). */
    for (uint32_t i = 0; i < n; i++) {
        weft_task *t = weft__graph_node(g, i);
        atomic_store_explicit(&t->join, t->npred, memory_order_relaxed);
    }
    if (acyclic)
        for (uint32_t i = 0; i < nroots; i++)
            atomic_store_explicit(&weft__graph_node(g, scratch[i])->join, i, memory_order_relaxed);

    int rc = WEFT_OK;
    if (!acyclic) {
        g->cyclic = true;
        rc = WEFT_ECYCLE;
    } else {
        weft_task **roots = weft__alloc(sizeof *roots * nroots);
        if (!roots) {
            rc = WEFT_ENOMEM;   /* the deduplicated graph is the same graph */
        } else {
            for (uint32_t i = 0; i < nroots; i++)
                roots[i] = weft__graph_node(g, scratch[i]);
            if (g->roots)
                weft__free(g->roots, sizeof *g->roots * g->nroots);
            g->roots = roots;
            g->nroots = nroots;
            g->nsinks = nsinks;
            g->checked = true;
        }
    }
    weft__free(scratch, sizeof *scratch * n);
    return rc;
}
