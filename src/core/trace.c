/* This file is private to weft: recording what the threads of a
 * scheduler do (weft_trace_start/stop, weft_trace_begin/end), and the
 * profiler hooks of weft_config.observer. Writing the recording out is
 * trace_write.c's.
 *
 * Synchronization
 *   hooks         each thread's byte of hook bits (trace.h): TRACK and
 *                 OBSERVE fixed before the thread runs anything; TRACE
 *                 set and cleared under trace_lock by start/stop (an RMW),
 *                 read relaxed by the owner at every site. A site that
 *                 sees TRACE loads its buffer pointer with acquire: start
 *                 stores it with release after the recording's t0, gen
 *                 and bases.
 *   tbuf          a thread's buffer: written by that thread only (events,
 *                 head, the name cache and arena). The buffer of a worker
 *                 is made by the first start and replaced only by a
 *                 start asking for more room; a bound thread's is made at
 *                 bind (or by a start while it is bound). Buffers are
 *                 linked in s->trace->bufs under trace_lock and freed
 *                 only by destroy: a thread that read its pointer just
 *                 before a stop, or a start that replaced it, may still
 *                 write one event into it.
 *   events        a ring per buffer; the owner writes slot head & mask:
 *                 a release fence (orders the store of head that made
 *                 the previous event visible before the new slot's
 *                 contents), four relaxed stores, head + 1 with release.
 *                 A reader (trace_write.c, under trace_lock) loads head
 *                 (acquire), copies the slots, fences (acquire), loads
 *                 head again, and keeps only the events no store of the
 *                 owner's can have touched meanwhile (index >= head2 -
 *                 capacity + 1): the seqlock argument, with head as the
 *                 sequence. No lock and no RMW on the owner's side.
 *   weight        per buffer, the JSON events its events begin, summed
 *                 (weft__tev_weight): the owner stores it (relaxed)
 *                 before head's release store, so a reader that loaded
 *                 head h (acquire) reads at least h's sum. The reader
 *                 counts dropped events as that sum since base_weight
 *                 less the weight of what it kept: the unit of
 *                 otherData's "events".
 *   base, t0..    a recording's bounds, under trace_lock. For each
 *                 buffer start (or attach) sets base and t0, then stores
 *                 rec, the recording's gen, with release. The owner
 *                 loads rec once per event (acquire), after the hook bit
 *                 and the buffer, and tags the event with it (w0, 4
 *                 bits); an id that names the recording (a wake arrow's)
 *                 is made from that same load. Loading rec = G means
 *                 G's base and t0 are seen: the event lands at or past
 *                 base, stamped against G's t0. A thread that saw the
 *                 hook bit before a stop and writes after the next start
 *                 loads either the new rec (then the event is the new
 *                 recording's, whole) or an older one: then it may land
 *                 past the new base, stamped against the old t0, and the
 *                 tag is what keeps it out (snapshot). An event begun
 *                 before a stop returned is stamped after t_end and
 *                 filtered when written; every event that follows it
 *                 (a woken fiber's resume) is stamped later still.
 *   names         graph task names can be freed or renamed while the
 *                 trace lives, so they are copied into the thread's
 *                 arena (a cache by content) at
 *                 record time; static names (spawn names, zones) go as
 *                 pointers. The owner resets its cache and arena when it
 *                 sees a new gen; arena_len is stored with release before
 *                 the event that names an offset below it.
 *   observer      s->obs, a copy made at create, read-only after.
 */
#define _GNU_SOURCE
#include <string.h>

#include "stall.h"
#include "trace.h"
#include "worker.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#define TS_BITS WEFT__TEV_TS_BITS
#define TS_MASK ((1ull << TS_BITS) - 1)
#define CAP_MIN 16
#define CAP_MAX (1ull << 24)

/* ---- the clock ---------------------------------------------------------- */

enum { CLOCK_UNKNOWN, CLOCK_TSC, CLOCK_CNTVCT, CLOCK_MONO };
static _Atomic int clock_kind;   /* relaxed: every thread works out the same answer */

static int pick_clock(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: the TSC ticks at a constant rate in
     * every P-, C- and T-state, and counts the same on every core of a
     * machine that reports it (the kernel's own TSC clocksource test). */
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u &&
        __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8)))
        return CLOCK_TSC;
    return CLOCK_MONO;
#elif defined(__aarch64__)
    return CLOCK_CNTVCT;
