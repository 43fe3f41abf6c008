/* This file is private to weft's tests: see trace_check.h. A trace that
 * fails a check is also saved as /tmp/weft-trace-<pid>-<n>.json (named
 * in the reason) so that it can be opened in Perfetto or read. */
#define _GNU_SOURCE
#include "trace_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool why_f(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* Appends " (trace saved as PATH)" to why. */
static void save_failed(const tr_trace *t, char *why, size_t cap)
{
    static atomic_int seq;
    char path[128];
    snprintf(path, sizeof path, "/tmp/weft-trace-%d-%d.json", (int)getpid(), atomic_fetch_add(&seq, 1));
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fwrite(t->text, 1, t->len, f);
    fclose(f);
    size_t n = why ? strlen(why) : 0;
    if (why && n + 1 < cap)
        snprintf(why + n, cap - n, " (trace saved as %s)", path);
}

static bool is_int(double v)
{
    return isfinite(v) && v == floor(v);
}

static const char *ev_desc(const tr_event *e, char *buf, size_t cap)
{
    snprintf(buf, cap, "{ph %c, cat %s, name \"%s\", tid %d, ts %.4f, dur %.4f, run %.0f}", e->ph,
             e->cat ? e->cat : "-", e->name ? e->name : "-", e->tid, e->ts, e->dur, e->run);
    return buf;
}

/* ---- one event ------------------------------------------------------------ */

