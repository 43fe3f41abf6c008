/* This file is private to weft: weft_parallel_for and
 * weft_parallel_reduce.
 *
 * A loop is cut into chunks fixed by the range and the grain alone:
 * chunk k is [begin + k*step, begin + (k+1)*step), the last one shorter.
 * Pieces of consecutive chunks are split the way Cilk runs a parallel
 * loop: a piece of more than one chunk queues its upper half on its
 * worker's deque and goes on with the lower half, until one chunk is
 * left, which it runs. The owner then pops its newest (smallest) offer,
 * so it walks the range in order, while thieves take the oldest, largest
 * ones. Everything after a chunk has been offered before the chunk runs,
 * so a slow chunk holds up nothing but itself: an uneven loop balances.
 * Each piece costs a task record and a push and a pop; an automatic grain
 * keeps the chunks to about 64 per worker. With one worker (or none)
 * nothing is split.
 *
 * Reduction: the chunks are grouped into at most WEFT__REDUCE_SLOTS runs
 * of consecutive chunks ("slots"), a grouping fixed by the range and the
 * grain. Each slot starts from the identity and folds its chunks in order;
 * the caller then folds the slots in order. Which thread ran what never
 * shows in the result, so a floating-point sum is the same every run.
 *
 * Waiting. pending counts pieces queued or running; the piece that takes
 * it to zero opens `done`, a wait group, as its last touch of the loop
 * (the loop lives in the caller's frame). A task caller runs the root
 * piece itself, then its own pieces that nobody took (weft__help_until),
 * then waits on `done`, which suspends its fiber only if pieces are still
 * running elsewhere. With no workers the bound thread runs the root
 * piece itself, as a task does. A bound thread beside workers queues the
 * root piece and waits on `done` asleep in the kernel: beside workers a
 * bound thread runs no loop (its fibers would be stranded once it went
 * back to its own code), so it runs no other work meanwhile. A thread
 * outside the scheduler with a CPU spare for it takes a share of the
 * chunks itself (loop_outside), then spins a little before it sleeps on
 * `done` (weft__spin_until), since waking a sleeper costs tens of
 * microseconds on some machines, as much as a short loop itself.
 *
 * Synchronization
 *   pending   fetch_add (relaxed: the queue push that follows publishes
 *             the piece) before a piece is queued; fetch_sub (acq_rel) when
 *             one ends, so the one reaching zero has every piece's writes.
 *   done      the wait group's own release/acquire carries them on to the
 *             caller, and lets the caller free the loop once wait returns.
 *   a piece   (loop, b, e) in its task record's data words, written before
 *             the push that publishes the record.
 *   held      run_held's rest and share_task's next helper: a record in
 *             the fiber's held slot (core's weft__hold), counted in
 *             pending from the start; if the chunk blocks, suspend
 *             submits it and it ends itself (piece_end); if not, the
 *             holder frees it and takes its count back with a relaxed
 *             fetch_sub, which cannot reach zero (the holder's own piece
 *             still counts; its piece_end, acq_rel, carries the writes).
 *   share     an outside caller's chunks [lo, hi) in one word; the caller
 *             takes from the front and helpers from the back (the share's
 *             first chunk is the caller's before the word is set), each chunk
 *             by one CAS (relaxed: it only splits indices; a helper's
 *             writes reach the caller through pending and done).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "graph.h"

/* Chunks per worker that an automatic grain aims for. */
#define WEFT__AUTO_CHUNKS_PER_WORKER 64
/* Slots of a reduction: bounds its scratch memory and the final fold. */
#define WEFT__REDUCE_SLOTS 1024
/* Scratch up to this size lives in the caller's frame. */
#define WEFT__REDUCE_STACK 2048

typedef struct weft__loop weft__loop;
struct weft__loop {
    weft_sched *s;
    void (*chunks)(weft__loop *l, size_t b, size_t e);   /* runs chunks [b, e) */
    size_t begin, end, step;     /* iterations, and iterations per chunk */
    void *arg;
    weft_range_fn body;          /* parallel_for */
    /* parallel_reduce */
    weft_reduce_fn rbody;
    const void *identity;
    unsigned char *slots;
    size_t result_size, stride, per_slot;   /* per_slot: chunks in a slot */
    atomic_size_t pending;
    _Atomic uint64_t share;      /* an outside caller's share: chunks [lo, hi), SHARE(lo, hi) */
    weft_waitgroup done;
};