#else
    return CLOCK_MONO;
#endif
}

static inline int clock_of(void)
{
    int k = atomic_load_explicit(&clock_kind, memory_order_relaxed);
    if (WEFT_UNLIKELY(k == CLOCK_UNKNOWN)) {
        k = pick_clock();
        atomic_store_explicit(&clock_kind, k, memory_order_relaxed);
    }
    return k;
}

static inline uint64_t ticks(void)
{
    switch (clock_of()) {
#if defined(__x86_64__)
    case CLOCK_TSC:
        return __rdtsc();
#elif defined(__aarch64__)
    case CLOCK_CNTVCT: {
        uint64_t v;
        __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#endif
    default:
        return weft__now_ns();
    }
}

uint64_t weft__trace_ticks(void)
{
    return ticks();
}

void weft__trace_clock_pair(uint64_t *tk, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        uint64_t a = ticks();
        uint64_t n = weft__now_ns();
        uint64_t b = ticks();
        if (b - a < best) {
            best = b - a;
            *tk = a + (b - a) / 2;
            *ns = n;
        }
    }
}

const char *weft__trace_clock_name(void)
{
    switch (clock_of()) {
    case CLOCK_TSC: return "tsc";
    case CLOCK_CNTVCT: return "cntvct";
    default: return "monotonic";
    }
}

/* ---- writing an event -------------------------------------------------- */

/* The owner's buffer if w records now, else NULL. Callable from: owner. */
static inline weft__tbuf *recording(weft__worker *w)
{
    if (!(weft__hooks(w) & WEFT__HOOK_TRACE))
        return NULL;
    return atomic_load_explicit(&w->tbuf, memory_order_acquire);   /* pairs with start's release store: t0 and gen before */
}

/* The recording b's events are for now: loaded once per event, before
 * anything else of the recording (see Synchronization). Callable from:
 * owner. */
static inline unsigned rec_of(weft__tbuf *b)
{
    return atomic_load_explicit(&b->rec, memory_order_acquire);   /* pairs with start's release: base and t0 before */
}

/* Writes an event of recording rec (rec_of's answer). Owner only. */
static inline void put_in(weft__tbuf *b, unsigned rec, unsigned kind, unsigned aux,
                          uint64_t a, uint64_t bb, uint64_t c)
{
    uint64_t t0 = atomic_load_explicit(&b->t0, memory_order_relaxed);   /* after the acquire in rec_of() */
    uint64_t ts = (ticks() - t0) & TS_MASK;
    uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed);   /* owner's own */
    weft__tev *e = &b->ev[h & b->mask];
    atomic_thread_fence(memory_order_release);   /* head = h visible before the slot changes: see Synchronization */
    atomic_store_explicit(&e->w0, ts | (uint64_t)(kind & 0xf) << TS_BITS | (uint64_t)(rec & 0xf) << 52 |
                                      (uint64_t)(aux & 0xff) << 56,
                          memory_order_relaxed);
    atomic_store_explicit(&e->a, a, memory_order_relaxed);
    atomic_store_explicit(&e->b, bb, memory_order_relaxed);
    atomic_store_explicit(&e->c, c, memory_order_relaxed);
    uint64_t wsum = atomic_load_explicit(&b->weight, memory_order_relaxed);   /* owner's own */
    atomic_store_explicit(&b->weight, wsum + weft__tev_weight(kind, a), memory_order_relaxed);   /* ordered before head by its release store */
    atomic_store_explicit(&b->head, h + 1, memory_order_release);   /* pairs with the reader's acquire load */
}

static inline void put(weft__worker *w, weft__tbuf *b, unsigned kind, unsigned aux,
                       uint64_t a, uint64_t bb, uint64_t c)
{
    (void)w;
    put_in(b, rec_of(b), kind, aux, a, bb, c);
}

/* Is the arena's name at off the n bytes of name? Owner only. */
static bool arena_equal(weft__tbuf *b, uint32_t off, const char *name, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (atomic_load_explicit(&b->arena[off + i], memory_order_relaxed) != name[i])
            return false;
    return atomic_load_explicit(&b->arena[off + n], memory_order_relaxed) == '\0';
}

/* A name that may not outlive the run, copied into the arena; the
 * event's name word. 0 (no name) when the arena is full. */