static bool read_event(tr_trace *t, size_t i, unsigned workers, char *why, size_t cap)
{
    const tj_value *o = tj_at(tj_get(t->root, "traceEvents"), i);
    tr_event *e = &t->ev[i];
    memset(e, 0, sizeof *e);
    e->raw = o;
    e->run = -1;
    if (!o || o->type != TJ_OBJ)
        return why_f(why, cap, "traceEvents[%zu] is not an object", i);
    const char *ph = tj_get_str(o, "ph");
    if (!ph || strlen(ph) != 1 || !strchr("XMsfbeiC", ph[0]))
        return why_f(why, cap, "traceEvents[%zu]: ph \"%s\" is not one of X M s f b e i C", i, ph ? ph : "(none)");
    e->ph = ph[0];
    double pid, tid;
    if (!tj_get_num(o, "pid", &pid) || pid != 1)
        return why_f(why, cap, "traceEvents[%zu]: pid is not 1", i);
    if (!tj_get_num(o, "tid", &tid) || !is_int(tid) || tid < 0 || tid > 1e6)
        return why_f(why, cap, "traceEvents[%zu]: tid is not an integer >= 0", i);
    e->tid = (int)tid;
    e->cat = tj_get_str(o, "cat");
    e->name = tj_get_str(o, "name");
    e->args = tj_get(o, "args");
    e->id = tj_get(o, "id");
    if (tj_get(o, "name") && !e->name)
        return why_f(why, cap, "traceEvents[%zu]: name is not a string", i);
    if (tj_get(o, "cat") && !e->cat)
        return why_f(why, cap, "traceEvents[%zu]: cat is not a string", i);
    if (e->args && e->args->type != TJ_OBJ)
        return why_f(why, cap, "traceEvents[%zu]: args is not an object", i);
    e->has_ts = tj_get_num(o, "ts", &e->ts);
    if (tj_get(o, "ts") && !e->has_ts)
        return why_f(why, cap, "traceEvents[%zu]: ts is not a number", i);
    if (e->ph != 'M') {
        if (!e->has_ts || e->ts < -TR_EPS)
            return why_f(why, cap, "traceEvents[%zu] (ph %c): ts missing or negative (%g)", i, e->ph, e->ts);
    }
    char d[256];
    switch (e->ph) {
    case 'M': {
        if (!e->name)
            return why_f(why, cap, "traceEvents[%zu]: metadata without a name", i);
        if (strcmp(e->name, "thread_name") != 0)
            break;
        const char *tn = tj_get_str(e->args, "name");
        if (!tn)
            return why_f(why, cap, "thread_name of tid %d has no args.name string", e->tid);
        char want[64];
        snprintf(want, sizeof want, (unsigned)e->tid < workers ? "worker %d" : "bound thread %d", e->tid);
        if (strcmp(tn, want) != 0)
            return why_f(why, cap, "tid %d is named \"%s\", expected \"%s\" (%u workers)", e->tid, tn, want, workers);
        const char *old = tr_thread_name(t, e->tid);
        if (old && strcmp(old, tn) != 0)
            return why_f(why, cap, "tid %d named twice: \"%s\" and \"%s\"", e->tid, old, tn);
        if (!old) {
            if (t->nnames == (int)(sizeof t->names / sizeof t->names[0]))
                return why_f(why, cap, "more than %d named threads", t->nnames);
            t->names_tid[t->nnames] = e->tid;
            t->names[t->nnames++] = tn;
        }
        break;
    }
    case 'X': {
        if (!e->name)
            return why_f(why, cap, "X event %zu has no name string", i);
        if (!tj_get_num(o, "dur", &e->dur) || !(e->dur >= 0))
            return why_f(why, cap, "X event %s: dur missing or negative", ev_desc(e, d, sizeof d));
        if (!e->cat || (strcmp(e->cat, "task") && strcmp(e->cat, "zone") && strcmp(e->cat, "chunk")))
            return why_f(why, cap, "X event %s: cat is not task, zone or chunk", ev_desc(e, d, sizeof d));
        if (strcmp(e->cat, "task") == 0) {
            if (!tj_get_num(e->args, "run", &e->run) || !is_int(e->run))
                return why_f(why, cap, "task event %s has no integer args.run", ev_desc(e, d, sizeof d));
            e->wait = tj_get_str(e->args, "wait");
            if (tj_get(e->args, "wait") && !e->wait)
                return why_f(why, cap, "task event %s: args.wait is not a string", ev_desc(e, d, sizeof d));
        }
        if (strcmp(e->cat, "chunk") == 0) {
            double b, en;
            if (!tj_get_num(e->args, "begin", &b) || !tj_get_num(e->args, "end", &en) || !is_int(b) ||
                !is_int(en) || b > en)
                return why_f(why, cap, "chunk event %s: args.begin/end missing or begin > end",
                             ev_desc(e, d, sizeof d));
        }
        break;
    }
    case 'i':
        if (!e->name || (strcmp(e->name, "steal") && strcmp(e->name, "park") && strcmp(e->name, "wake")))
            return why_f(why, cap, "instant event %zu named \"%s\" (steal, park or wake expected)", i,
                         e->name ? e->name : "(none)");
        if (!e->cat || strcmp(e->cat, "sched") != 0)
            return why_f(why, cap, "instant %s: cat is not sched", ev_desc(e, d, sizeof d));
        if (strcmp(e->name, "steal") == 0) {
            double from;
            if (!tj_get_num(e->args, "from", &from) || !is_int(from) || from < 0)
                return why_f(why, cap, "steal %s: args.from is not a thread id", ev_desc(e, d, sizeof d));
            if ((int)from == e->tid)
                return why_f(why, cap, "steal %s: from its own thread", ev_desc(e, d, sizeof d));
        }
        break;
    case 'C':
        if (!e->name || strcmp(e->name, "queue") != 0)
            return why_f(why, cap, "counter %zu named \"%s\", not queue", i, e->name ? e->name : "(none)");
        if (!e->args || e->args->len == 0)
            return why_f(why, cap, "counter %s without values", ev_desc(e, d, sizeof d));
        for (size_t k = 0; k < e->args->len; k++) {
            double v;
            if (!tj_num(e->args->items[k], &v) || !is_int(v) || v < 0 || v > 255)
                return why_f(why, cap, "counter %s: value %s not an integer in [0, 255]", ev_desc(e, d, sizeof d),
                             e->args->keys[k]);
        }
        break;
    case 's':
    case 'f':
        if (!e->cat || strcmp(e->cat, "wake") != 0)
            return why_f(why, cap, "flow %s: cat is not wake", ev_desc(e, d, sizeof d));
        if (!e->id || (e->id->type != TJ_NUM && e->id->type != TJ_STR))
            return why_f(why, cap, "flow %s: no id", ev_desc(e, d, sizeof d));
        break;
    case 'b':
    case 'e':
        if (!e->cat || strcmp(e->cat, "graph") != 0)
            return why_f(why, cap, "async %s: cat is not graph", ev_desc(e, d, sizeof d));
        if (!e->id || (e->id->type != TJ_NUM && e->id->type != TJ_STR))
            return why_f(why, cap, "async %s: no id", ev_desc(e, d, sizeof d));
        break;
    }
    return true;
}

