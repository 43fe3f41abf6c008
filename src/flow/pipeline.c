/* This file is private to weft: pipelines (weft_pipeline_*, weft_pipe_*).
 *
 * A pipeline of L lines and S stages moves tokens 0, 1, 2, ...; token t
 * rides line t mod L through every stage. Which (line, stage) may run
 * next is kept by a join counter per pair, jc[l][k], counting what it
 * still waits for before the token now on line l may enter stage k:
 *   - the same token leaving stage k - 1 (k > 0: the line is sequential);
 *   - for a serial stage, the previous token (on line l - 1) leaving
 *     stage k: tokens pass a serial stage in order. Stage 0 is serial, and
 *     the previous token leaving it also says it was not the stop;
 *   - for stage 0, line l being free: its previous token (t - L) has left
 *     the last stage.
 * So stage 0 and serial stages count 2 per token, parallel stages 1; at
 * the start token 0's stage 0 counts 0 (it runs), every other line's
 * stage 0 counts 1 (the line is free), token 0's serial stages 1.
 * Whoever takes a counter to zero owns the pair: it sets the line's next
 * stage and runs it inline, on the same fiber: its own line's next pair
 * (the next stage, or from the last stage the next token's first) if it
 * got that one, else the other line's; a second pair released at once
 * (the other line's, when both were) is queued as a task. The runner resets its
 * pair's counter before it calls the stage: the next decrement of that
 * pair belongs to the next token on the line, which cannot come before
 * this one leaves the stage (a serial stage's next token waits for it;
 * the same line's next stage comes after it).
 *
 * One line (L = 1) needs none of this: its tokens pass one at a time, in
 * a plain loop (one_line).
 *
 * Stopping: a first stage that calls weft_pipe_stop releases nothing the
 * usual way, so no later token starts; tokens already past stage 0
 * finish. The stopper (token t on line l) sets `stopped`, then gives every
 * other line's stage-0 pair the count the previous token would have given
 * it. Nothing else ever can: a line's next token would follow t or a
 * token after it, none of which leaves stage 0. So each other line's pair
 * reaches zero exactly when the line is free, its last token having left
 * the last stage, at the stopper's release or at that line's own. Whoever
 * takes it to zero finds `stopped` set and, instead of a stage 0, counts
 * the line off `lines_left`; the last count ends the run (the wait group
 * `done`). The stopper holds one count of its own until it has released
 * every line, so the run cannot end under its loop. No count is kept per
 * token.
 *
 * Short stages: a line queued for later (line_queue) goes to this
 * worker's LIFO slot and, as any submit, wakes a parked worker to take it
 * if nobody searches. With stages of tens of nanoseconds that wake is
 * futile: the worker woken finds the line gone (its owner reached it
 * first; a thief leaves a LIFO slot alone for microseconds) and parks
 * again, and each park and wake costs both workers system calls and
 * an interrupt (a 2-CPU VM: 170,000 parks a second, the pipeline 5x
 * slower at two workers than at one). So every WEFT__PIPE_SAMPLE-th
 * stage of a line is timed, and while the last one timed ran under
 * WEFT__PIPE_SHORT_NS, lines are queued quietly (weft__submit_quiet):
 * nobody is woken for them; a worker already searching may still take
 * one, and the queuing worker runs them as soon as its current pair ends
 * or blocks (a stage may block: the worker goes on with the queued
 * lines). A line waits at most for the stages its worker runs first,
 * short ones by the measure; one that turns long is seen within
 * WEFT__PIPE_SAMPLE stages of a line and the wakes resume. Each run
 * starts with wakes, until a stage is timed.
 *
 * Synchronization
 *   quiet     relaxed: a hint that only chooses between two submits that
 *             both queue the line where its worker runs it.
 *   jc        fetch_sub (acq_rel): the decrement reaching zero has the
 *             writes of everyone who counted before, and passes them on
 *             with the queueing. The reset is a relaxed store: the next
 *             decrement comes after this stage, through other acq_rel
 *             counters and queueings.
 *   a line    stage, token, stop: written and read only by whoever owns
 *             the line's current pair (ownership moves by jc).
 *   next_tok, tokens  only stage 0 touches them, and stage 0 runs one at
 *             a time, ordered by its jc chain.
 *   stopped   stored (release) by the stopper before its releases;
 *             loaded (acquire) by the owner of a stage-0 pair, who got
 *             it through the stopper's release if it was set.
 *   lines_left  stored by the stopper before its releases (they publish
 *             it); fetch_sub (acq_rel: the last one has every line's
 *             writes and hands them to the waiter through `done`).
 *   running   CAS (acquire) at a run's start, store (release) at its end.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "core_api.h"

#define WEFT__PIPE_MAX 65536
/* Every this many stages of a line, one is timed. */
#define WEFT__PIPE_SAMPLE 64
/* A stage timed under this is short: handing its line to another worker
 * (a wake, then that worker's look) costs more than the stage. */
