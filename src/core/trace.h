/* This file is private to weft: recording a run (trace.c, trace_write.c)
 * and the profiler hooks, as the rest of core calls them (those the
 * layers above call too are in core_api.h).
 *
 * Every site that can report something tests one byte, the thread's
 * `hooks` (weft__hooks, core_api.h), and calls out of line only when a
 * bit is set: HOOK_TRACK (stall reports keep their lists; fixed at
 * init), HOOK_OBSERVE (weft_config.observer set; fixed at init) and
 * HOOK_TRACE (recording now; set and cleared by weft_trace_start/stop
 * from any thread, read relaxed: an event begun just before a stop or a
 * start is filtered out when written, see trace.c).
 *
 * An event is four words, written by the recording thread only, into its
 * own buffer: w0 = ticks since the recording's start (48 bits) | kind
 * << 48 (4 bits) | the recording's tag << 52 (4 bits) | aux << 56; a, b,
 * c by kind (see the enum).
 */
#ifndef WEFT_TRACE_H
#define WEFT_TRACE_H

#include "core_api.h"

enum weft__tev_kind {
    WEFT__EV_TASK_BEGIN = 1,   /* a = name, b = fn, c = fiber; aux = queue length */
    WEFT__EV_TASK_END,         /* c = fiber */
    WEFT__EV_SUSPEND,          /* a = what it waits on (static string), b = object, c = fiber */
    WEFT__EV_RESUME,           /* a = flow id (0: none), c = fiber */
    WEFT__EV_WAKE,             /* a = flow id, b = the fiber made ready */
    WEFT__EV_STEAL,            /* a = the victim's thread id */
    WEFT__EV_PARK,
    WEFT__EV_UNPARK,
    WEFT__EV_GRAPH_END,        /* a = run id, b = the clock at its start (0: unknown) */
    WEFT__EV_CHUNK_BEGIN,      /* a = first index, b = end index, c = fiber */
    WEFT__EV_CHUNK_END,        /* c = fiber */
    WEFT__EV_ZONE_BEGIN,       /* a = name, c = fiber */
    WEFT__EV_ZONE_END,         /* c = fiber */
    WEFT__EV_KINDS
};

/* w0's fields above the timestamp. The tag is the low bits of the
 * recording (tbuf.rec) the event was written for: an event begun for
 * one recording and finished after the next one's start is told apart
 * by it (trace.c, Synchronization). */
#define WEFT__TEV_TS_BITS 48
#define WEFT__TEV_KIND(w0) ((unsigned)((w0) >> 48) & 0xfu)
#define WEFT__TEV_TAG(w0) ((unsigned)((w0) >> 52) & 0xfu)
#define WEFT__TEV_AUX(w0) ((unsigned)((w0) >> 56))
_Static_assert(WEFT__EV_KINDS <= 16, "an event's kind is 4 bits of w0");

/* How many JSON events an event of this kind begins when written
 * (trace_write.c): a task run's first stretch and its "queue" counter, a
 * zone, a chunk, a steal, a park, a wake, each end of a wake arrow, both
 * ends of a graph run. Ends begin none, and neither do the later
 * stretches of a task that blocked (their number depends on the nesting
 * at the time). Dropped events are counted in this unit, so that
 * otherData's dropped and events can be added. */
static inline unsigned weft__tev_weight(unsigned kind, uint64_t a)
{
    switch (kind) {
    case WEFT__EV_TASK_BEGIN:
    case WEFT__EV_GRAPH_END:
        return 2;
    case WEFT__EV_ZONE_BEGIN:
    case WEFT__EV_CHUNK_BEGIN:
    case WEFT__EV_WAKE:
    case WEFT__EV_STEAL:
    case WEFT__EV_PARK:
    case WEFT__EV_UNPARK:
        return 1;
    case WEFT__EV_RESUME:
        return a != 0;   /* the arrow's end */
    default:
        return 0;
    }
}

/* A name in an event: a static string's address, or (this bit set) an
 * offset into the recording thread's name arena, where names that may
 * not outlive the run (a graph task's) are copied once per distinct
 * name (a cache by content). */
#define WEFT__TNAME_COPIED (1ull << 63)

typedef struct weft__tev {
    _Atomic uint64_t w0, a, b, c;   /* relaxed: the writer may read a slot being overwritten (trace.c) */
} weft__tev;