/* ---- sorting helpers -------------------------------------------------------- */

/* qsort_r comparators over indices into ctx's events (several threads
 * may check traces at once: no static context). */
static int by_run_ts(const void *a, const void *b, void *ctx)
{
    const tr_trace *t = ctx;
    const tr_event *x = &t->ev[*(const size_t *)a], *y = &t->ev[*(const size_t *)b];
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return 0;
}

static int by_tid_ts_dur(const void *a, const void *b, void *ctx)
{
    const tr_trace *t = ctx;
    const tr_event *x = &t->ev[*(const size_t *)a], *y = &t->ev[*(const size_t *)b];
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1;   /* the outer one first */
    return 0;
}

static int by_begin(const void *a, const void *b)
{
    const tr_run *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

/* ids as strings, so that numbers and strings sort together. */
struct keyed {
    char key[48];
    size_t i;
};

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct keyed *)a)->key, ((const struct keyed *)b)->key);
}

static void id_key(const tj_value *id, char ph, char *out, size_t cap)
{
    if (id->type == TJ_NUM)
        snprintf(out, cap, "%c n%.17g", ph, id->num);
    else
        snprintf(out, cap, "%c s%.40s", ph, id->str);
}

static bool tr_parse_checked(tr_trace *t, char *text, size_t len, unsigned workers, char *why, size_t cap);

/* ---- whole-trace checks ------------------------------------------------------ */

static bool check_runs(tr_trace *t, char *why, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++)
        n += t->ev[i].ph == 'X' && t->ev[i].run >= 0;
    size_t *idx = malloc((n + 1) * sizeof *idx);
    t->runs = calloc(n + 1, sizeof *t->runs);
    if (!idx || !t->runs) {
        free(idx);
        return why_f(why, cap, "out of memory");
    }
    n = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].ph == 'X' && t->ev[i].run >= 0)
            idx[n++] = i;
    qsort_r(idx, n, sizeof *idx, by_run_ts, t);
    char d1[256], d2[256];
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && t->ev[idx[j]].run == t->ev[idx[i]].run)
            j++;
        tr_run *r = &t->runs[t->nruns++];
        const tr_event *first = &t->ev[idx[i]];
        r->id = first->run;
        r->name = first->name;
        r->tid = first->tid;
        r->begin = first->ts;
        r->end = first->ts + first->dur;
        r->nslices = j - i;
        r->slices = malloc(r->nslices * sizeof *r->slices);
        if (!r->slices) {
            free(idx);
            return why_f(why, cap, "out of memory");
        }
        for (size_t k = i; k < j; k++) {
            const tr_event *e = &t->ev[idx[k]];
            r->slices[k - i] = idx[k];
            if (e->tid != r->tid || strcmp(e->name, r->name) != 0) {
                free(idx);
                return why_f(why, cap, "run %.0f: slices on two threads or under two names: %s and %s", r->id,
                             ev_desc(first, d1, sizeof d1), ev_desc(e, d2, sizeof d2));
            }
            if (k > i) {
                const tr_event *p = &t->ev[idx[k - 1]];
                if (e->ts + TR_EPS < p->ts + p->dur) {
                    free(idx);
                    return why_f(why, cap, "run %.0f: slices overlap: %s and %s", r->id, ev_desc(p, d1, sizeof d1),
                                 ev_desc(e, d2, sizeof d2));
                }
                if (!p->wait) {
                    free(idx);
                    return why_f(why, cap, "run %.0f: slice %s is followed by another but has no args.wait",
                                 r->id, ev_desc(p, d1, sizeof d1));
                }
            }
            if (e->ts + e->dur > r->end)
                r->end = e->ts + e->dur;
        }
        i = j;
    }
    free(idx);
    qsort(t->runs, t->nruns, sizeof *t->runs, by_begin);
    return true;
}

