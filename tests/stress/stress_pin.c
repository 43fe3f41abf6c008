/* Stress: pinned tasks and thread ids under load (issue 22), from weft.h's
 * contract alone. A plain C program (run under TSAN too) that prints
 * "N passed, N failed".
 *
 *  - pins_exactly_once: 10^5 tasks (WEFT_STRESS_SCALE scales it) pinned
 *    from plain threads, bound threads and worker tasks to every worker
 *    and to two bound threads (one helping, one NO_HELP), which pump with
 *    weft_pinned_wait_for / weft_pinned_run and wait in a timed event wait
 *    meanwhile: each task ran exactly once, on the thread it named.
 *  - frame_loop: 1000 frames of a graph with two main-thread tasks
 *    (weft_task_set_pin to the main thread's id), the main thread only in
 *    weft_graph_wait, or pumping weft_pinned_wait_for / weft_pinned_run until
 *    the frame is done; every frame checked against a sequential run.
 *  - pins_racing_unbind: plain threads pin to a bound thread while it
 *    unbinds: every pin that returned OK ran, once, on that thread (its
 *    pthread, not only its id); the others were refused with EINVAL.
 *    Every fourth round the thread unbinds only once a pin was accepted,
 *    so the race is run on one CPU too.
 *  - bind_churn: threads bind and unbind in a loop; the ids of the threads
 *    bound at any moment are distinct and the smallest free ones (so below
 *    workers + threads); a task each pins to itself runs on it.
 *
 * Worker counts 0 (bound threads only), 1, 2 and 8. A hang fails the test
 * at its timeout (the watchdog prints the schedulers); the waits in the
 * test's own code give up after DEADLINE with no progress (a hang, not a
 * slow machine: the whole of a round may take longer on a loaded one) and
 * say what was missing.
 * WEFT_SEED replays the random targets. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#include "wtest.h"


#define MS       ((uint64_t)1000000)
#define DEADLINE ((uint64_t)120 * 1000000000u)

static weft_sched *new_sched(unsigned workers)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    weft_sched *s = NULL;
    int rc = weft_sched_create(&s, &c);
    WT_ASSERT(rc == WEFT_OK, "create: %s", weft_err_name(rc));
    return s;
}

static int spawn_pinned(weft_sched *s, weft_fn fn, void *arg, int thread)
{
    weft_spawn_opts o = { .pinned = true, .thread = thread };
    return weft_spawn_ex(s, fn, arg, &o);
}

static pthread_t start_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    WT_ASSERT_EQ(pthread_create(&t, NULL, fn, arg), 0);
    return t;
}

static void nap_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static uint64_t h64(uint64_t x)   /* splitmix64's finalizer */
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdu;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53u;
    x ^= x >> 33;
    return x;
}

/* ---- pins_exactly_once ----------------------------------------------------- */

#define NBOUND 2
#define NPLAIN 2
#define NTASKSRC 4
#define NSLICES (NBOUND + NPLAIN + NTASKSRC)

struct once {
    weft_sched *s;
    unsigned W;
    int n;
    int ntargets;
    int targets[8 + NBOUND];   /* workers 0..W-1, then the bound threads' ids */
    unsigned char *tidx;       /* each task's target, an index into targets */
    atomic_uchar *runs;
    atomic_int done, refused, wrong, bind_failed;
    weft_event stop;           /* manual reset: the bound threads may leave */
    pthread_barrier_t bound, go;
    struct slice { struct once *o; int lo, hi, bound_slot; } slices[NSLICES];
};

static struct once *once_cur;

static void once_task(void *arg)
{
    struct once *o = once_cur;
    int i = (int)(uintptr_t)arg;
    if (weft_thread_id() != o->targets[o->tidx[i]])
        atomic_fetch_add(&o->wrong, 1);
    atomic_fetch_add(&o->runs[i], 1);
    atomic_fetch_add(&o->done, 1);
}

static void once_pin_slice(struct slice *sl)
{
    struct once *o = sl->o;
    for (int i = sl->lo; i < sl->hi; i++)
        if (spawn_pinned(o->s, once_task, (void *)(uintptr_t)i, o->targets[o->tidx[i]]) != WEFT_OK)
            atomic_fetch_add(&o->refused, 1);
}

static void *once_plain(void *arg)
{
    once_pin_slice(arg);
    return NULL;
}

static void once_from_task(void *arg)
{
    once_pin_slice(arg);
}