static uint64_t copy_name(weft__tbuf *b, unsigned gen, const char *name)
{
    if (b->gen != gen) {
        b->gen = gen;
        memset(b->names, 0, sizeof b->names);
        atomic_store_explicit(&b->arena_len, 0, memory_order_relaxed);
    }
    /* By content: the caller's copy may sit at the same address each time. */
    uint32_t hash = 2166136261u;
    size_t n = 0;
    for (; n < WEFT__TNAME_MAX && name[n]; n++)
        hash = (hash ^ (unsigned char)name[n]) * 16777619u;
    unsigned slot = hash & (WEFT__TNAMES - 1);
    uint32_t len = atomic_load_explicit(&b->arena_len, memory_order_relaxed);
    if (b->names[slot].used && b->names[slot].hash == hash && arena_equal(b, b->names[slot].off, name, n))
        return WEFT__TNAME_COPIED | b->names[slot].off;
    if (len + n + 1 > WEFT__TARENA)
        return 0;
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&b->arena[len + i], name[i], memory_order_relaxed);
    atomic_store_explicit(&b->arena[len + n], '\0', memory_order_relaxed);
    b->names[slot].used = true;
    b->names[slot].hash = hash;
    b->names[slot].off = len;
    atomic_store_explicit(&b->arena_len, (uint32_t)(len + n + 1), memory_order_release);   /* before the event naming it */
    return WEFT__TNAME_COPIED | len;
}

static inline unsigned queue_len(weft__worker *w)
{
    unsigned n = weft__deque_size(&w->deque) + (atomic_load_explicit(&w->lifo, memory_order_relaxed) != NULL);
    return n > 255 ? 255 : n;
}

static inline int thread_of(const weft__worker *w)
{
    return (int)w->index;
}

/* ---- the hooks ------------------------------------------------------------ */

void weft__hook_task_begin(weft__worker *w, const char *name, weft_fn fn, bool copy)
{
    weft__tbuf *b = recording(w);
    if (b) {
        unsigned rec = rec_of(b);
        uint64_t nm = !name ? 0 : copy ? copy_name(b, rec, name) : (uint64_t)(uintptr_t)name;
        put_in(b, rec, WEFT__EV_TASK_BEGIN, queue_len(w), nm, (uint64_t)(uintptr_t)fn,
               (uint64_t)(uintptr_t)w->cur);
    }
    if ((weft__hooks(w) & WEFT__HOOK_OBSERVE) && w->s->obs.task_begin)
        w->s->obs.task_begin(thread_of(w), name, fn, w->s->obs.ctx);
}

void weft__hook_task_end(weft__worker *w)
{
    weft__tbuf *b = recording(w);
    if (b)
        put(w, b, WEFT__EV_TASK_END, 0, 0, 0, (uint64_t)(uintptr_t)w->cur);
    if ((weft__hooks(w) & WEFT__HOOK_OBSERVE) && w->s->obs.task_end)
        w->s->obs.task_end(thread_of(w), w->s->obs.ctx);
}

void weft__hook_run(weft__worker *w, weft_fn fn, void *arg, const char *name)
{
    unsigned h = weft__hooks(w);
    if (h & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE))
        weft__hook_task_begin(w, name ? name : weft__task_kind(fn), fn, false);   /* a layer's own task: its kind */
    if (h & WEFT__HOOK_TRACK)
        weft__track_run(w, fn, arg, name);   /* fn(arg), noted for stall reports */
    else
        fn(arg);
    if (weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE))
        weft__hook_task_end(w);
}

void weft__hook_note(weft__worker *w, const char *what, const void *obj, uint64_t deadline)
{
    if (w->track)
        weft__track_note(w, what, obj, deadline);
    w->note_what = what;
    w->note_obj = obj;
}

void weft__hook_suspend(weft__worker *w, weft__fiber *self)
{
    if (w->track)
        weft__track_suspend(w, self);
    weft__trace_suspend(w, self);
}

void weft__trace_suspend(weft__worker *w, weft__fiber *self)
{
    weft__tbuf *b = recording(w);
    if (b)
        put(w, b, WEFT__EV_SUSPEND, 0, (uint64_t)(uintptr_t)(w->note_what ? w->note_what : "wait"),
            (uint64_t)(uintptr_t)w->note_obj, (uint64_t)(uintptr_t)self);
    w->note_what = NULL;
    w->note_obj = NULL;
}

void weft__hook_resume(weft__worker *w, weft__fiber *self)
{
    if (w->track)
        weft__track_resume(w, self);
    weft__trace_resume(w, self);
}