static bool check_nesting(tr_trace *t, char *why, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++)
        n += t->ev[i].ph == 'X';
    size_t *idx = malloc((n + 1) * sizeof *idx), *stack = malloc((n + 1) * sizeof *stack);
    if (!idx || !stack) {
        free(idx);
        free(stack);
        return why_f(why, cap, "out of memory");
    }
    n = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].ph == 'X')
            idx[n++] = i;
    qsort_r(idx, n, sizeof *idx, by_tid_ts_dur, t);
    size_t top = 0;
    bool ok = true;
    char d1[256], d2[256];
    for (size_t k = 0; k < n && ok; k++) {
        const tr_event *e = &t->ev[idx[k]];
        if (k > 0 && t->ev[idx[k - 1]].tid != e->tid)
            top = 0;
        while (top > 0) {
            const tr_event *o = &t->ev[stack[top - 1]];
            if (o->ts + o->dur <= e->ts + TR_EPS)
                top--;
            else
                break;
        }
        if (top > 0) {
            const tr_event *o = &t->ev[stack[top - 1]];
            if (e->ts + e->dur > o->ts + o->dur + TR_EPS) {
                ok = why_f(why, cap, "tid %d: %s and %s overlap without nesting", e->tid, ev_desc(o, d1, sizeof d1),
                           ev_desc(e, d2, sizeof d2));
                break;
            }
        }
        stack[top++] = idx[k];
    }
    free(idx);
    free(stack);
    return ok;
}

/* Flows and async pairs: ids. */
static bool check_ids(tr_trace *t, char *why, size_t cap)
{
    struct keyed *k = malloc((t->nev + 1) * sizeof *k);
    if (!k)
        return why_f(why, cap, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++) {
        char ph = t->ev[i].ph;
        if (ph == 's' || ph == 'f' || ph == 'b' || ph == 'e') {
            id_key(t->ev[i].id, ph == 's' || ph == 'f' ? 'w' : 'g', k[n].key, sizeof k[n].key);
            k[n++].i = i;
        }
    }
    qsort(k, n, sizeof *k, by_key);
    bool ok = true;
    char d1[256], d2[256];
    for (size_t i = 0; i < n && ok;) {
        size_t j = i, ns = 0, nf = 0, nb = 0, ne = 0;
        const tr_event *s = NULL, *f = NULL, *b = NULL, *e = NULL;
        for (; j < n && strcmp(k[j].key, k[i].key) == 0; j++) {
            const tr_event *x = &t->ev[k[j].i];
            switch (x->ph) {
            case 's': ns++; s = x; break;
            case 'f': nf++; f = x; break;
            case 'b': nb++; b = x; break;
            case 'e': ne++; e = x; break;
            }
        }
        if (ns > 1 || nf > 1)
            ok = why_f(why, cap, "flow id %s used by %zu s and %zu f events", k[i].key + 2, ns, nf);
        else if (nf == 1 && ns == 0 && t->dropped == 0)
            ok = why_f(why, cap, "flow %s has no s event with its id (nothing was dropped)", ev_desc(f, d1, sizeof d1));
        else if (s && f && s->ts > f->ts + TR_EPS)
            ok = why_f(why, cap, "flow %s starts after it ends at %s", ev_desc(s, d1, sizeof d1), ev_desc(f, d2, sizeof d2));
        else if (nb > 1 || ne > 1)
            ok = why_f(why, cap, "graph id %s used by %zu b and %zu e events", k[i].key + 2, nb, ne);
        else if (b && e && b->ts > e->ts + TR_EPS)
            ok = why_f(why, cap, "graph run %s begins after it ends at %s", ev_desc(b, d1, sizeof d1),
                       ev_desc(e, d2, sizeof d2));
        i = j;
    }
    free(k);
    return ok;
}