static void *once_bound(void *arg)
{
    struct slice *sl = arg;
    struct once *o = sl->o;
    /* The second bound thread does not help (when there are workers to run
     * the unpinned pinning tasks instead). */
    unsigned flags = sl->bound_slot == 1 && o->W > 0 ? WEFT_BIND_NO_HELP : 0;
    int rc = weft_sched_bind_ex(o->s, flags);
    if (rc != WEFT_OK)
        atomic_fetch_add(&o->bind_failed, 1);
    o->targets[o->W + (unsigned)sl->bound_slot] = weft_thread_id();
    pthread_barrier_wait(&o->bound);
    pthread_barrier_wait(&o->go);
    if (rc != WEFT_OK)
        return NULL;
    once_pin_slice(sl);
    for (unsigned k = 0; !weft_event_signalled(&o->stop); k++) {
        if (k % 2) {
            weft_pinned_wait_for(MS);
            weft_pinned_run(UINT64_MAX);
        } else {
            weft_event_wait_for(&o->stop, MS);
        }
    }
    weft_sched_unbind();
    return NULL;
}

WT_TEST(pin_stress, pins_exactly_once, .timeout = 900)
{
    uint64_t rng = wt_seed();
    int n = (int)wt_scaled(100000, 5000);
    WT_FOR_WORKERS(nw, 0, 1, 2, 8) {
        static struct once o;
        memset(&o, 0, sizeof o);
        once_cur = &o;
        o.W = nw;
        o.n = n;
        o.s = new_sched(o.W);
        o.ntargets = (int)o.W + NBOUND;
        for (unsigned w = 0; w < o.W; w++)
            o.targets[w] = (int)w;
        o.tidx = malloc((size_t)n);
        o.runs = calloc((size_t)n, sizeof *o.runs);
        WT_ASSERT(o.tidx && o.runs);
        for (int i = 0; i < n; i++)
            o.tidx[i] = (unsigned char)(wt_rand(&rng) % (uint64_t)o.ntargets);
        weft_event_init(&o.stop, true, false);
        pthread_barrier_init(&o.bound, NULL, NBOUND + 1);
        pthread_barrier_init(&o.go, NULL, NBOUND + 1);
        for (int sl = 0; sl < NSLICES; sl++)
            o.slices[sl] = (struct slice){ &o, (int)((int64_t)n * sl / NSLICES),
                                           (int)((int64_t)n * (sl + 1) / NSLICES), sl };
        fprintf(stderr, "pins_exactly_once: %d pins at %u workers\n", n, o.W);

        pthread_t th[NBOUND + NPLAIN];
        for (int b = 0; b < NBOUND; b++)
            th[b] = start_thread(once_bound, &o.slices[b]);
        pthread_barrier_wait(&o.bound);   /* every target is a current thread */
        pthread_barrier_wait(&o.go);
        WT_ASSERT_EQ(atomic_load(&o.bind_failed), 0);
        for (int p = 0; p < NPLAIN; p++)
            th[NBOUND + p] = start_thread(once_plain, &o.slices[NBOUND + p]);
        for (int t = 0; t < NTASKSRC; t++)
            WT_ASSERT_EQ(weft_spawn(o.s, once_from_task, &o.slices[NBOUND + NPLAIN + t]), WEFT_OK);

        /* Until every pin ran or was refused, or none did for DEADLINE. */
        uint64_t end = wt_now_ns() + DEADLINE;
        for (int seen = 0, now; (now = atomic_load(&o.done) + atomic_load(&o.refused)) < n && wt_now_ns() < end; ) {
            if (now != seen) {
                seen = now;
                end = wt_now_ns() + DEADLINE;
            }
            nap_ns(MS);
        }
        int done = atomic_load(&o.done), refused = atomic_load(&o.refused);
        if (done + refused < n) {
            int left[8 + NBOUND] = { 0 };
            for (int i = 0; i < n; i++)
                if (atomic_load(&o.runs[i]) == 0)
                    left[o.tidx[i]]++;
            for (int t = 0; t < o.ntargets; t++)
                fprintf(stderr, "  thread %d: %d pinned tasks not run\n", o.targets[t], left[t]);
        }
        /* Checked before the bound threads are told to leave: with tasks
         * still pinned to them, their unbind might never return. */
        WT_ASSERT(refused == 0, "%d of %d pins refused at %u workers (every target was bound)", refused, n, o.W);
        WT_ASSERT(done == n, "%d of %d pinned tasks ran, then none for %llu s at %u workers", done, n,
                  (unsigned long long)(DEADLINE / 1000000000u), o.W);
        weft_event_signal(&o.stop);
        for (int t = 0; t < NBOUND + NPLAIN; t++)
            WT_ASSERT_EQ(pthread_join(th[t], NULL), 0);
        if (o.W > 0)
            WT_ASSERT_EQ(weft_sched_wait_idle(o.s), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(o.s), WEFT_OK);
        for (int i = 0; i < n; i++)
            WT_ASSERT(atomic_load(&o.runs[i]) == 1, "pinned task %d ran %d times (%u workers)", i,
                      atomic_load(&o.runs[i]), o.W);
        WT_ASSERT(atomic_load(&o.wrong) == 0, "%d pinned tasks ran on a thread they did not name (%u workers)",
                  atomic_load(&o.wrong), o.W);
        weft_event_destroy(&o.stop);
        pthread_barrier_destroy(&o.bound);
        pthread_barrier_destroy(&o.go);
        free(o.tidx);
        free(o.runs);
    }
}