/* Flow ids: the recording's gen (12 bits), the waker's thread + 1 (13)
 * and a count of the waker's (28): below 2^53, so JSON readers that
 * hold numbers as doubles keep them exact, and never 0. */
#define FLOW_GEN_SHIFT 41
#define FLOW_GEN(g) ((uint64_t)((g) & 0xfffu))

void weft__trace_resume(weft__worker *w, weft__fiber *self)
{
    uint64_t flow = atomic_exchange_explicit(&weft__fstate_of(self)->wake_flow, 0,
                                             memory_order_relaxed);   /* written before the wake that let us run */
    weft__tbuf *b = recording(w);
    if (!b)
        return;
    /* An arrow drawn for another recording than the one this event is
     * for (the fiber slept across a stop and a start) has no tail here. */
    unsigned rec = rec_of(b);
    if (flow >> FLOW_GEN_SHIFT != FLOW_GEN(rec))
        flow = 0;
    put_in(b, rec, WEFT__EV_RESUME, 0, flow, 0, (uint64_t)(uintptr_t)self);
}

void weft__hook_switch(weft__worker *w, weft__fiber *from, weft__fiber *to)
{
    const weft_observer *o = &w->s->obs;
    if (o->fiber_leave)
        o->fiber_leave(thread_of(w), from, o->ctx);
    if (o->fiber_enter)
        o->fiber_enter(thread_of(w), to, o->ctx);
}

void weft__hook_wake(weft__worker *w, weft__fiber *f)
{
    weft__tbuf *b = recording(w);
    if (!b)
        return;
    /* The id's gen is the recording the event is for, so that a resume
     * that takes it is of the recording that holds this tail. */
    unsigned rec = rec_of(b);
    uint64_t flow = FLOW_GEN(rec) << FLOW_GEN_SHIFT |
                    (uint64_t)((w->index + 1) & 0x1fffu) << 28 | (++w->flow_seq & 0xfffffffu);
    atomic_store_explicit(&weft__fstate_of(f)->wake_flow, flow, memory_order_relaxed);   /* published by the wake's own release */
    put_in(b, rec, WEFT__EV_WAKE, 0, flow, (uint64_t)(uintptr_t)f, 0);
}

void weft__hook_steal(weft__worker *w, const weft__worker *victim)
{
    weft__tbuf *b = recording(w);
    if (b)
        put(w, b, WEFT__EV_STEAL, 0, (uint64_t)victim->index, 0, 0);
}

void weft__hook_park(weft__worker *w)
{
    weft__tbuf *b = recording(w);
    if (b)
        put(w, b, WEFT__EV_PARK, 0, 0, 0, 0);
    if ((weft__hooks(w) & WEFT__HOOK_OBSERVE) && w->s->obs.park)
        w->s->obs.park(thread_of(w), w->s->obs.ctx);
}

void weft__hook_unpark(weft__worker *w)
{
    weft__tbuf *b = recording(w);
    if (b)
        put(w, b, WEFT__EV_UNPARK, 0, 0, 0, 0);
    if ((weft__hooks(w) & WEFT__HOOK_OBSERVE) && w->s->obs.unpark)
        w->s->obs.unpark(thread_of(w), w->s->obs.ctx);
}

void weft__hook_graph(weft__worker *w, uint64_t run_id, uint64_t start_ticks)
{
    weft__tbuf *b = recording(w);
    if (b)
        put(w, b, WEFT__EV_GRAPH_END, 0, run_id, start_ticks, 0);
}

void weft__hook_chunk(weft__worker *w, bool begin, size_t first, size_t end)
{
    weft__tbuf *b = recording(w);
    if (b)
        put(w, b, begin ? WEFT__EV_CHUNK_BEGIN : WEFT__EV_CHUNK_END, 0, first, end,
            (uint64_t)(uintptr_t)w->cur);
}

void weft_trace_begin(const char *name)
{
    weft__worker *w = weft__tls_worker;
    weft__tbuf *b = w ? recording(w) : NULL;
    if (b)
        put(w, b, WEFT__EV_ZONE_BEGIN, 0, (uint64_t)(uintptr_t)(name ? name : "zone"), 0,
            (uint64_t)(uintptr_t)w->cur);
}

void weft_trace_end(void)
{
    weft__worker *w = weft__tls_worker;
    weft__tbuf *b = w ? recording(w) : NULL;
    if (b)
        put(w, b, WEFT__EV_ZONE_END, 0, 0, 0, (uint64_t)(uintptr_t)w->cur);
}