/* The blocks of the last traces parsed, kept reachable: a test that
 * fails an assertion between tr_parse and tr_free leaves the test at
 * once, and LeakSanitizer would report them on top of the failure. */
#define TR_KEEP 16
static _Atomic(void *) tr_kept[TR_KEEP][4];
static atomic_uint tr_kept_next;

static void keep_reachable(const tr_trace *t)
{
    unsigned k = atomic_fetch_add_explicit(&tr_kept_next, 1, memory_order_relaxed) % TR_KEEP;
    atomic_store_explicit(&tr_kept[k][0], t->text, memory_order_relaxed);
    atomic_store_explicit(&tr_kept[k][1], t->root, memory_order_relaxed);
    atomic_store_explicit(&tr_kept[k][2], t->ev, memory_order_relaxed);
    atomic_store_explicit(&tr_kept[k][3], t->runs, memory_order_relaxed);
}

bool tr_parse(tr_trace *t, char *text, size_t len, unsigned workers, char *why, size_t cap)
{
    bool ok = tr_parse_checked(t, text, len, workers, why, cap);
    keep_reachable(t);
    return ok;
}

static bool tr_parse_checked(tr_trace *t, char *text, size_t len, unsigned workers, char *why, size_t cap)
{
    memset(t, 0, sizeof *t);
    t->text = text;
    t->len = len;
    char err[256];
    t->root = tj_parse(text, len, err, sizeof err);
    if (!t->root) {
        size_t off = 0;
        sscanf(err, "offset %zu", &off);
        size_t lo = off > 60 ? off - 60 : 0, hi = off + 60 < len ? off + 60 : len;
        char near[512];
        size_t k = 0;
        for (size_t i = lo; i < hi && k + 5 < sizeof near; i++) {   /* printable, bytes as \xNN */
            unsigned char ch = (unsigned char)text[i];
            if (ch >= 0x20 && ch < 0x7f)
                near[k++] = (char)ch;
            else
                k += (size_t)snprintf(near + k, sizeof near - k, "\\x%02x", ch);
        }
        near[k] = '\0';
        why_f(why, cap, "trace is not JSON: %s; near: %s", err, near);
        save_failed(t, why, cap);
        return false;
    }
    const tj_value *evs = tj_get(t->root, "traceEvents"), *other = tj_get(t->root, "otherData");
    const char *unit = tj_get_str(t->root, "displayTimeUnit");
    bool ok = true;
    if (t->root->type != TJ_OBJ || !evs || evs->type != TJ_ARR)
        ok = why_f(why, cap, "no traceEvents array in a top-level object");
    else if (!unit || strcmp(unit, "ns") != 0)
        ok = why_f(why, cap, "displayTimeUnit is \"%s\", not \"ns\"", unit ? unit : "(none)");
    else if (!other || other->type != TJ_OBJ)
        ok = why_f(why, cap, "no otherData object");
    else if (!tj_get_num(other, "dropped", &t->dropped) || !is_int(t->dropped) || t->dropped < 0)
        ok = why_f(why, cap, "otherData.dropped is not an integer >= 0");
    else if (!tj_get_num(other, "events", &t->events) || !is_int(t->events) || t->events < 0)
        ok = why_f(why, cap, "otherData.events is not an integer >= 0");
    else if (!(t->clock = tj_get_str(other, "clock")) || (strcmp(t->clock, "tsc") && strcmp(t->clock, "monotonic")))
        ok = why_f(why, cap, "otherData.clock is \"%s\", not tsc or monotonic", t->clock ? t->clock : "(none)");
    if (ok) {
        t->nev = evs->len;
        t->ev = calloc(t->nev + 1, sizeof *t->ev);
        if (!t->ev)
            ok = why_f(why, cap, "out of memory");
        for (size_t i = 0; ok && i < t->nev; i++)
            ok = read_event(t, i, workers, why, cap);
    }
    if (ok && t->events != (double)t->nev)
        ok = why_f(why, cap, "otherData.events is %.0f, but traceEvents holds %zu", t->events, t->nev);
    for (size_t i = 0; ok && i < t->nev; i++)
        if (t->ev[i].ph != 'M' && !tr_thread_name(t, t->ev[i].tid)) {
            char d[256];
            ok = why_f(why, cap, "event %s on tid %d, which has no thread_name", ev_desc(&t->ev[i], d, sizeof d),
                       t->ev[i].tid);
        }
    if (ok)
        ok = check_runs(t, why, cap) && check_nesting(t, why, cap) && check_ids(t, why, cap);
    if (!ok)
        save_failed(t, why, cap);
    return ok;
}