#define WEFT__PIPE_SHORT_NS 2000

struct weft_pipe {
    weft__task rec;              /* queued when the line's next stage is ready */
    weft_pipeline *pl;
    size_t line;
    size_t stage;
    uint64_t token;
    uint32_t calls;              /* stages run on this line: every WEFT__PIPE_SAMPLE-th is timed */
    bool stop;
} __attribute__((aligned(64)));

struct weft_pipeline {
    size_t nlines, nstages;
    weft_pipe_stage *stages;
    weft_pipe *lines;
    atomic_int *jc;              /* [line * jstride + stage] */
    size_t jstride;              /* a multiple of 16: 64 bytes */
    weft_sched *s;
    uint64_t next_tok;
    uint64_t tokens;
    atomic_bool stopped;
    atomic_size_t lines_left;    /* after a stop: lines not yet free, + 1 */
    atomic_bool running;
    atomic_bool quiet;           /* stages measured short: queue lines without a wake */
    weft_waitgroup done;
    size_t bytes;                /* what was allocated, in one block */
};

static int deps(const weft_pipeline *pl, size_t k)
{
    return k == 0 || pl->stages[k].kind == WEFT_PIPE_SERIAL ? 2 : 1;
}

static void line_entry(void *arg);

static void line_queue(weft_pipeline *pl, size_t l, size_t k, weft__worker *w)
{
    weft_pipe *pf = &pl->lines[l];
    pf->stage = k;
    memset(&pf->rec, 0, sizeof pf->rec);
    pf->rec.fn = line_entry;
    pf->rec.arg = pf;
    /* NEXT: the line runs after the pair we go on with, on this worker,
     * unless a thief takes it first; queued behind other work it would
     * cross to the other worker at every handoff (measured: 0.54-0.92x
     * of oneTBB's pipeline at 2 threads with NONE, 0.85-1.05x with NEXT;
     * the issue 35 flow study under benchmarks/results/studies). Quiet
     * (see "Short stages" at the top): no parked worker is woken for it. */
    if (atomic_load_explicit(&pl->quiet, memory_order_relaxed))   /* relaxed: a hint */
        weft__submit_quiet(pl->s, w, &pf->rec);
    else
        weft__submit(pl->s, w, &pf->rec, WEFT_HINT_NEXT);
}

/* Runs stage k of the token on line pf; every WEFT__PIPE_SAMPLE-th stage
 * of a line is timed, and says whether stages are short (see the top). */
static inline void run_stage(weft_pipeline *pl, weft_pipe *pf, size_t k)
{
    if (WEFT_LIKELY(++pf->calls % WEFT__PIPE_SAMPLE != 0)) {
        pl->stages[k].fn(pf, pl->stages[k].arg);
        return;
    }
    uint64_t t0 = weft__now_ns();
    pl->stages[k].fn(pf, pl->stages[k].arg);
    bool quiet = weft__now_ns() - t0 < WEFT__PIPE_SHORT_NS;
    if (atomic_load_explicit(&pl->quiet, memory_order_relaxed) != quiet)   /* relaxed: a hint; read first, so a steady pipeline writes nothing */
        atomic_store_explicit(&pl->quiet, quiet, memory_order_relaxed);
}

/* One count of pair (l, k) is done; true if the caller now owns it. */
static bool release(weft_pipeline *pl, size_t l, size_t k)
{
    return atomic_fetch_sub_explicit(&pl->jc[l * pl->jstride + k], 1, memory_order_acq_rel) == 1;   /* see the top */
}

/* One line (or the stopper's own count) is done after a stop. */
static void line_off(weft_pipeline *pl)
{
    if (atomic_fetch_sub_explicit(&pl->lines_left, 1, memory_order_acq_rel) == 1)   /* see the top */
        weft_waitgroup_done(&pl->done);   /* the last touch of pl */
}