/* ---- frame_loop -------------------------------------------------------------
 *   input -> pre (main) -> work[0..7] (HIGH) -> upload (main) -> finish
 *   input -> side (LOW) ------------------------------------------^
 * pre and upload are pinned to the main thread. */

#define FW 8

struct frame;
struct fwork { struct frame *fr; int i; };

struct frame {
    int main_id;
    unsigned no_help;
    uint64_t f;
    uint64_t in, pre, a[FW], up, side;
    uint64_t *out;
    atomic_uint done_frames;
    atomic_int main_wrong, main_runs, unpinned_on_main;
    struct fwork work[FW];
};

static uint64_t work_value(uint64_t pre, int i)
{
    uint64_t a = pre + (uint64_t)i;
    for (int k = 0; k < 200; k++)
        a = h64(a);
    return a;
}

static void fr_unpinned_here(struct frame *fr)
{
    if (weft_thread_id() == fr->main_id)
        atomic_fetch_add(&fr->unpinned_on_main, 1);
}

static void fr_main_here(struct frame *fr)
{
    if (weft_thread_id() != fr->main_id)
        atomic_fetch_add(&fr->main_wrong, 1);
    atomic_fetch_add(&fr->main_runs, 1);
}

static void fr_input(void *p)  { struct frame *fr = p; fr_unpinned_here(fr); fr->in = h64(fr->f + 1); }
static void fr_pre(void *p)    { struct frame *fr = p; fr_main_here(fr); fr->pre = h64(fr->in ^ 0x1234u); }
static void fr_side(void *p)   { struct frame *fr = p; fr_unpinned_here(fr); fr->side = h64(fr->in * 3); }

static void fr_work(void *p)
{
    struct fwork *w = p;
    fr_unpinned_here(w->fr);
    w->fr->a[w->i] = work_value(w->fr->pre, w->i);
}

static void fr_upload(void *p)
{
    struct frame *fr = p;
    fr_main_here(fr);
    uint64_t sum = 0;
    for (int i = 0; i < FW; i++)
        sum += fr->a[i];
    fr->up = sum;
}

static void fr_finish(void *p)
{
    struct frame *fr = p;
    fr_unpinned_here(fr);
    fr->out[fr->f] = h64(fr->up ^ fr->side);
    atomic_store(&fr->done_frames, (unsigned)fr->f + 1);
}

static uint64_t frame_seq(uint64_t f)
{
    uint64_t in = h64(f + 1), pre = h64(in ^ 0x1234u), side = h64(in * 3), up = 0;
    for (int i = 0; i < FW; i++)
        up += work_value(pre, i);
    return h64(up ^ side);
}

static weft_task *must_add(weft_graph *g, weft_fn fn, void *arg)
{
    weft_task *t = weft_graph_add(g, fn, arg);
    WT_ASSERT(t != NULL);
    return t;
}