/* Helpers queued beside an outside caller's root piece, at most. */
#define WEFT__SHARE_HELPERS 8
#define SHARE(lo, hi) ((uint64_t)(lo) << 32 | (uint64_t)(uint32_t)(hi))

static void run_piece(weft__loop *l, size_t b, size_t e);

/* Chunks [b, e) of l, recorded as one chunk event when the thread
 * records (trace.c): args are iterations, not chunk numbers. */
static __attribute__((noinline)) void traced_chunks(weft__worker *w, weft__loop *l, size_t b, size_t e)
{
    size_t first = l->begin + b * l->step;
    size_t last = e * l->step >= l->end - l->begin ? l->end : l->begin + e * l->step;
    weft__hook_chunk(w, true, first, last);
    l->chunks(l, b, e);
    weft__hook_chunk(w, false, first, last);
}

/* A chunk is work handed off, never the function of the task that runs
 * the loop, wherever it runs: inline on that task's fiber it is nested
 * (fstate.nest), so weft_task_fail says EINVAL and weft_task_current
 * NULL there, as on any other worker. */
static inline void run_chunks(weft__loop *l, size_t b, size_t e)
{
    weft__worker *w = weft__tls_worker;
    if (!w) {
        l->chunks(l, b, e);   /* an outside thread: no graph task here */
        return;
    }
    weft__fstate *st = weft__fstate_cur(w);
    st->nest++;
    if (WEFT_UNLIKELY(weft__hooks(w) & WEFT__HOOK_TRACE))
        traced_chunks(w, l, b, e);
    else
        l->chunks(l, b, e);
    st->nest--;   /* the chunk may have blocked: its fiber's own state still (fibers are pinned) */
}

/* A piece (or a helper) is over: the one that ends the last opens done. */
static void piece_end(weft__loop *l)
{
    if (atomic_fetch_sub_explicit(&l->pending, 1, memory_order_acq_rel) == 1)   /* acq_rel: gathers every piece's writes */
        weft_waitgroup_done(&l->done);                                        /* the last touch of l */
}

static void piece_task(void *arg)
{
    weft__task *t = arg;
    run_piece((weft__loop *)(uintptr_t)t->data[0], (size_t)t->data[1], (size_t)t->data[2]);
}

/* Makes t run fn(t) on chunks [b, e) of l (piece_task, or share_task,
 * which ignores b and e). */
static void set_piece(weft__task *t, weft_fn fn, weft__loop *l, size_t b, size_t e,
                      weft__fiber *spawner)
{
    t->fn = fn;
    t->arg = t;
    t->spawner = spawner;
    t->data[0] = (uint64_t)(uintptr_t)l;
    t->data[1] = b;
    t->data[2] = e;
}

/* Queues the piece [b, e) from w. false if no record could be had: the
 * caller keeps the chunks. */
static bool offer(weft__loop *l, weft__worker *w, size_t b, size_t e)
{
    weft__task *t = weft__task_alloc(l->s, w);
    if (WEFT_UNLIKELY(!t))
        return false;
    set_piece(t, piece_task, l, b, e, weft__worker_fiber(w));
    atomic_fetch_add_explicit(&l->pending, 1, memory_order_relaxed);   /* relaxed: the push below publishes it */
    weft__submit(l->s, w, t, WEFT_HINT_NONE);
    return true;
}

/* A record for a piece a fiber will hold (the "held" protocol in the
 * Synchronization block): counted in pending from now on, so that if
 * it is queued while held it ends itself like any piece. NULL if no
 * record could be had (nothing counted). */
static weft__task *held_piece_new(weft__loop *l, weft__worker *w)
{
    weft__task *t = weft__task_alloc(l->s, w);
    if (WEFT_LIKELY(t != NULL))
        atomic_fetch_add_explicit(&l->pending, 1, memory_order_relaxed);   /* relaxed: a submit of the record publishes it */
    return t;
}

/* A held piece that was never queued: freed, and its count taken back.
 * Relaxed: the holder's own piece still counts, so this cannot reach
 * zero; its piece_end (acq_rel) carries the holder's writes. */
