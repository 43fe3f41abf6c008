/* This file is private to weft: weft_trace_write, a recording (trace.c)
 * as Chrome trace-event JSON.
 *
 * Synchronization
 *   Everything here runs under s->trace_lock, so no start, stop, bind's
 *   or unbind's buffer change runs meanwhile; the threads go on recording
 *   into their buffers, which weft__tbuf_snapshot reads without stopping
 *   them (trace.c). The writer's scratch is its own.
 *
 * One pass per thread over its events, in the order it wrote them. What
 * a fiber is in the middle of (tasks, zones, loop chunks, nested when a
 * task runs another inline) is a stack per fiber: a suspend closes every
 * open slice of the fiber (the stretch it ran), a resume opens them
 * again, so that a task that blocked is drawn as the stretches it ran,
 * sharing args.run, with its wake-up's arrow at the start of each later
 * one. Anything still open at the thread's last event ends there.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "stall.h"
#include "trace.h"

#define TS_BITS WEFT__TEV_TS_BITS
#define TS_MASK ((1ull << TS_BITS) - 1)
#define CALIBRATE_NS 20000000u
#define NONE UINT32_MAX

/* Something a fiber is in the middle of: a task, a zone or a chunk. */
typedef struct item {
    unsigned kind;       /* WEFT__EV_TASK_BEGIN, _CHUNK_BEGIN or _ZONE_BEGIN */
    uint32_t below;      /* the item it is nested in, NONE at the bottom (or the next free one) */
    uint64_t name;       /* the event's name word (or a chunk's first index) */
    uint64_t fn;         /* its fn (or a chunk's end index) */
    uint64_t run;        /* tasks: args.run */
    uint64_t start;      /* the open stretch's start, ticks */
} item;

typedef struct fiber_state {
    uint64_t fiber;      /* 0 = free slot */
    uint32_t top;        /* innermost open item, NONE if none */
    bool suspended;
} fiber_state;

typedef struct writer {
    const weft_allocator *alloc;
    FILE *out;
    bool first;          /* no event written yet: no comma before it */
    bool failed;
    bool nomem;          /* scratch could not grow: events were left out */
    double us_per_tick;
    uint64_t t0;         /* the recording's start, raw ticks */
    uint64_t runs;       /* args.run's last value */
    uint64_t written;
    const weft__tbuf *buf;   /* the thread being written: its arena */
    uint32_t arena_len;
    int tid;
    fiber_state *fibers; /* open addressing by fiber address */
    size_t nfib;         /* slots, a power of two */
    size_t used;
    item *items;         /* every fiber's open items, linked by below */
    uint32_t nitems, items_cap, free_item;
    char name[WEFT__TNAME_MAX + 1];   /* an arena name copied out */
    struct { uint64_t fn; const char *name; } syms[256];   /* dladdr's answers */
} writer;

/* ---- output --------------------------------------------------------------- */

static void emit_raw(writer *wr, const char *s)
{
    if (fputs(s, wr->out) == EOF)
        wr->failed = true;
}

/* A JSON string body: quotes, backslashes and control bytes escaped,
 * bytes that are not UTF-8 (a name cut inside a character, or never
 * UTF-8) written as U+FFFD, so that the file stays JSON. */
static void emit_str(writer *wr, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    char buf[64];
    size_t n = 0;
    while (*s) {
        if (n > sizeof buf - 8) {
            buf[n] = '\0';
            emit_raw(wr, buf);
            n = 0;
        }
        unsigned char ch = *s;
        if (ch == '"' || ch == '\\') {
            buf[n++] = '\\';
            buf[n++] = (char)ch;
            s++;
        } else if (ch < 0x20) {
            n += (size_t)snprintf(buf + n, sizeof buf - n, "\\u%04x", ch);
            s++;
        } else if (ch < 0x80) {
            buf[n++] = (char)ch;
            s++;
        } else {
            /* A lead byte and its continuation bytes, the shortest form
             * of a code point up to U+10FFFF, no surrogates. */
            unsigned len = ch >= 0xc2 && ch <= 0xdf ? 2 : ch >= 0xe0 && ch <= 0xef ? 3
                         : ch >= 0xf0 && ch <= 0xf4 ? 4 : 0;
            bool ok = len != 0;
            for (unsigned k = 1; ok && k < len; k++)
                ok = (s[k] & 0xc0) == 0x80;
            if (ok && len == 3)
                ok = !(ch == 0xe0 && s[1] < 0xa0) && !(ch == 0xed && s[1] >= 0xa0);
            if (ok && len == 4)
                ok = !(ch == 0xf0 && s[1] < 0x90) && !(ch == 0xf4 && s[1] >= 0x90);
            if (ok) {
                memcpy(buf + n, s, len);
                n += len;
                s += len;
            } else {
                memcpy(buf + n, "\xef\xbf\xbd", 3);   /* U+FFFD */
                n += 3;
                s++;
            }
        }
    }
    buf[n] = '\0';
    emit_raw(wr, buf);
}