static void frame_case(unsigned W, unsigned flags, bool pump, uint64_t frames)
{
    fprintf(stderr, "frame_loop: %llu frames at %u workers, %s main thread, %s\n", (unsigned long long)frames, W,
            flags ? "NO_HELP" : "helping", pump ? "pumping wait_pinned/run_pinned" : "in weft_graph_wait");
    weft_sched *s = new_sched(W);
    static struct frame fr;
    memset(&fr, 0, sizeof fr);
    fr.no_help = flags;
    fr.out = calloc(frames, sizeof *fr.out);
    WT_ASSERT(fr.out != NULL);
    WT_ASSERT_EQ(weft_sched_bind_ex(s, flags), WEFT_OK);
    fr.main_id = weft_thread_id();
    WT_ASSERT(fr.main_id >= (int)W, "main thread id %d", fr.main_id);

    weft_graph *g = NULL;
    WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
    weft_task *input = must_add(g, fr_input, &fr), *pre = must_add(g, fr_pre, &fr),
              *up = must_add(g, fr_upload, &fr), *side = must_add(g, fr_side, &fr),
              *fin = must_add(g, fr_finish, &fr);
    WT_ASSERT_EQ(weft_task_precede(input, pre), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(input, side), WEFT_OK);
    for (int i = 0; i < FW; i++) {
        fr.work[i].fr = &fr;
        fr.work[i].i = i;
        weft_task *w = must_add(g, fr_work, &fr.work[i]);
        WT_ASSERT_EQ(weft_task_precede(pre, w), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(w, up), WEFT_OK);
        weft_task_set_priority(w, WEFT_PRIORITY_HIGH);
    }
    WT_ASSERT_EQ(weft_task_precede(up, fin), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(side, fin), WEFT_OK);
    weft_task_set_priority(side, WEFT_PRIORITY_LOW);
    WT_ASSERT_EQ(weft_task_set_pin(pre, fr.main_id), WEFT_OK);
    WT_ASSERT_EQ(weft_task_set_pin(up, fr.main_id), WEFT_OK);

    for (uint64_t f = 0; f < frames; f++) {
        fr.f = f;
        int rc = weft_graph_run(s, g);
        WT_ASSERT(rc == WEFT_OK, "frame %llu: run: %s", (unsigned long long)f, weft_err_name(rc));
        if (pump) {
            uint64_t end = wt_now_ns() + DEADLINE;
            while (atomic_load(&fr.done_frames) != f + 1) {
                WT_ASSERT(wt_now_ns() < end, "frame %llu not done after %llu s of pumping (%u workers)",
                          (unsigned long long)f, (unsigned long long)(DEADLINE / 1000000000u), W);
                weft_pinned_wait_for(MS);
                weft_pinned_run(UINT64_MAX);
            }
        }
        rc = weft_graph_wait(g);
        WT_ASSERT(rc == WEFT_OK, "frame %llu: wait: %s", (unsigned long long)f, weft_err_name(rc));
        uint64_t want = frame_seq(f);
        WT_ASSERT(fr.out[f] == want, "frame %llu: %016llx, sequential %016llx", (unsigned long long)f,
                  (unsigned long long)fr.out[f], (unsigned long long)want);
    }
    WT_ASSERT(atomic_load(&fr.main_wrong) == 0, "%d main-thread tasks ran elsewhere", atomic_load(&fr.main_wrong));
    WT_ASSERT_EQ(atomic_load(&fr.main_runs), 2 * (int)frames);
    if (flags & WEFT_BIND_NO_HELP)
        WT_ASSERT(atomic_load(&fr.unpinned_on_main) == 0, "the NO_HELP main thread ran %d unpinned tasks",
                  atomic_load(&fr.unpinned_on_main));
    WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), 0);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    free(fr.out);
}

WT_TEST(pin_stress, frame_loop, .timeout = 900)
{
    uint64_t frames = wt_scaled(1000, 50);
    WT_FOR_WORKERS(W, 0, 1, 2, 8) {
        frame_case(W, 0, false, frames);
        if (W == 0)   /* who runs unpinned tasks in a pump is not documented */
            continue;
        frame_case(W, 0, true, frames);
        frame_case(W, WEFT_BIND_NO_HELP, false, frames);
        frame_case(W, WEFT_BIND_NO_HELP, true, frames);
    }
}

/* ---- pins_racing_unbind ------------------------------------------------------ */

#define RPINNERS 2

struct race {
    weft_sched *s;
    pthread_t x_self;          /* the bound thread, as it saw itself */
    atomic_int x_id, x_ready, x_rc;
    int pumps;                 /* rounds of pumping before it unbinds */
    bool hold;                 /* pump until a pin was accepted (or the pinners gave up) */
    atomic_int pinners_done;
    atomic_long ok, ran, wrong, bad;
};

static void race_task(void *arg)
{
    struct race *r = arg;
    if (!pthread_equal(pthread_self(), r->x_self))
        atomic_fetch_add(&r->wrong, 1);
    atomic_fetch_add(&r->ran, 1);
}