/* Token t on line l stopped the pipeline (see the top). */
static void stop_all(weft_pipeline *pl, size_t l)
{
    size_t L = pl->nlines;
    atomic_store_explicit(&pl->lines_left, L, memory_order_relaxed);   /* the L - 1 others and our own; published by the releases */
    atomic_store_explicit(&pl->stopped, true, memory_order_release);   /* pairs with the acquire in line_entry */
    for (size_t o = (l + 1) % L; o != l; o = (o + 1) % L)
        if (release(pl, o, 0))
            line_off(pl);   /* it was free already */
    line_off(pl);   /* our own count: the last touch of pl unless a line is busy */
}

/* One line: the tokens pass one at a time, each through every stage,
 * all on this fiber; nothing to count. */
static void one_line(weft_pipe *pf)
{
    weft_pipeline *pl = pf->pl;
    size_t S = pl->nstages;
    for (;;) {
        pf->stage = 0;
        pf->token = pl->next_tok++;
        pf->stop = false;
        pl->stages[0].fn(pf, pl->stages[0].arg);
        if (pf->stop)
            break;
        for (size_t k = 1; k < S; k++) {
            pf->stage = k;
            pl->stages[k].fn(pf, pl->stages[k].arg);
        }
    }
    pl->tokens = pf->token;
    weft_waitgroup_done(&pl->done);   /* the last touch of pl */
}

static void line_entry(void *arg)
{
    weft_pipe *pf = arg;
    weft_pipeline *pl = pf->pl;
    weft__worker *w = weft__tls_worker;   /* a task of pl->s */
    size_t l = pf->line, L = pl->nlines, S = pl->nstages;
    if (L == 1) {
        one_line(pf);
        return;
    }
    for (;;) {
        size_t k = pf->stage;
        if (k == 0 && atomic_load_explicit(&pl->stopped, memory_order_acquire)) {
            line_off(pl);   /* free after the stop: the last touch of pl unless others are busy */
            return;
        }
        atomic_store_explicit(&pl->jc[l * pl->jstride + k], deps(pl, k), memory_order_relaxed);   /* see the top */
        if (k == 0) {
            pf->token = pl->next_tok++;
            pf->stop = false;
        }
        run_stage(pl, pf, k);
        if (k == 0) {
            if (pf->stop) {
                pl->tokens = pf->token;
                stop_all(pl, l);
                return;
            }
        }
        /* The pairs this stage's end releases: the next line's at k (a
         * serial stage), and our own next one: k + 1, or, from the last
         * stage, the next token's stage 0 (the line is free). */
        size_t nl = (l + 1) % L;
        bool other = pl->stages[k].kind == WEFT_PIPE_SERIAL && release(pl, nl, k);
        bool mine = release(pl, l, k + 1 < S ? k + 1 : 0);
        if (mine) {
            pf->stage = k + 1 < S ? k + 1 : 0;
            if (other)
                line_queue(pl, nl, k, w);   /* it waits at k, not running */
            continue;   /* our own next pair, inline */
        }
        if (other) {
            /* Ours would end here: go on with the other line instead of
             * queueing it (no trip through a queue, no wake-up). */
            pf = &pl->lines[nl];
            pf->stage = k;
            l = nl;
            continue;
        }
        return;   /* whoever releases our next pair queues or runs it */
    }
}