/* Starts an event: `{"ph":"X","pid":1,"tid":T,"ts":...` (comma first
 * unless it is the first). */
static void open_event(writer *wr, const char *ph, uint64_t ts)
{
    if (fprintf(wr->out, "%s\n{\"ph\":\"%s\",\"pid\":1,\"tid\":%d,\"ts\":%.3f",
                wr->first ? "" : ",", ph, wr->tid, (double)ts * wr->us_per_tick) < 0)
        wr->failed = true;
    wr->first = false;
    wr->written++;
}

/* ---- names ---------------------------------------------------------------- */

static const char *symbol_of(writer *wr, uint64_t fn)
{
    if (!fn)
        return "task";
    unsigned slot = (unsigned)((fn >> 4) ^ (fn >> 12)) & 255;
    if (wr->syms[slot].fn == fn)
        return wr->syms[slot].name;
    const char *name = weft__task_kind((weft_fn)(uintptr_t)fn);   /* a static string */
    if (!name)
        name = weft__os_symbol_name((const void *)(uintptr_t)fn);   /* lives as long as the object is loaded */
    if (!name)
        name = "task";   /* static or hidden: the symbol table does not name it */
    wr->syms[slot].fn = fn;
    wr->syms[slot].name = name;
    return name;
}

static const char *name_of(writer *wr, uint64_t word, uint64_t fn)
{
    if (!word)
        return symbol_of(wr, fn);
    if (word & WEFT__TNAME_COPIED) {
        uint64_t off = word & ~WEFT__TNAME_COPIED;
        if (off >= wr->arena_len)
            return "task";
        size_t n = 0;
        for (; n < WEFT__TNAME_MAX && off + n < wr->arena_len; n++)
            if (!(wr->name[n] = atomic_load_explicit(&wr->buf->arena[off + n], memory_order_relaxed)))
                break;
        wr->name[n] = '\0';
        return wr->name;
    }
    return (const char *)(uintptr_t)word;
}

/* ---- the fibers of one thread ---------------------------------------------- */

/* Doubles the fiber table. false: no memory (the caller skips the event). */
static bool fibers_grow(writer *wr)
{
    size_t n = wr->nfib * 2;
    fiber_state *nf = weft__calloc_with(wr->alloc, sizeof *nf * n);
    if (!nf)
        return false;
    for (size_t k = 0; k < wr->nfib; k++) {
        fiber_state *f = &wr->fibers[k];
        if (!f->fiber)
            continue;
        size_t i = (size_t)((f->fiber >> 6) * 0x9e3779b97f4a7c15ull) & (n - 1);
        while (nf[i].fiber)
            i = (i + 1) & (n - 1);
        nf[i] = *f;
    }
    weft__free_with(wr->alloc, wr->fibers, sizeof *wr->fibers * wr->nfib);
    wr->fibers = nf;
    wr->nfib = n;
    return true;
}

static fiber_state *fiber_find(writer *wr, uint64_t fiber)
{
    if (wr->used * 2 >= wr->nfib && !fibers_grow(wr)) {
        wr->nomem = true;
        return NULL;
    }
    size_t mask = wr->nfib - 1;
    for (size_t i = (size_t)((fiber >> 6) * 0x9e3779b97f4a7c15ull) & mask;; i = (i + 1) & mask) {
        fiber_state *f = &wr->fibers[i];
        if (f->fiber == fiber)
            return f;
        if (f->fiber == 0) {
            f->fiber = fiber;
            f->top = NONE;
            wr->used++;
            return f;
        }
    }
}

/* A free item, NONE if none can be had. */
static uint32_t item_new(writer *wr)
{
    if (wr->free_item != NONE) {
        uint32_t k = wr->free_item;
        wr->free_item = wr->items[k].below;
        return k;
    }
    if (wr->nitems == wr->items_cap) {
        uint32_t cap = wr->items_cap ? wr->items_cap * 2 : 256;
        item *ni = cap > wr->items_cap ? weft__alloc_with(wr->alloc, sizeof *ni * cap) : NULL;
        if (!ni) {
            wr->nomem = true;
            return NONE;
        }
        if (wr->items) {
            memcpy(ni, wr->items, sizeof *ni * wr->nitems);
            weft__free_with(wr->alloc, wr->items, sizeof *ni * wr->items_cap);
        }
        wr->items = ni;
        wr->items_cap = cap;
    }
    return wr->nitems++;
}