static void *race_x(void *arg)
{
    struct race *r = arg;
    r->x_self = pthread_self();
    int rc = weft_sched_bind(r->s);
    atomic_store(&r->x_rc, rc);
    atomic_store(&r->x_id, weft_thread_id());
    atomic_store(&r->x_ready, 1);
    if (rc != WEFT_OK)
        return NULL;
    for (int k = 0; k < r->pumps; k++) {
        weft_pinned_run(UINT64_MAX);
        weft_pinned_wait_for(20000);
    }
    /* A held round unbinds only once a pin was accepted, so that every
     * run has rounds where pins race the unbind: on one CPU this thread
     * otherwise often unbound before a pinner ran at all. */
    while (r->hold && atomic_load(&r->ok) == 0 && atomic_load(&r->pinners_done) < RPINNERS) {
        weft_pinned_run(UINT64_MAX);
        weft_pinned_wait_for(20000);
    }
    weft_sched_unbind();
    return NULL;
}

static void *race_pinner(void *arg)
{
    struct race *r = arg;
    while (!atomic_load(&r->x_ready))
        sched_yield();
    int id = atomic_load(&r->x_id);
    for (int k = 0; k < 1000000; k++) {
        int rc = spawn_pinned(r->s, race_task, r, id);
        if (rc == WEFT_OK) {
            atomic_fetch_add(&r->ok, 1);
        } else {
            if (rc != WEFT_EINVAL)
                atomic_fetch_add(&r->bad, 1);
            break;
        }
    }
    atomic_fetch_add(&r->pinners_done, 1);
    return NULL;
}

WT_TEST(pin_stress, pins_racing_unbind, .timeout = 900)
{
    uint64_t rng = wt_seed() ^ 0x9e3779b97f4a7c15u;
    uint64_t rounds = wt_scaled(2000, 100);
    WT_FOR_WORKERS(W, 0, 1, 2) {
        fprintf(stderr, "pins_racing_unbind: %llu rounds at %u workers\n", (unsigned long long)rounds, W);
        weft_sched *s = new_sched(W);
        static struct race r;
        long ok = 0;
        for (uint64_t round = 0; round < rounds; round++) {
            memset(&r, 0, sizeof r);
            r.s = s;
            r.pumps = (int)(wt_rand(&rng) % 4);
            r.hold = round % 4 == 0;
            atomic_store(&r.x_id, -2);
            pthread_t x = start_thread(race_x, &r), p[RPINNERS];
            for (int i = 0; i < RPINNERS; i++)
                p[i] = start_thread(race_pinner, &r);
            WT_ASSERT_EQ(pthread_join(x, NULL), 0);
            for (int i = 0; i < RPINNERS; i++)
                WT_ASSERT_EQ(pthread_join(p[i], NULL), 0);
            WT_ASSERT(atomic_load(&r.x_rc) == WEFT_OK, "bind: %s", weft_err_name(atomic_load(&r.x_rc)));
            WT_ASSERT(atomic_load(&r.x_id) >= (int)W, "bound id %d", atomic_load(&r.x_id));
            WT_ASSERT(atomic_load(&r.bad) == 0, "a pin racing unbind returned neither OK nor EINVAL");
            WT_ASSERT(atomic_load(&r.ran) == atomic_load(&r.ok),
                      "round %llu: %ld pins returned OK, %ld ran by the time unbind returned (%u workers)",
                      (unsigned long long)round, atomic_load(&r.ok), atomic_load(&r.ran), W);
            WT_ASSERT(atomic_load(&r.wrong) == 0, "round %llu: %ld pinned tasks ran on another thread",
                      (unsigned long long)round, atomic_load(&r.wrong));
            ok += atomic_load(&r.ok);
        }
        fprintf(stderr, "  %ld pins accepted in all, each ran once on its thread\n", ok);
        WT_ASSERT(ok > 0, "no pin was accepted in %llu rounds at %u workers: the race was never run",
                  (unsigned long long)rounds, W);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        WT_ASSERT(atomic_load(&r.ran) == atomic_load(&r.ok), "destroy ran a pinned task left queued");
    }
}

/* ---- bind_churn ----------------------------------------------------------------- */

#define CHURNERS 4

struct churn {
    weft_sched *s;
    unsigned W;
    uint64_t rounds;
    atomic_int owner[CHURNERS];   /* id - W: 1 + the churner holding it, or 0 */
    atomic_long dup, out_of_range, bind_failed, pin_bad, ran_wrong;
    atomic_int inside, most_inside;  /* bound at once, now and at most */
};

