/* This file is private to weft's tests: reading weft_trace_write's output
 * back (Chrome trace-event JSON, as weft.h's "tracing" section lays it
 * out) and checking what holds for every trace, whatever ran.
 *
 * tr_capture writes s's trace into memory and hands it to tr_parse, which
 * parses it with tjson and checks:
 *  - the layout: an object with "traceEvents" (array), "displayTimeUnit"
 *    "ns", "otherData" with "dropped" and "events" (integers >= 0; events
 *    "written": as many as traceEvents holds) and "clock" ("tsc" or
 *    "monotonic");
 *  - every event: an object, "ph" one of X M s f b e i C, pid 1, tid an
 *    integer >= 0 (and a thread_name metadata event for every tid that
 *    has events: "worker N" below the worker count, "bound thread N"
 *    from there), ts >= 0 (microseconds from the start), a string name;
 *    X events have dur >= 0 and cat "task", "zone" or "chunk"; instants
 *    are "steal" (args.from), "park" or "wake", cat "sched"; counters
 *    are "queue" with values in [0, 255];
 *  - task runs: the X events of cat "task" grouped by args.run (a
 *    number); a run's slices are on one thread (fibers never migrate),
 *    carry one name, do not overlap, and all but the last have a string
 *    args.wait (a stretch that did not end the run ended in a block);
 *  - per thread, the X events nest (a thread does one thing at a time):
 *    two of them are disjoint or one holds the other;
 *  - flows (cat "wake"): when nothing was dropped, every "f" has exactly
 *    one "s" with the same id, no later than it; ids of "s" are unique;
 *  - graph runs (cat "graph"): per id at most one "b" and one "e", the
 *    "b" no later than the "e".
 * The checks return false with the reason in why; nothing here asserts,
 * so both test runners use it. Times are compared with TR_EPS of slack:
 * two printed times may each be rounded. */
#ifndef WEFT_TEST_TRACE_CHECK_H
#define WEFT_TEST_TRACE_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "tjson.h"
#include "weft.h"

#define TR_EPS 0.0025   /* microseconds */

typedef struct tr_event {
    char ph;                  /* "ph"'s only character */
    const char *cat, *name;   /* NULL if absent */
    bool has_ts;
    double ts, dur;           /* dur: X events, else 0 */
    int tid;
    const tj_value *args, *id, *raw;
    double run;               /* args.run of a task X event, else -1 */
    const char *wait;         /* args.wait of a task X event, or NULL */
} tr_event;

typedef struct tr_run {
    double id;                /* args.run */
    const char *name;
    int tid;
    double begin, end;        /* earliest ts, latest ts + dur of its slices */
    size_t nslices;
    size_t *slices;           /* indices into ev, by ts */
} tr_run;

typedef struct tr_trace {
    char *text;               /* what weft_trace_write wrote */
    size_t len;
    tj_value *root;
    tr_event *ev;             /* traceEvents, in file order */
    size_t nev;
    tr_run *runs;             /* by begin */
    size_t nruns;
    double dropped, events;   /* otherData */
    const char *clock;
    int names_tid[512];       /* thread_name metadata: tid -> name */
    const char *names[512];
    int nnames;
} tr_trace;

/* Parses text (taking it over: tr_free frees it) and checks it as above.
 * workers: s's worker count, to check thread names. */
bool tr_parse(tr_trace *t, char *text, size_t len, unsigned workers, char *why, size_t cap);
/* weft_trace_write(s) into memory, then tr_parse. rc_out (may be NULL)
 * gets weft_trace_write's result; false if it was not WEFT_OK. */
bool tr_capture(weft_sched *s, tr_trace *t, int *rc_out, char *why, size_t cap);
void tr_free(tr_trace *t);

const char *tr_thread_name(const tr_trace *t, int tid);
/* The runs of tasks named name, by begin: up to cap into out, returns how
 * many there are. */
size_t tr_runs_named(const tr_trace *t, const char *name, const tr_run **out, size_t cap);
/* Events matching ph, cat and name (a NULL or 0 matches anything). */
size_t tr_count(const tr_trace *t, char ph, const char *cat, const char *name);
/* The event that matches, the i-th; NULL past the last. */
const tr_event *tr_find(const tr_trace *t, char ph, const char *cat, const char *name, size_t i);
/* Non-metadata events on tid. */
size_t tr_count_tid(const tr_trace *t, int tid, char ph);
/* The flow "f" on e's thread that begins e (a task slice): ts within
 * [e.ts - TR_EPS, e.ts + e.dur + TR_EPS]; the closest to e.ts. NULL if none. */
const tr_event *tr_flow_into(const tr_trace *t, const tr_event *e);
/* The "s" with the same id as f; NULL if none. */
const tr_event *tr_flow_start(const tr_trace *t, const tr_event *f);

#endif /* WEFT_TEST_TRACE_CHECK_H */