/* One stretch of an open item, [it->start, end). */
static void emit_slice(writer *wr, const item *it, uint64_t end, const char *wait)
{
    open_event(wr, "X", it->start);
    if (fprintf(wr->out, ",\"dur\":%.3f,\"name\":\"", (double)(end - it->start) * wr->us_per_tick) < 0)
        wr->failed = true;
    if (it->kind == WEFT__EV_CHUNK_BEGIN) {
        if (fprintf(wr->out, "chunk\",\"cat\":\"chunk\",\"args\":{\"begin\":%" PRIu64 ",\"end\":%" PRIu64 "}}",
                    it->name, it->fn) < 0)
            wr->failed = true;
        return;
    }
    emit_str(wr, name_of(wr, it->name, it->fn));
    if (it->kind == WEFT__EV_ZONE_BEGIN) {
        emit_raw(wr, "\",\"cat\":\"zone\"}");
        return;
    }
    if (fprintf(wr->out, "\",\"cat\":\"task\",\"args\":{\"run\":%" PRIu64, it->run) < 0)
        wr->failed = true;
    if (wait) {
        emit_raw(wr, ",\"wait\":\"");
        emit_str(wr, wait);
        emit_raw(wr, "\"");
    }
    emit_raw(wr, "}}");
}

static void push(writer *wr, fiber_state *f, unsigned kind, uint64_t name, uint64_t fn, uint64_t ts)
{
    uint32_t k = item_new(wr);
    if (k == NONE)
        return;
    item *it = &wr->items[k];
    it->kind = kind;
    it->below = f->top;
    it->name = name;
    it->fn = fn;
    it->run = kind == WEFT__EV_TASK_BEGIN ? ++wr->runs : 0;
    it->start = ts;
    f->top = k;
    f->suspended = false;
}

/* Closes the innermost item if it is of `kind` (an end without its begin,
 * from before the recording or a lost event, closes nothing). */
static void pop(writer *wr, fiber_state *f, unsigned kind, uint64_t ts)
{
    if (f->top == NONE)
        return;
    uint32_t k = f->top;
    item *it = &wr->items[k];
    if (it->kind != kind)
        return;
    if (!f->suspended)
        emit_slice(wr, it, ts, NULL);
    f->top = it->below;
    it->below = wr->free_item;
    wr->free_item = k;
}