bool tr_capture(weft_sched *s, tr_trace *t, int *rc_out, char *why, size_t cap)
{
    char *text = NULL;
    size_t len = 0;
    memset(t, 0, sizeof *t);
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return why_f(why, cap, "open_memstream failed");
    int rc = weft_trace_write(s, f);
    fclose(f);
    if (rc_out)
        *rc_out = rc;
    if (rc != WEFT_OK) {
        free(text);
        return why_f(why, cap, "weft_trace_write: %s", weft_err_name(rc));
    }
    return tr_parse(t, text, len, weft_sched_workers(s), why, cap);
}

void tr_free(tr_trace *t)
{
    for (size_t i = 0; i < t->nruns; i++)
        free(t->runs[i].slices);
    free(t->runs);
    free(t->ev);
    tj_free(t->root);
    free(t->text);
    memset(t, 0, sizeof *t);
}

/* ---- lookups --------------------------------------------------------------- */

const char *tr_thread_name(const tr_trace *t, int tid)
{
    for (int i = 0; i < t->nnames; i++)
        if (t->names_tid[i] == tid)
            return t->names[i];
    return NULL;
}

size_t tr_runs_named(const tr_trace *t, const char *name, const tr_run **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nruns; i++)
        if (strcmp(t->runs[i].name, name) == 0) {
            if (n < cap)
                out[n] = &t->runs[i];
            n++;
        }
    return n;
}

static bool matches(const tr_event *e, char ph, const char *cat, const char *name)
{
    return (!ph || e->ph == ph) && (!cat || (e->cat && strcmp(e->cat, cat) == 0)) &&
           (!name || (e->name && strcmp(e->name, name) == 0));
}

size_t tr_count(const tr_trace *t, char ph, const char *cat, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++)
        n += matches(&t->ev[i], ph, cat, name);
    return n;
}

const tr_event *tr_find(const tr_trace *t, char ph, const char *cat, const char *name, size_t i)
{
    for (size_t k = 0; k < t->nev; k++)
        if (matches(&t->ev[k], ph, cat, name) && i-- == 0)
            return &t->ev[k];
    return NULL;
}

size_t tr_count_tid(const tr_trace *t, int tid, char ph)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++)
        n += t->ev[i].tid == tid && t->ev[i].ph != 'M' && (!ph || t->ev[i].ph == ph);
    return n;
}

const tr_event *tr_flow_into(const tr_trace *t, const tr_event *e)
{
    const tr_event *best = NULL;
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *f = &t->ev[i];
        if (f->ph != 'f' || f->tid != e->tid || f->ts < e->ts - TR_EPS || f->ts > e->ts + e->dur + TR_EPS)
            continue;
        if (!best || fabs(f->ts - e->ts) < fabs(best->ts - e->ts))
            best = f;
    }
    return best;
}

const tr_event *tr_flow_start(const tr_trace *t, const tr_event *f)
{
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].ph == 's' && tj_equal(t->ev[i].id, f->id))
            return &t->ev[i];
    return NULL;
}