static void held_piece_drop(weft__loop *l, weft__worker *w, weft__task *t)
{
    weft__task_free(l->s, w, t);
    atomic_fetch_sub_explicit(&l->pending, 1, memory_order_relaxed);
}

/* Runs chunks [b, e) in order on this fiber, holding the rest: while
 * chunk k runs, [k + 1, e) waits in a record of its own in the fiber's
 * held slot (weft__hold), so if chunk k blocks the rest is queued before
 * the fiber leaves, and a chunk that waits for a later one is not stuck
 * behind it. The rest counts in pending from the start; once queued it
 * is a piece that ends itself, and this one stops. Without a record
 * (memory ran out) the chunks run in order, unheld. Callable from: a
 * thread of l's scheduler that runs tasks (a worker, or the bound thread
 * of a scheduler without workers, or one beside workers that helps). */
static void run_held(weft__loop *l, weft__worker *w, size_t b, size_t e)
{
    weft__task *rest = held_piece_new(l, w);
    if (WEFT_UNLIKELY(!rest)) {
        for (; b < e; b++)
            run_chunks(l, b, b + 1);
        return;
    }
    for (; b + 1 < e; b++) {
        /* No spawner: once queued the rest is nobody's child, so a
         * weft_wait_until in a later chunk never runs it inline. */
        set_piece(rest, piece_task, l, b + 1, e, NULL);
        weft__hold(w, rest);
        run_chunks(l, b, b + 1);
        if (!weft__unhold(w, rest))
            return;   /* chunk b blocked: the rest was queued, a piece of its own */
    }
    held_piece_drop(l, w, rest);
    run_chunks(l, b, e);
}

/* Runs the piece [b, e) of chunks: offers upper halves until one chunk
 * is left, runs what is left, then ends the piece. With one worker (or
 * none) nothing is offered: the chunks run in order, the rest held. */
static void run_piece(weft__loop *l, size_t b, size_t e)
{
    weft__worker *w = weft__tls_worker;
    if (w && weft__worker_sched(w) == l->s) {
        /* A bound thread beside workers (helping, worker.c) offers
         * nothing, as it keeps no deque, but holds the rest like any
         * thread that runs tasks: a chunk of its that blocks hands the
         * rest to the global ring (weft__submit). */
        if (!weft__worker_is_bound(w) && weft__sched_workers(l->s) > 1) {
            while (e - b > 1 && offer(l, w, b + (e - b) / 2, e))
                e = b + (e - b) / 2;
        }
        if (e - b > 1) {   /* one worker, or a record was missing */
            run_held(l, w, b, e);
            piece_end(l);
            return;
        }
    }
    for (; b < e; b++)
        run_chunks(l, b, b + 1);
    piece_end(l);
}

/* Runs a whole chunk range inline, one chunk per call. */
static void for_chunks(weft__loop *l, size_t b, size_t e)
{
    size_t lo = l->begin + b * l->step;
    size_t n = (e - b) * l->step;
    size_t hi = l->end - lo > n ? lo + n : l->end;
    l->body(lo, hi, l->arg);
}

/* Takes one chunk of an outside caller's share into *k: the caller takes
 * from the front, helpers from the back. false once it is empty. */