/* ---- buffers ------------------------------------------------------------------ */

static weft__tbuf *tbuf_new(weft_sched *s, uint64_t cap, const weft__worker *w)
{
    size_t size = sizeof(weft__tbuf) + sizeof(weft__tev) * cap;
    weft__tbuf *b = weft__calloc_with(&s->cfg.allocator, size);
    if (!b)
        return NULL;
    b->arena = weft__alloc_with(&s->cfg.allocator, WEFT__TARENA);
    if (!b->arena) {
        weft__free_with(&s->cfg.allocator, b, size);
        return NULL;
    }
    b->mask = cap - 1;
    b->tid = (int)w->index;
    b->bound = w->bound;
    b->gen = ~0u;   /* the first name resets the cache */
    return b;
}

static void tbuf_free(weft_sched *s, weft__tbuf *b)
{
    weft__free_with(&s->cfg.allocator, b->arena, WEFT__TARENA);
    weft__free_with(&s->cfg.allocator, b, sizeof(weft__tbuf) + sizeof(weft__tev) * (b->mask + 1));
}

/* A buffer for w with room for cap events: its own if big enough, a
 * retired one (its thread unbound before this recording) if one is, else
 * a new one linked in. Caller holds trace_lock. */
static weft__tbuf *tbuf_for(weft_sched *s, struct weft__trace *tr, weft__worker *w, uint64_t cap, bool at_start)
{
    weft__tbuf *cur = atomic_load_explicit(&w->tbuf, memory_order_relaxed);
    if (cur && cur->mask + 1 >= cap)
        return cur;
    for (weft__tbuf *b = tr->bufs; b; b = b->next) {
        /* Not one retired during this recording: its events are part of it. */
        if (atomic_load_explicit(&b->retired, memory_order_relaxed) && b->mask + 1 >= cap &&
            (at_start || b->retired_gen != atomic_load_explicit(&tr->gen, memory_order_relaxed))) {
            atomic_store_explicit(&b->retired, false, memory_order_relaxed);
            b->tid = (int)w->index;
            b->bound = w->bound;
            b->gen = ~0u;   /* written before the buffer is published to its new owner */
            return b;
        }
    }
    weft__tbuf *b = tbuf_new(s, cap, w);
    if (b) {
        b->next = tr->bufs;
        tr->bufs = b;
    }
    return b;
}

static void set_hook(weft__worker *w, unsigned bit, bool on)
{
    if (on)
        atomic_fetch_or_explicit(&w->hooks, (unsigned char)bit, memory_order_relaxed);   /* tbuf's release store publishes the rest */
    else
        atomic_fetch_and_explicit(&w->hooks, (unsigned char)~bit, memory_order_relaxed);
}

unsigned weft__hooks_initial(const weft_sched *s)
{
    return (s->track ? WEFT__HOOK_TRACK : 0) | (s->cfg.observer ? WEFT__HOOK_OBSERVE : 0);
}

/* ---- start and stop ---------------------------------------------------------- */