static void thread_events(writer *wr, const weft__tev *ev, size_t n, uint64_t t_end)
{
    memset(wr->fibers, 0, sizeof *wr->fibers * wr->nfib);
    wr->used = 0;
    wr->nitems = 0;
    wr->free_item = NONE;
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t w0 = atomic_load_explicit(&ev[i].w0, memory_order_relaxed);
        uint64_t ts = w0 & TS_MASK;
        if (ts > t_end)
            continue;   /* stamped against another recording's start, or after the stop */
        unsigned kind = WEFT__TEV_KIND(w0), aux = WEFT__TEV_AUX(w0);
        uint64_t a = atomic_load_explicit(&ev[i].a, memory_order_relaxed);
        uint64_t b = atomic_load_explicit(&ev[i].b, memory_order_relaxed);
        uint64_t c = atomic_load_explicit(&ev[i].c, memory_order_relaxed);
        last = ts > last ? ts : last;
        fiber_state *f = NULL;
        if (kind == WEFT__EV_TASK_BEGIN || kind == WEFT__EV_TASK_END || kind == WEFT__EV_SUSPEND ||
            kind == WEFT__EV_RESUME || kind >= WEFT__EV_CHUNK_BEGIN) {
            f = fiber_find(wr, c);
            if (!f)
                continue;
        }
        switch (kind) {
        case WEFT__EV_TASK_BEGIN:
            push(wr, f, kind, a, b, ts);
            open_event(wr, "C", ts);
            if (fprintf(wr->out, ",\"name\":\"queue\",\"id\":%d,\"args\":{\"length\":%u}}", wr->tid, aux) < 0)
                wr->failed = true;
            break;
        case WEFT__EV_TASK_END:
            pop(wr, f, WEFT__EV_TASK_BEGIN, ts);
            break;
        case WEFT__EV_CHUNK_BEGIN:
        case WEFT__EV_ZONE_BEGIN:
            push(wr, f, kind, a, b, ts);
            break;
        case WEFT__EV_CHUNK_END:
        case WEFT__EV_ZONE_END:
            pop(wr, f, kind - 1, ts);
            break;
        case WEFT__EV_SUSPEND:
            if (!f->suspended) {
                /* Innermost first. Every task open on the fiber gets the
                 * wait: one run inline under another (weft_wait_until's
                 * children, a subflow join's sub-graph) blocks the ones
                 * it runs under with it, and each stretch that ends here
                 * ended because the fiber blocked (trace.md). */
                for (uint32_t k = f->top; k != NONE; k = wr->items[k].below) {
                    bool task = wr->items[k].kind == WEFT__EV_TASK_BEGIN;
                    emit_slice(wr, &wr->items[k], ts, task ? (const char *)(uintptr_t)a : NULL);
                }
                f->suspended = f->top != NONE;
            }
            break;
        case WEFT__EV_RESUME: {
            for (uint32_t k = f->top; k != NONE; k = wr->items[k].below)
                wr->items[k].start = ts;
            f->suspended = false;
            if (a) {   /* also where no task is open (a thread's own wait): the arrow still ends here */
                open_event(wr, "f", ts);
                if (fprintf(wr->out, ",\"bp\":\"e\",\"id\":%" PRIu64 ",\"name\":\"wake\",\"cat\":\"wake\"}", a) < 0)
                    wr->failed = true;
            }
            break;
        }
        case WEFT__EV_WAKE:
            open_event(wr, "s", ts);
            if (fprintf(wr->out, ",\"id\":%" PRIu64 ",\"name\":\"wake\",\"cat\":\"wake\"}", a) < 0)
                wr->failed = true;
            break;
        case WEFT__EV_STEAL:
            open_event(wr, "i", ts);
            if (fprintf(wr->out, ",\"s\":\"t\",\"name\":\"steal\",\"cat\":\"sched\",\"args\":{\"from\":%" PRIu64 "}}", a) < 0)
                wr->failed = true;
            break;
        case WEFT__EV_PARK:
        case WEFT__EV_UNPARK:
            open_event(wr, "i", ts);
            emit_raw(wr, kind == WEFT__EV_PARK ? ",\"s\":\"t\",\"name\":\"park\",\"cat\":\"sched\"}"
                                              : ",\"s\":\"t\",\"name\":\"wake\",\"cat\":\"sched\"}");
            break;
        case WEFT__EV_GRAPH_END: {
            /* Both ends here: the start may have been on a thread that
             * records nothing (an outside caller); one before the
             * recording began is drawn from its start. */
            uint64_t from = b ? (b - wr->t0) & TS_MASK : 0;
            if (from > ts)
                from = 0;
            for (int end = 0; end < 2; end++) {
                open_event(wr, end ? "e" : "b", end ? ts : from);
                if (fprintf(wr->out, ",\"id\":\"0x%" PRIx64 "\",\"name\":\"graph run\",\"cat\":\"graph\"}", a) < 0)
                    wr->failed = true;
            }
            break;
        }
        default:
            break;
        }
    }
    /* Still open: ends at the thread's last event. */
    for (size_t i = 0; i < wr->nfib; i++) {
        fiber_state *f = &wr->fibers[i];
        if (!f->fiber || f->suspended)
            continue;
        for (uint32_t k = f->top; k != NONE; k = wr->items[k].below)
            emit_slice(wr, &wr->items[k], last, NULL);
    }
}

/* ---- the clock's rate ---------------------------------------------------------- */

static double us_per_tick(struct weft__trace *tr)
{
    const char *clock = weft__trace_clock_name();
    if (strcmp(clock, "monotonic") == 0)
        return 1e-3;
#if defined(__aarch64__)
    uint64_t frq;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(frq));
    return frq ? 1e6 / (double)frq : 1e-3;
#else
    /* The TSC against CLOCK_MONOTONIC since the start, over at least
     * 20 ms (a short recording waits for the rest). A stopped recording
     * keeps the rate its first write measured, so that every write of it
     * gives the same times (a rate measured anew could differ by a
     * preemption between two clock reads over the span: 0.3% was seen
     * on a loaded machine). Writes hold trace_lock. */
    if (!atomic_load_explicit(&tr->on, memory_order_relaxed) && tr->us_per_tick != 0)
        return tr->us_per_tick;
    uint64_t t0 = atomic_load_explicit(&tr->t0, memory_order_relaxed);
    uint64_t now_ns, now;
    for (;;) {
        weft__trace_clock_pair(&now, &now_ns);
        if (now_ns - tr->t0_ns >= CALIBRATE_NS)
            break;
        weft__os_sleep_ns(1000000);
    }
    double rate = (double)(now_ns - tr->t0_ns) / 1e3 / (double)(now - t0);
    if (!atomic_load_explicit(&tr->on, memory_order_relaxed))
        tr->us_per_tick = rate;
    return rate;