struct churner {
    struct churn *c;
    int me;
    pthread_t self;
    atomic_int runs;
};

static void churn_task(void *arg)
{
    struct churner *ch = arg;
    if (!pthread_equal(pthread_self(), ch->self))
        atomic_fetch_add(&ch->c->ran_wrong, 1);
    atomic_fetch_add(&ch->runs, 1);
}

static void *churn_main(void *arg)
{
    struct churner *ch = arg;
    struct churn *c = ch->c;
    ch->self = pthread_self();
    for (uint64_t k = 0; k < c->rounds; k++) {
        /* NO_HELP now and then, where workers exist to run other work. */
        unsigned flags = c->W > 0 && k % 3 == 2 ? WEFT_BIND_NO_HELP : 0;
        if (weft_sched_bind_ex(c->s, flags) != WEFT_OK) {
            atomic_fetch_add(&c->bind_failed, 1);
            continue;
        }
        int id = weft_thread_id();
        int slot = id - (int)c->W;
        int inside = atomic_fetch_add(&c->inside, 1) + 1, most = atomic_load(&c->most_inside);
        while (inside > most && !atomic_compare_exchange_weak(&c->most_inside, &most, inside)) {
        }
        if (slot < 0 || slot >= CHURNERS) {
            atomic_fetch_add(&c->out_of_range, 1);
        } else {
            int none = 0;
            if (!atomic_compare_exchange_strong(&c->owner[slot], &none, ch->me + 1))
                atomic_fetch_add(&c->dup, 1);
        }
        int before = atomic_load(&ch->runs);
        if (spawn_pinned(c->s, churn_task, ch, id) != WEFT_OK || weft_pinned_run(UINT64_MAX) != 1 ||
            atomic_load(&ch->runs) != before + 1)
            atomic_fetch_add(&c->pin_bad, 1);
        for (int y = 0; y < 3; y++)   /* stay bound a while: overlap the others */
            sched_yield();
        atomic_fetch_sub(&c->inside, 1);
        if (slot >= 0 && slot < CHURNERS) {
            int mine = ch->me + 1;
            atomic_compare_exchange_strong(&c->owner[slot], &mine, 0);
        }
        weft_sched_unbind();
        if (weft_thread_id() != -1)
            atomic_fetch_add(&c->out_of_range, 1);
    }
    return NULL;
}

WT_TEST(pin_stress, bind_churn, .timeout = 900)
{
    static const unsigned ws[] = { 0, 2 };
    for (size_t k = 0; k < 2; k++) {
        static struct churn c;
        memset(&c, 0, sizeof c);
        c.W = ws[k];
        c.rounds = wt_scaled(5000, 200);
        c.s = new_sched(c.W);
        fprintf(stderr, "bind_churn: %d threads x %llu binds at %u workers\n", CHURNERS,
                (unsigned long long)c.rounds, c.W);
        static struct churner ch[CHURNERS];
        pthread_t th[CHURNERS];
        for (int i = 0; i < CHURNERS; i++) {
            memset(&ch[i], 0, sizeof ch[i]);
            ch[i].c = &c;
            ch[i].me = i;
            th[i] = start_thread(churn_main, &ch[i]);
        }
        for (int i = 0; i < CHURNERS; i++)
            WT_ASSERT_EQ(pthread_join(th[i], NULL), 0);
        WT_ASSERT_EQ(atomic_load(&c.bind_failed), 0);
        fprintf(stderr, "  at most %d threads bound at once\n", atomic_load(&c.most_inside));
        WT_ASSERT(atomic_load(&c.most_inside) >= 2, "the threads never overlapped: the test checked nothing");
        WT_ASSERT(atomic_load(&c.out_of_range) == 0, "%ld ids outside [W, W + %d) or not -1 after unbind",
                  atomic_load(&c.out_of_range), CHURNERS);
        WT_ASSERT(atomic_load(&c.dup) == 0, "%ld times two bound threads held the same id", atomic_load(&c.dup));
        WT_ASSERT(atomic_load(&c.pin_bad) == 0, "%ld self-pins refused or not run by run_pinned",
                  atomic_load(&c.pin_bad));
        WT_ASSERT(atomic_load(&c.ran_wrong) == 0, "%ld self-pinned tasks ran on another thread",
                  atomic_load(&c.ran_wrong));
        WT_ASSERT_EQ(weft_sched_destroy(c.s), WEFT_OK);
    }
}