int weft_trace_start(weft_sched *s, size_t events_per_thread)
{
    if (!s || events_per_thread < CAP_MIN || events_per_thread > CAP_MAX)
        return WEFT_EINVAL;
    uint64_t cap = CAP_MIN;
    while (cap < events_per_thread)
        cap *= 2;
    pthread_mutex_lock(&s->trace_lock);
    struct weft__trace *tr = atomic_load_explicit(&s->trace, memory_order_relaxed);
    if (tr && atomic_load_explicit(&tr->on, memory_order_relaxed)) {
        pthread_mutex_unlock(&s->trace_lock);
        return WEFT_EBUSY;
    }
    if (!tr) {
        tr = weft__calloc_with(&s->cfg.allocator, sizeof *tr);
        if (!tr) {
            pthread_mutex_unlock(&s->trace_lock);
            return WEFT_ENOMEM;
        }
        atomic_store_explicit(&s->trace, tr, memory_order_release);   /* pairs with trace_of and attach: a zeroed struct */
    }
    /* Every buffer first, so that a failure changes nothing that shows:
     * a buffer made and not handed out stays linked for the next start. */
    pthread_mutex_lock(&s->bound_lock);
    unsigned n = s->nworkers + s->nbound;
    weft__tbuf *got[n ? n : 1];
    bool ok = true;
    for (unsigned i = 0; i < n && ok; i++) {
        weft__worker *w = i < s->nworkers ? &s->workers[i] : s->bound[i - s->nworkers];
        got[i] = tbuf_for(s, tr, w, cap, true);
        ok = got[i] != NULL;
    }
    if (!ok) {
        pthread_mutex_unlock(&s->bound_lock);
        pthread_mutex_unlock(&s->trace_lock);
        return WEFT_ENOMEM;
    }
    tr->cap = cap;
    tr->lost_bind = 0;
    tr->t_end = 0;
    atomic_fetch_add_explicit(&tr->gen, 1, memory_order_relaxed);
    tr->us_per_tick = 0;   /* a new recording: its rate is measured anew */
    uint64_t t0, t0_ns;
    weft__trace_clock_pair(&t0, &t0_ns);
    tr->t0_ns = t0_ns;
    atomic_store_explicit(&tr->t0, t0, memory_order_relaxed);
    for (weft__tbuf *b = tr->bufs; b; b = b->next) {
        b->base = atomic_load_explicit(&b->head, memory_order_acquire);   /* what was there belongs to earlier recordings */
        b->base_weight = atomic_load_explicit(&b->weight, memory_order_relaxed);   /* after the acquire: at least base's */
        atomic_store_explicit(&b->t0, atomic_load_explicit(&tr->t0, memory_order_relaxed), memory_order_relaxed);   /* on the owner's line */
        atomic_store_explicit(&b->rec, atomic_load_explicit(&tr->gen, memory_order_relaxed), memory_order_release);   /* base and t0 before: pairs with rec_of() */
    }
    atomic_store_explicit(&tr->on, true, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++) {
        weft__worker *w = i < s->nworkers ? &s->workers[i] : s->bound[i - s->nworkers];
        atomic_store_explicit(&w->tbuf, got[i], memory_order_release);   /* t0, gen, base before: pairs with recording() */
        set_hook(w, WEFT__HOOK_TRACE, true);
    }
    pthread_mutex_unlock(&s->bound_lock);
    pthread_mutex_unlock(&s->trace_lock);
    return WEFT_OK;
}

int weft_trace_stop(weft_sched *s)
{
    if (!s)
        return WEFT_EINVAL;
    pthread_mutex_lock(&s->trace_lock);
    struct weft__trace *tr = atomic_load_explicit(&s->trace, memory_order_relaxed);
    if (tr && atomic_load_explicit(&tr->on, memory_order_relaxed)) {
        pthread_mutex_lock(&s->bound_lock);
        for (unsigned i = 0; i < s->nworkers; i++)
            set_hook(&s->workers[i], WEFT__HOOK_TRACE, false);
        for (unsigned i = 0; i < s->nbound; i++)
            set_hook(s->bound[i], WEFT__HOOK_TRACE, false);
        pthread_mutex_unlock(&s->bound_lock);
        tr->t_end = (weft__trace_ticks() - atomic_load_explicit(&tr->t0, memory_order_relaxed)) & TS_MASK;
        tr->t_end_ns = weft__now_ns();
        atomic_store_explicit(&tr->on, false, memory_order_relaxed);
    }
    pthread_mutex_unlock(&s->trace_lock);
    return WEFT_OK;
}

/* ---- bound threads ------------------------------------------------------------- */

void weft__trace_attach(weft__worker *w)
{
    weft_sched *s = w->s;
    if (!atomic_load_explicit(&s->trace, memory_order_acquire))
        return;   /* never recorded: nothing to join (a start after this sees w in bound[]) */
    pthread_mutex_lock(&s->trace_lock);
    struct weft__trace *tr = atomic_load_explicit(&s->trace, memory_order_relaxed);
    if (atomic_load_explicit(&tr->on, memory_order_relaxed) &&
        !(weft__hooks(w) & WEFT__HOOK_TRACE)) {   /* a start since the bind may have done it */
        weft__tbuf *b = tbuf_for(s, tr, w, tr->cap, false);
        if (b) {
            b->base = atomic_load_explicit(&b->head, memory_order_relaxed);
            b->base_weight = atomic_load_explicit(&b->weight, memory_order_relaxed);   /* our own buffer now */
            atomic_store_explicit(&b->t0, atomic_load_explicit(&tr->t0, memory_order_relaxed), memory_order_relaxed);
            atomic_store_explicit(&b->rec, atomic_load_explicit(&tr->gen, memory_order_relaxed), memory_order_release);   /* as in start */
            atomic_store_explicit(&w->tbuf, b, memory_order_release);   /* as in start */
            set_hook(w, WEFT__HOOK_TRACE, true);
        } else {
            tr->lost_bind++;
        }
    }
    pthread_mutex_unlock(&s->trace_lock);
}