int weft_pipeline_create(size_t lines, const weft_pipe_stage *stages, size_t n, weft_pipeline **out)
{
    if (!out || !stages || lines == 0 || n == 0 || lines > WEFT__PIPE_MAX || n > WEFT__PIPE_MAX ||
        stages[0].kind != WEFT_PIPE_SERIAL)
        return WEFT_EINVAL;
    for (size_t k = 0; k < n; k++)
        if (!stages[k].fn || (unsigned)stages[k].kind > WEFT_PIPE_PARALLEL)
            return WEFT_EINVAL;
    size_t head = (sizeof(weft_pipeline) + 63) / 64 * 64;
    size_t lb = lines * sizeof(weft_pipe);
    size_t sb = (n * sizeof(weft_pipe_stage) + 63) / 64 * 64;
    /* Each line's counters on cache lines of their own: two workers on
     * two lines do not share one. */
    size_t jstride = (n + 15) / 16 * 16;
    size_t jb = lines * jstride * sizeof(atomic_int);
    size_t bytes = head + lb + sb + jb;
    char *m = weft__calloc(bytes);
    if (!m)
        return WEFT_ENOMEM;
    weft_pipeline *pl = (weft_pipeline *)m;
    pl->bytes = bytes;
    pl->nlines = lines;
    pl->nstages = n;
    pl->lines = (weft_pipe *)(m + head);
    pl->stages = (weft_pipe_stage *)(m + head + lb);
    pl->jc = (atomic_int *)(m + head + lb + sb);
    pl->jstride = jstride;
    memcpy(pl->stages, stages, n * sizeof *stages);
    for (size_t l = 0; l < lines; l++) {
        pl->lines[l].pl = pl;
        pl->lines[l].line = l;
    }
    atomic_init(&pl->running, false);
    atomic_init(&pl->quiet, false);
    atomic_init(&pl->stopped, false);
    atomic_init(&pl->lines_left, 0);
    *out = pl;
    return WEFT_OK;
}

int weft_pipeline_destroy(weft_pipeline *pl)
{
    if (!pl)
        return WEFT_OK;
    if (atomic_load_explicit(&pl->running, memory_order_acquire))   /* pairs with the run's end */
        return WEFT_EBUSY;
    weft__free(pl, pl->bytes);
    return WEFT_OK;
}

int weft_pipeline_run(weft_sched *s, weft_pipeline *pl)
{
    if (!s || !pl)
        return WEFT_EINVAL;
    if (weft__sched_unserved_here(s))
        return WEFT_ENOTBOUND;   /* nobody here would run it (core_api.h) */
    bool idle = false;
    if (!atomic_compare_exchange_strong_explicit(&pl->running, &idle, true, memory_order_acquire,
                                                 memory_order_relaxed))   /* acquire: the last run's writes */
        return WEFT_EBUSY;
    weft__worker *w = weft__tls_worker;
    if (w && weft__worker_sched(w) != s)
        w = NULL;
    pl->s = s;
    pl->next_tok = 0;
    pl->tokens = 0;
    size_t S = pl->nstages;
    for (size_t l = 0; l < pl->nlines; l++)
        for (size_t k = 0; k < S; k++) {
            int c = k == 0 ? (l == 0 ? 0 : 1)
                  : pl->stages[k].kind == WEFT_PIPE_SERIAL ? (l == 0 ? 1 : 2) : 1;
            atomic_store_explicit(&pl->jc[l * pl->jstride + k], c, memory_order_relaxed);   /* published by the queueing */
        }
    atomic_store_explicit(&pl->stopped, false, memory_order_relaxed);   /* published by the queueing */
    atomic_store_explicit(&pl->quiet, false, memory_order_relaxed);     /* a hint: wakes until stages are measured */
    weft_waitgroup_init(&pl->done, 1);
    weft_pipe *pf = &pl->lines[0];
    pf->stage = 0;
    memset(&pf->rec, 0, sizeof pf->rec);
    pf->rec.fn = line_entry;
    pf->rec.arg = pf;
    int rc = WEFT_OK;
    if (w)
        weft__submit(s, w, &pf->rec, WEFT_HINT_NONE);
    else
        rc = weft__submit_external(s, &pf->rec, WEFT_HINT_NONE);
    if (rc == WEFT_OK) {
        /* ENOMEM: this task's worker had no fiber to switch to; the run
         * goes on, so wait again once others have had a turn. */
        while (weft_waitgroup_wait(&pl->done) != WEFT_OK)
            weft_yield();
    }
    weft_waitgroup_destroy(&pl->done);
    atomic_store_explicit(&pl->running, false, memory_order_release);   /* pairs with the next run's CAS */
    return rc;
}

uint64_t weft_pipeline_tokens(const weft_pipeline *pl)
{
    return pl->tokens;
}

size_t weft_pipe_line(const weft_pipe *pf)
{
    return pf->line;
}

size_t weft_pipe_stage_index(const weft_pipe *pf)
{
    return pf->stage;
}

uint64_t weft_pipe_token(const weft_pipe *pf)
{
    return pf->token;
}

void weft_pipe_stop(weft_pipe *pf)
{
    if (pf->stage == 0)
        pf->stop = true;
}