#define WEFT__TNAMES 256            /* name cache slots per thread */
#define WEFT__TARENA (64u * 1024)   /* bytes of copied names per thread */

typedef struct weft__tbuf {
    struct weft__tbuf *next;        /* every buffer of s, under trace_lock */
    _Atomic uint64_t head;          /* events written ever; owner stores (release) */
    _Atomic uint64_t weight;        /* weft__tev_weight summed over those events; owner
                                       stores (relaxed) before head */
    uint64_t base;                  /* head when the recording began (under trace_lock) */
    uint64_t base_weight;           /* weight then (under trace_lock) */
    _Atomic uint64_t t0;            /* the recording's start, a copy beside head */
    _Atomic unsigned rec;           /* the recording (its gen) that base and t0 are
                                       for: stored (release) after them */
    uint64_t mask;                  /* capacity - 1, a power of two; fixed */
    int tid;                        /* weft_thread_id of its thread */
    bool bound;                     /* a bound thread's */
    atomic_bool retired;            /* its thread unbound: reusable, under trace_lock */
    unsigned retired_gen;           /* the recording it was retired in */
    /* Owner only: the name cache, reset when the recording changes. */
    unsigned gen;
    struct { bool used; uint32_t hash, off; } names[WEFT__TNAMES];
    _Atomic uint32_t arena_len;     /* release: bytes below it are written */
    _Atomic char *arena;            /* WEFT__TARENA bytes; relaxed: a write may
                                       read a name a new recording overwrites */
    weft__tev ev[];
} weft__tbuf;


/* ---- the clock ---------------------------------------------------------- */

/* The clock and CLOCK_MONOTONIC read together: the pair of the tightest
 * of a few tries, so that a preemption between the two reads (a loaded
 * machine) does not skew a rate measured from two such pairs. */
void weft__trace_clock_pair(uint64_t *ticks, uint64_t *ns);
/* "tsc", "cntvct" or "monotonic". */
const char *weft__trace_clock_name(void);



/* ---- out of line, called only with a bit set ---------------------------- */

/* Around a task taken from a queue: task_begin, fn(arg) (through the
 * stall tracker if it tracks), task_end. */
void weft__hook_run(weft__worker *w, weft_fn fn, void *arg, const char *name);
/* What the running fiber is about to wait on (before weft__suspend). */
void weft__hook_note(weft__worker *w, const char *what, const void *obj, uint64_t deadline);
void weft__hook_suspend(weft__worker *w, weft__fiber *self);
void weft__hook_resume(weft__worker *w, weft__fiber *self);
/* The trace's part of the two (weft_yield: a wait for traces only). */
void weft__trace_suspend(weft__worker *w, weft__fiber *self);
void weft__trace_resume(weft__worker *w, weft__fiber *self);
/* A fiber switch (observer's fiber_leave / fiber_enter). */
void weft__hook_switch(weft__worker *w, weft__fiber *from, weft__fiber *to);
/* w's thread made f ready (f may be another worker's). */
void weft__hook_wake(weft__worker *w, weft__fiber *f);
void weft__hook_steal(weft__worker *w, const weft__worker *victim);
void weft__hook_park(weft__worker *w);
void weft__hook_unpark(weft__worker *w);

/* ---- life --------------------------------------------------------------- */

/* At create: the hook bits every worker starts with. */
unsigned weft__hooks_initial(const weft_sched *s);
/* A bound thread joins s (after it is listed) and leaves it. Callable
 * from: the thread itself. */
void weft__trace_attach(weft__worker *w);
void weft__trace_detach(weft__worker *w);
/* Destroy: frees every buffer. */
void weft__trace_fini(weft_sched *s);

/* For trace_write.c: copies what buf holds of recording rec (its gen)
 * into out (room for mask + 1 events), returns how many; *dropped gets
 * the JSON events (weft__tev_weight) of those lost to a full buffer:
 * exact once the recording stopped, while it records it may count a few
 * events written during the copy. An event tagged for an earlier
 * recording is neither copied nor counted. Caller holds trace_lock. */
size_t weft__tbuf_snapshot(const weft__tbuf *b, unsigned rec, weft__tev *out, uint64_t *dropped);

#endif /* WEFT_TRACE_H */