static bool share_take(weft__loop *l, bool front, size_t *k)
{
    uint64_t v = atomic_load_explicit(&l->share, memory_order_relaxed);
    for (;;) {
        uint32_t lo = (uint32_t)(v >> 32), hi = (uint32_t)v;
        if (lo >= hi)
            return false;
        uint64_t next = front ? SHARE(lo + 1, hi) : SHARE(lo, hi - 1);
        /* relaxed: the word only splits indices; what a helper's chunks
         * wrote reaches the caller through pending and done. */
        if (atomic_compare_exchange_weak_explicit(&l->share, &v, next,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            *k = front ? lo : hi - 1;
            return true;
        }
    }
}

/* Is the caller's share all taken? A hint: it only shrinks. */
static bool share_empty(weft__loop *l)
{
    uint64_t v = atomic_load_explicit(&l->share, memory_order_relaxed);   /* relaxed: a hint */
    return (uint32_t)(v >> 32) >= (uint32_t)v;
}

/* Times a helper goes behind its worker's own queued work before it
 * helps anyway (see share_task). */
#define WEFT__SHARE_DEFERS 64

/* A helper: runs chunks from the back of the caller's share, so a share
 * that turns out slow is finished by whoever is free. A helper that runs
 * while its worker still has work of its own queued (a worker picks the
 * global ring now and then, not only when idle) is not free: it would
 * take a chunk the caller is about to reach and leave the caller waiting
 * while the worker runs both (a sort's pieces: the caller sorted one of
 * its two). So it queues itself again behind everything (YIELD, in a
 * new record: this one is freed when it returns), up to
 * WEFT__SHARE_DEFERS times (data[1] counts them), after which it helps
 * regardless: a worker that never runs out of work of its own still ends
 * the loop. Its count in pending passes to the new record. While a chunk runs
 * it holds another helper (weft__hold): if the chunk blocks, that one is
 * queued and goes on with the share, so chunks of the share that wait
 * for each other are not stuck behind the blocked one. Callable from: a
 * worker of l's scheduler. */
static void share_task(void *arg)
{
    weft__task *t = arg;
    weft__loop *l = (weft__loop *)(uintptr_t)t->data[0];   /* read before any chunk reuses the record */
    weft__worker *w = weft__tls_worker;
    uint64_t defers = t->data[1];
    if (defers < WEFT__SHARE_DEFERS && weft__worker_has_queued(w) && !share_empty(l)) {
        weft__task *again = weft__task_alloc(l->s, w);
        if (again) {
            set_piece(again, share_task, l, (size_t)defers + 1, 0, NULL);
            weft__submit(l->s, w, again, WEFT_HINT_YIELD);
            return;
        }
    }
    weft__task *next = NULL;
    size_t k;
    while (share_take(l, false, &k)) {
        if (!next && (next = held_piece_new(l, w)) != NULL)
            set_piece(next, share_task, l, 0, 0, NULL);   /* nobody's child, as in run_held */
        if (next)
            weft__hold(w, next);
        run_chunks(l, k, k + 1);
        if (next && !weft__unhold(w, next))
            next = NULL;   /* queued while the chunk blocked: it helps on its own */
    }
    if (next)
        held_piece_drop(l, w, next);
    piece_end(l);
}

static bool loop_finished(void *ctx)
{
    weft__loop *l = ctx;
    return atomic_load_explicit(&l->pending, memory_order_acquire) == 0;   /* acquire: pairs with the pieces' fetch_sub */
}

/* A thread outside the scheduler (no weft worker at all, or one of
 * another scheduler's). With no workers it runs every chunk itself, in
 * order, and so a loop of one chunk with a CPU spare for it. With a CPU
 * spare for it (fewer
 * workers than CPUs), it runs a share of the chunks, 1/(workers + 1) of
 * them, from the front (the first one its own from the start), while
 * the workers take the rest as a root piece; helpers queued after the
 * root take chunks from the back of the share once the workers have
 * nothing else, so a slow share balances too.
 * Otherwise it queues everything and sleeps: running beside every worker
 * would leave one of them without a CPU in the middle of a chunk. */
static int loop_outside(weft__loop *l, size_t nchunks)
{
    weft_sched *s = l->s;
    unsigned nw = weft__sched_workers(s);
    if (nw == 0 || (nchunks == 1 && weft__sched_spare_cpu(s))) {
        /* Nobody else would run the chunks: the caller runs them itself,
         * in order (so here a chunk must not wait for a later one; a
         * bound thread runs them as tasks instead). A single chunk, with
         * a CPU spare for the caller, is run here too: there is nothing
         * to share, and handing it to a worker would only add the wake
         * of one (tens of microseconds, more on a loaded machine) while
         * the caller waits. The check an external
         * spawn makes: refused once destroy has begun. Nothing below
         * touches s, so destroy may go on. */
        if (weft__sched_closing(s))   /* seq_cst, as every access to shutdown; pairs with destroy's store */
            return WEFT_ESHUTDOWN;
        for (size_t k = 0; k < nchunks; k++)
            run_chunks(l, k, k + 1);
        piece_end(l);   /* the root's count: opens done */
        return WEFT_OK;
    }
    size_t mine = 0;
    if (weft__sched_spare_cpu(s) && nchunks >= 2 && nchunks <= UINT32_MAX) {
        mine = nchunks / (nw + 1);
        if (mine == 0)
            mine = 1;
    }
    weft__task *root = weft__task_alloc(s, NULL);
    if (!root)
        return WEFT_ENOMEM;
    weft__task *helper[WEFT__SHARE_HELPERS];
    unsigned nh = 0, want = nw < WEFT__SHARE_HELPERS ? nw : WEFT__SHARE_HELPERS;
    /* The caller's first chunk is its own from the start: a helper that
     * ran before the caller got to its share could otherwise take every
     * chunk of a small one (a loop of two chunks ran on one thread). The
     * helpers share the rest. */
    if (want > (mine ? mine - 1 : 0))
        want = mine ? (unsigned)(mine - 1) : 0;
    while (nh < want && (helper[nh] = weft__task_alloc(s, NULL)) != NULL)
        nh++;   /* fewer helpers only balance less */
    atomic_init(&l->share, SHARE(mine ? 1 : 0, mine));
    atomic_store_explicit(&l->pending, 1 + nh, memory_order_relaxed);   /* relaxed: the submits publish it */
    set_piece(root, piece_task, l, mine, nchunks, NULL);
    int rc = weft__submit_external(s, root, WEFT_HINT_NONE);
    if (rc != WEFT_OK) {
        weft__task_free(s, NULL, root);
        for (unsigned i = 0; i < nh; i++)
            weft__task_free(s, NULL, helper[i]);
        return rc;
    }
    for (unsigned i = 0; i < nh; i++) {
        set_piece(helper[i], share_task, l, 0, 0, NULL);
        if (weft__submit_external(s, helper[i], WEFT_HINT_NONE) != WEFT_OK) {
            weft__task_free(s, NULL, helper[i]);   /* destroy began: the root still runs */
            piece_end(l);
        }
    }
    size_t k;
    if (mine)
        run_chunks(l, 0, 1);
    while (share_take(l, true, &k))
        run_chunks(l, k, k + 1);
    /* A short loop ends before a sleeping caller would be woken. */
    weft__spin_until(s, loop_finished, l);
    return WEFT_OK;
}

/* Waits until every piece of l has ended: l lives in the caller's frame,
 * so this may not fail. A task's wait fails (WEFT_ENOMEM) only when its
 * worker has no fiber to go on with and none can be mapped: then it runs
 * its own queued pieces inline where it can, sleeps a moment, and waits
 * again. Callable from: the loop's caller. */
static void wait_loop(weft__loop *l, weft__worker *w)
{
    while (weft_waitgroup_wait(&l->done) != WEFT_OK) {
        if (w && weft__worker_sched(w) == l->s && !weft__worker_is_bound(w))
            weft__help_until(w, loop_finished, l);
        weft__os_sleep_ns(WEFT__RETRY_NS);
    }
}

/* Runs chunks [0, nchunks) of l and waits for all of them. */
/* Stall reports and traces name a loop's pieces (their functions are
 * this file's own, which no symbol table names). */
static pthread_once_t namer_once = PTHREAD_ONCE_INIT;

static void add_namers(void)
{
    weft__task_namer_add(piece_task, "parallel loop", NULL);
    weft__task_namer_add(share_task, "parallel loop", NULL);
}

static int loop_run(weft__loop *l, size_t nchunks)
{
    pthread_once(&namer_once, add_namers);
    weft_sched *s = l->s;
    weft__worker *w = weft__tls_worker;
    atomic_init(&l->pending, 1);
    weft_waitgroup_init(&l->done, 1);
    int rc = WEFT_OK;
    if (w && weft__worker_sched(w) == s && (!weft__worker_is_bound(w) || weft__sched_workers(s) == 0)) {
        /* A task of s, or the thread that runs everything: root inline. */
        run_piece(l, 0, nchunks);
        if (!weft__worker_is_bound(w))
            weft__help_until(w, loop_finished, l);
    } else if (!w || weft__sched_workers(s) == 0) {
        rc = loop_outside(l, nchunks);
    } else {
        /* A bound thread beside workers (its wait sleeps in the kernel),
         * or a worker of another scheduler (its fiber waits, its worker
         * runs other work): queue the root, wait. */
        weft__task *t = weft__task_alloc(s, NULL);
        if (!t) {
            rc = WEFT_ENOMEM;
        } else {
            set_piece(t, piece_task, l, 0, nchunks, NULL);
            rc = weft__submit_external(s, t, WEFT_HINT_NONE);
            if (rc != WEFT_OK)
                weft__task_free(s, NULL, t);
        }
    }
    if (rc == WEFT_OK)
        wait_loop(l, w);
    weft_waitgroup_destroy(&l->done);
    return rc;
}

/* Iterations per chunk when the caller leaves it to us. */
static size_t auto_step(const weft_sched *s, size_t n)
{
    size_t target = (size_t)(weft__sched_workers(s) ? weft__sched_workers(s) : 1) * WEFT__AUTO_CHUNKS_PER_WORKER;
    size_t step = n / target;
    return step ? step : 1;
}

static size_t div_up(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

int weft_parallel_for(weft_sched *s, size_t begin, size_t end, size_t grain,
                      weft_range_fn body, void *arg)
{
    if (!s || !body || begin > end)
        return WEFT_EINVAL;
    size_t n = end - begin;
    if (n == 0)
        return WEFT_OK;
    weft__loop l = {
        .s = s, .chunks = for_chunks, .begin = begin, .end = end,
        .step = grain ? grain : auto_step(s, n), .arg = arg, .body = body,
    };
    return loop_run(&l, div_up(n, l.step));
}

/* Runs slots [b, e): each from the identity, its chunks in order. */
static void reduce_chunks(weft__loop *l, size_t b, size_t e)
{
    for (size_t i = b; i < e; i++) {
        unsigned char *slot = l->slots + i * l->stride;
        memcpy(slot, l->identity, l->result_size);
        size_t lo = l->begin + i * l->per_slot * l->step;   /* no overflow: lo < end */
        for (size_t k = 0; k < l->per_slot && lo < l->end; k++) {
            size_t hi = l->end - lo > l->step ? lo + l->step : l->end;
            l->rbody(lo, hi, slot, l->arg);
            lo = hi;
        }
    }
}

int weft_parallel_reduce(weft_sched *s, size_t begin, size_t end, size_t grain,
                         void *result, size_t result_size, const void *identity,
                         weft_reduce_fn body, weft_combine_fn combine, void *arg)
{
    if (!s || !result || result_size == 0 || !identity || !body || !combine || begin > end)
        return WEFT_EINVAL;
    size_t n = end - begin;
    if (n == 0) {
        memmove(result, identity, result_size);
        return WEFT_OK;
    }
    /* The grouping depends on n and the grain only: an automatic grain
     * aims for WEFT__REDUCE_SLOTS chunks whatever the worker count, so
     * the result does not change with it either. */
    size_t step = grain ? grain : div_up(n, WEFT__REDUCE_SLOTS);
    size_t nchunks = div_up(n, step);
    size_t per_slot = div_up(nchunks, WEFT__REDUCE_SLOTS);
    size_t nslots = div_up(nchunks, per_slot);
    /* Slots a cache line apart: bodies accumulate into them in place. */
    size_t stride = (result_size + WEFT_CACHELINE - 1) & ~(size_t)(WEFT_CACHELINE - 1);
    if (stride < result_size || nslots > SIZE_MAX / stride)
        return WEFT_ENOMEM;
    size_t bytes = nslots * stride, cap = 0;
    _Alignas(WEFT_CACHELINE) unsigned char local[WEFT__REDUCE_STACK];
    unsigned char *slots = local;
    if (bytes > sizeof local) {
        slots = weft__scratch_get(s, bytes, &cap);   /* reused: steady state allocates nothing */
        if (!slots)
            return WEFT_ENOMEM;
    }
    weft__loop l = {
        .s = s, .chunks = reduce_chunks, .begin = begin, .end = end, .step = step,
        .arg = arg, .rbody = body, .identity = identity, .slots = slots,
        .result_size = result_size, .stride = stride, .per_slot = per_slot,
    };
    int rc = loop_run(&l, nslots);
    if (rc == WEFT_OK) {
        memmove(result, slots, result_size);
        for (size_t i = 1; i < nslots; i++)
            combine(result, slots + i * stride, arg);
    }
    if (slots != local)
        weft__scratch_put(s, slots, cap);
    return rc;
}
