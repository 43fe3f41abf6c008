/* TSAN and the global ring, with no suppressions (issue 17, item 7).
 * Built in TSAN builds only; two ctests run it.
 *
 *   tsan_ring_canary race    must be reported. A plain thread spawns a
 *                            reader task through the global ring, then
 *                            writes the data the reader reads: a real
 *                            race, which weft's per-record edge must not
 *                            hide. The scheduler has one worker and
 *                            local_capacity 2, so each global pop takes one
 *                            task, and a gate task keeps the worker busy
 *                            until both the reader and a later task are
 *                            queued. An edge through the ring object
 *                            itself would hide this race (the later
 *                            spawn, after the racy write, would reach the
 *                            reader's pop); the per-record edge does not.
 *                            ctest passes on "WARNING: ThreadSanitizer:
 *                            data race" and fails if the report is inside
 *                            the ring.
 *   tsan_ring_clean          must be silent: the same, with the write
 *                            before the spawn, plus heavy traffic through
 *                            the ring and its overflow list (outside
 *                            spawns while the worker is held, YIELD
 *                            spawns from tasks), each task reading what
 *                            its spawner wrote. Any report fails it.
 *
 * The gate is a relaxed atomic on purpose: TSAN draws no edge through
 * relaxed accesses, so nothing but weft's own annotations orders the
 * spawner's writes before a task's reads.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"

static atomic_int gate_open;   /* relaxed only: no edge for TSAN */
static int data;               /* the reader's input: plain */
static int seen;               /* what the reader read: plain */

static void gate(void *arg)
{
    (void)arg;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!atomic_load_explicit(&gate_open, memory_order_relaxed)) {   /* relaxed: see above */
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 30) {   /* a hang only (ctest: 60 s): never a starved spawner */
            fprintf(stderr, "tsan_ring_canary: the gate was never opened\n");
            exit(2);
        }
    }
}

static void reader(void *arg)
{
    (void)arg;
    seen = data;
}

static void nothing(void *arg)
{
    (void)arg;
}

/* ---- traffic for the clean run ---------------------------------------- */

typedef struct payload {
    weft_sched *s;
    long in, mid, out;
} payload;

static void child(void *arg)
{
    payload *p = arg;
    p->out = p->mid + 1;         /* written by the parent task before it spawned us */
}

static void parent(void *arg)
{
    payload *p = arg;
    p->mid = p->in * 2;          /* written by main before the spawn */
    if (weft_spawn_hint(p->s, child, p, WEFT_HINT_YIELD) != WEFT_OK)   /* through the global ring */
        abort();
}

static int check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "tsan_ring_canary: %s: %s\n", what, weft_strerror(rc));
        exit(2);
    }
    return rc;
}

int main(int argc, char **argv)
{
    bool race = argc > 1 && strcmp(argv[1], "race") == 0;
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    c.local_capacity = 2;        /* a global pop takes one task (grab_global: 1 + capacity / 4) */
    weft_sched *s;
    check(weft_sched_create(&s, &c), "create");

    /* The gate first: the worker takes it and spins. */
    check(weft_spawn(s, gate, NULL), "spawn gate");
    data = 1;
    if (!race)
        data = 2;                /* before the spawn: ordered by the record's edge */
    check(weft_spawn(s, reader, NULL), "spawn reader");
    if (race)
        data = 2;                /* after the spawn: races with the reader */
    check(weft_spawn(s, nothing, NULL), "spawn later task");   /* would carry the racy write through a ring-wide edge */

    enum { N = 3000 };           /* more than the ring's 1023: the overflow list too */
    payload *p = NULL;
    if (!race) {
        p = calloc(N, sizeof *p);
        if (!p)
            return 2;
        for (long i = 0; i < N; i++) {
            p[i].s = s;
            p[i].in = i;
            check(weft_spawn(s, parent, &p[i]), "spawn parent");
        }
    }
    atomic_store_explicit(&gate_open, 1, memory_order_relaxed);   /* relaxed: see above */
    check(weft_sched_wait_idle(s), "wait_idle");
    check(weft_sched_destroy(s), "destroy");

    int bad = 0;
    if (p) {
        for (long i = 0; i < N; i++)
            if (p[i].out != 2 * i + 1)
                bad++;
        free(p);
    }
    printf("tsan_ring_canary %s: the reader saw %d; %d wrong payloads\n", race ? "race" : "clean",
           seen, bad);
    return bad ? 1 : 0;
}