void weft__trace_detach(weft__worker *w)
{
    weft_sched *s = w->s;
    weft__tbuf *b = atomic_load_explicit(&w->tbuf, memory_order_relaxed);
    if (!b)
        return;
    pthread_mutex_lock(&s->trace_lock);
    set_hook(w, WEFT__HOOK_TRACE, false);
    atomic_store_explicit(&w->tbuf, NULL, memory_order_relaxed);
    b->retired_gen = atomic_load_explicit(&s->trace->gen, memory_order_relaxed);
    atomic_store_explicit(&b->retired, true, memory_order_relaxed);   /* its events stay until the next start */
    pthread_mutex_unlock(&s->trace_lock);
}

void weft__trace_fini(weft_sched *s)
{
    struct weft__trace *tr = atomic_load_explicit(&s->trace, memory_order_relaxed);
    if (!tr)
        return;
    for (weft__tbuf *b = tr->bufs, *next; b; b = next) {
        next = b->next;
        tbuf_free(s, b);
    }
    weft__free_with(&s->cfg.allocator, tr, sizeof *tr);
    atomic_store_explicit(&s->trace, NULL, memory_order_relaxed);
}

/* ---- reading a buffer (trace_write.c) ---------------------------------------------- */

size_t weft__tbuf_snapshot(const weft__tbuf *cb, unsigned rec, weft__tev *out, uint64_t *dropped)
{
    weft__tbuf *b = (weft__tbuf *)cb;
    uint64_t cap = b->mask + 1;
    uint64_t h1 = atomic_load_explicit(&b->head, memory_order_acquire);   /* pairs with the owner's release store */
    uint64_t lo = h1 - b->base > cap ? h1 - cap : b->base;
    for (uint64_t i = lo; i < h1; i++) {
        const weft__tev *e = &b->ev[i & b->mask];
        weft__tev *o = &out[i - lo];
        atomic_store_explicit(&o->w0, atomic_load_explicit(&e->w0, memory_order_relaxed), memory_order_relaxed);
        atomic_store_explicit(&o->a, atomic_load_explicit(&e->a, memory_order_relaxed), memory_order_relaxed);
        atomic_store_explicit(&o->b, atomic_load_explicit(&e->b, memory_order_relaxed), memory_order_relaxed);
        atomic_store_explicit(&o->c, atomic_load_explicit(&e->c, memory_order_relaxed), memory_order_relaxed);
    }
    atomic_thread_fence(memory_order_acquire);   /* the copies above before the second look at head */
    uint64_t h2 = atomic_load_explicit(&b->head, memory_order_relaxed);
    uint64_t keep_from = h2 >= cap ? h2 - cap + 1 : 0;   /* slot of index h2 may be half written */
    uint64_t skip = keep_from > lo ? keep_from - lo : 0;
    if (skip > h1 - lo)
        skip = h1 - lo;
    if (skip)
        memmove(out, out + skip, sizeof *out * (size_t)(h1 - lo - skip));
    size_t n = (size_t)(h1 - lo - skip);
    /* Dropped, in JSON events: all this recording's events (weight; read
     * after the fence, so at least h1's sum) less those kept. An event
     * tagged for an earlier recording (begun before the start) is left
     * out and its weight too: it was never this recording's. */
    uint64_t total = atomic_load_explicit(&b->weight, memory_order_relaxed) - b->base_weight;
    uint64_t kept = 0, other = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t w0 = atomic_load_explicit(&out[i].w0, memory_order_relaxed);
        unsigned wt = weft__tev_weight(WEFT__TEV_KIND(w0), atomic_load_explicit(&out[i].a, memory_order_relaxed));
        if (WEFT__TEV_TAG(w0) != (rec & 0xf)) {
            other += wt;
            continue;
        }
        kept += wt;
        if (m != i)
            memcpy(&out[m], &out[i], sizeof *out);   /* the scratch is the writer's own */
        m++;
    }
    total = total > other ? total - other : 0;
    *dropped = total > kept ? total - kept : 0;
    return m;
}