#endif
}

/* ---- the file ------------------------------------------------------------------- */

static const char *thread_kind(const weft__tbuf *b)
{
    return b->bound ? "bound thread" : "worker";
}

int weft_trace_write(weft_sched *s, FILE *out)
{
    if (!s || !out)
        return WEFT_EINVAL;
    pthread_mutex_lock(&s->trace_lock);
    struct weft__trace *tr = atomic_load_explicit(&s->trace, memory_order_relaxed);
    writer *wr = weft__calloc_with(&s->cfg.allocator, sizeof *wr);
    weft__tev *scratch = NULL;
    size_t scratch_n = tr ? (size_t)tr->cap : 0;
    for (weft__tbuf *b = tr ? tr->bufs : NULL; b; b = b->next)
        scratch_n = b->mask + 1 > scratch_n ? (size_t)b->mask + 1 : scratch_n;
    if (wr && scratch_n) {
        scratch = weft__alloc_with(&s->cfg.allocator, sizeof *scratch * scratch_n);
        wr->nfib = 64;   /* grows with the fibers seen */
        wr->fibers = weft__alloc_with(&s->cfg.allocator, sizeof *wr->fibers * wr->nfib);
    }
    if (!wr || (scratch_n && (!scratch || !wr->fibers))) {
        if (wr && wr->fibers)
            weft__free_with(&s->cfg.allocator, wr->fibers, sizeof *wr->fibers * wr->nfib);
        if (scratch)
            weft__free_with(&s->cfg.allocator, scratch, sizeof *scratch * scratch_n);
        if (wr)
            weft__free_with(&s->cfg.allocator, wr, sizeof *wr);
        pthread_mutex_unlock(&s->trace_lock);
        return WEFT_ENOMEM;
    }
    wr->alloc = &s->cfg.allocator;
    wr->out = out;
    wr->first = true;
    uint64_t dropped = tr ? tr->lost_bind : 0;
    emit_raw(wr, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    if (tr) {
        bool on = atomic_load_explicit(&tr->on, memory_order_relaxed);
        uint64_t t_end = on ? (weft__trace_ticks() - atomic_load_explicit(&tr->t0, memory_order_relaxed)) & TS_MASK
                            : tr->t_end;
        wr->us_per_tick = us_per_tick(tr);
        wr->t0 = atomic_load_explicit(&tr->t0, memory_order_relaxed);
        wr->tid = 0;
        open_event(wr, "M", 0);
        emit_raw(wr, ",\"name\":\"process_name\",\"args\":{\"name\":\"weft\"}}");
        for (weft__tbuf *b = tr->bufs; b; b = b->next) {
            uint64_t lost = 0;
            size_t n = weft__tbuf_snapshot(b, atomic_load_explicit(&tr->gen, memory_order_relaxed), scratch, &lost);
            dropped += lost;
            if (!n && !lost)
                continue;   /* nothing of this recording */
            wr->buf = b;
            wr->tid = b->tid;
            wr->arena_len = atomic_load_explicit(&b->arena_len, memory_order_acquire);   /* names of the events copied above */
            open_event(wr, "M", 0);
            if (fprintf(out, ",\"name\":\"thread_name\",\"args\":{\"name\":\"%s %d\"}}", thread_kind(b), b->tid) < 0)
                wr->failed = true;
            thread_events(wr, scratch, n, t_end);
        }
    }
    if (fprintf(out, "\n],\"otherData\":{\"dropped\":%" PRIu64 ",\"events\":%" PRIu64 ",\"clock\":\"%s\"}}\n",
                dropped, wr->written, weft__trace_clock_name()) < 0)
        wr->failed = true;
    if (fflush(out) == EOF)
        wr->failed = true;
    bool failed = wr->failed;
    if (scratch)
        weft__free_with(&s->cfg.allocator, scratch, sizeof *scratch * scratch_n);
    if (wr->fibers)
        weft__free_with(&s->cfg.allocator, wr->fibers, sizeof *wr->fibers * wr->nfib);
    if (wr->items)
        weft__free_with(&s->cfg.allocator, wr->items, sizeof *wr->items * wr->items_cap);
    bool nomem = wr->nomem;
    weft__free_with(&s->cfg.allocator, wr, sizeof *wr);
    pthread_mutex_unlock(&s->trace_lock);
    return failed ? WEFT_EIO : nomem ? WEFT_ENOMEM : WEFT_OK;
}
