/* frame_jobs: a game-style frame loop on weft.
 *
 * Each frame runs one task graph, built once and run again every frame:
 *
 *   input -> physics -> animation -+-> bounds ----+-> submit
 *                                  +-> draw list -+
 *
 * physics and animation are weft_parallel_for loops, bounds is a
 * weft_parallel_reduce: the task that calls one runs chunks itself, and its
 * fiber suspends only while other workers finish theirs. The frame loop is
 * a task too. Two long-lived fibers, audio and
 * streaming, sleep on an event between frames: the loop signals each once
 * per frame, they report on a wait group, and at the end they are told to
 * quit the same way. Each frame also runs as plain calls on one thread right
 * after (so both see the same load): the work is per element, so every
 * frame's checksum and the final state must be bit-identical, or it prints
 * WRONG and exits 1.
 *
 *   frame_jobs [frames [workers]]     defaults: 200, one per CPU
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

enum { BODIES = 65536, SUBSTEPS = 4, SKELETONS = 1024, BONES = 24, SAMPLES = 1024,
       BLOCK_WORDS = 4096, SERVICES = 2 };
#define DT (1.0 / 60 / SUBSTEPS)
#define TAU 6.283185307179586

typedef struct vec3 { double x, y, z; } vec3;
typedef struct box { vec3 lo, hi; } box;
static const box empty_box = { { INFINITY, INFINITY, INFINITY }, { -INFINITY, -INFINITY, -INFINITY } };

typedef struct world {
    weft_sched *s;
    unsigned frame;
    vec3 wind, camera;                    /* input */
    vec3 pos[BODIES], vel[BODIES];        /* physics */
    vec3 joint[SKELETONS][BONES];         /* animation */
    box bounds;
    uint64_t key[SKELETONS];              /* draw list: depth << 32 | skeleton */
    size_t ndraw;
    double phase;                         /* audio */
    uint64_t audio_sum, stream_hash;      /* audio, streaming */
    uint64_t *hash;                       /* a checksum per frame */
} world;

static void check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "frame_jobs: %s: %s\n", what, weft_strerror(rc));
        exit(1);
    }
}

static uint64_t mix(uint64_t h, uint64_t v)   /* FNV-1a, a word at a time */
{
    return (h ^ v) * 0x100000001b3u;
}

/* ---- the frame's work: graph tasks and loop bodies, also called directly
 * by the sequential run */

static void input(void *arg)
{
    world *w = arg;
    double t = w->frame / 60.0;
    w->wind = (vec3){ 2 * sin(0.7 * t), 0, 2 * cos(0.3 * t) };
    w->camera = (vec3){ 80 * cos(0.1 * t), 20, 80 * sin(0.1 * t) };
}

static void physics(size_t b, size_t e, void *arg)   /* one substep */
{
    world *w = arg;
    for (size_t i = b; i < e; i++) {
        vec3 *p = &w->pos[i], *v = &w->vel[i];
        v->x += (w->wind.x - 0.1 * v->x) * DT;
        v->y += (-9.81 - 0.1 * v->y) * DT;
        v->z += (w->wind.z - 0.1 * v->z) * DT;
        *p = (vec3){ p->x + v->x * DT, p->y + v->y * DT, p->z + v->z * DT };
        if (p->y < 0) {   /* bounce off the ground, losing a fifth */
            p->y = -p->y;
            v->y = -0.8 * v->y;
        }
    }
}

static void animate(size_t b, size_t e, void *arg)   /* a bone chain on a body */
{
    world *w = arg;
    double t = w->frame / 60.0;
    for (size_t j = b; j < e; j++) {
        vec3 q = w->pos[j * (BODIES / SKELETONS)];
        double a = 0;
        for (int k = 0; k < BONES; k++) {
            a += 0.4 * sin(t * (1 + 0.1 * (double)(j % 7)) + 0.5 * k);
            q = (vec3){ q.x + 0.3 * cos(a), q.y + 0.3 * sin(a), q.z + 0.05 };
            w->joint[j][k] = q;
        }
    }
}

#define MIN(a, b) ((a) < (b) ? (a) : (b))   /* no NaNs here: cheaper than fmin */
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static void bounds_combine(void *into, const void *from, void *arg)
{
    (void)arg;
    box *a = into;
    const box *b = from;
    a->lo = (vec3){ MIN(a->lo.x, b->lo.x), MIN(a->lo.y, b->lo.y), MIN(a->lo.z, b->lo.z) };
    a->hi = (vec3){ MAX(a->hi.x, b->hi.x), MAX(a->hi.y, b->hi.y), MAX(a->hi.z, b->hi.z) };
}

static void bounds_chunk(size_t b, size_t e, void *partial, void *arg)
{
    world *w = arg;
    for (size_t i = b; i < e; i++)
        bounds_combine(partial, &(box){ w->pos[i], w->pos[i] }, NULL);
}

static int by_value(const void *a, const void *b)   /* for qsort, on uint64_t */
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The skeletons in front of the camera (which looks at the origin),
 * nearest first. */
static void draw_list(void *arg)
{
    world *w = arg;
    vec3 c = w->camera;
    double len = sqrt(c.x * c.x + c.y * c.y + c.z * c.z);
    w->ndraw = 0;
    for (size_t j = 0; j < SKELETONS; j++) {
        vec3 h = w->joint[j][BONES - 1];
        double depth = -((h.x - c.x) * c.x + (h.y - c.y) * c.y + (h.z - c.z) * c.z) / len;
        if (depth > 0.1 && depth < 1000)
            w->key[w->ndraw++] = (uint64_t)(depth * 1024) << 32 | j;
    }
    qsort(w->key, w->ndraw, sizeof *w->key, by_value);
}

static void submit(void *arg)
{
    world *w = arg;
    uint64_t h = mix(0xcbf29ce484222325u, w->ndraw), u;
    for (size_t i = 0; i < w->ndraw; i++)
        h = mix(h, w->key[i]);
    for (int i = 0; i < 6; i++) {
        memcpy(&u, &(&w->bounds.lo.x)[i], sizeof u);
        h = mix(h, u);
    }
    w->hash[w->frame] = h;
}

/* The long-lived fibers' work: a block of tone, a block of "asset". */
static void audio_mix(world *w)
{
    double step = TAU * (220 + 20 * (w->frame % 12)) / 48000;
    for (int i = 0; i < SAMPLES; i++) {
        w->audio_sum = mix(w->audio_sum, (uint16_t)(int16_t)(16383 * sin(w->phase)));
        w->phase = fmod(w->phase + step, TAU);
    }
}

static void stream_block(world *w)   /* checksums the frame's block of a made-up asset */
{
    for (uint64_t i = 0; i < BLOCK_WORDS; i++)
        w->stream_hash = mix(w->stream_hash, ((uint64_t)w->frame * BLOCK_WORDS + i) * 0x9e3779b97f4a7c15u);
}

/* ---- on weft ---- */

static void physics_task(void *arg)
{
    world *w = arg;
    for (int k = 0; k < SUBSTEPS; k++)
        check(weft_parallel_for(w->s, 0, BODIES, 0, physics, w), "physics");
}

static void animation_task(void *arg)
{
    check(weft_parallel_for(((world *)arg)->s, 0, SKELETONS, 0, animate, arg), "animation");
}

static void bounds_task(void *arg)
{
    world *w = arg;
    /* 16 chunks, so the partials (a cache line per chunk) fit in the 2 KiB
     * weft keeps on the stack and the reduction never calls the
     * allocator; grain 0 would make about 1024 chunks, whose 64 KiB of
     * partials come from a scratch block the scheduler allocates on the
     * first frame and reuses in every frame after. */
    check(weft_parallel_reduce(w->s, 0, BODIES, BODIES / 16, &w->bounds, sizeof w->bounds,
                               &empty_box, bounds_chunk, bounds_combine, w), "bounds");
}

typedef struct service {
    void (*work)(world *w);
    world *w;
    weft_waitgroup *done;   /* one done() per round, and one on the way out */
    weft_event wake;        /* auto reset: one signal, one round */
    int quit;               /* set before the last signal */
} service;

static void service_main(void *arg)
{
    service *sv = arg;
    for (;;) {
        check(weft_event_wait(&sv->wake), "service");   /* the fiber sleeps here */
        if (sv->quit)
            break;
        sv->work(sv->w);
        weft_waitgroup_done(sv->done);
    }
    weft_waitgroup_done(sv->done);   /* the last touch of sv */
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Prints ms per frame; returns how far the middle half of the frames
 * spreads around the median: (third quartile - first quartile) / median,
 * in percent. */
static double report(const char *what, uint64_t *t, unsigned n)
{
    qsort(t, n, sizeof *t, by_value);
    printf("  %-18s %8.3f %8.3f %8.3f\n", what, t[0] * 1e-6, t[n / 2] * 1e-6, t[n - 1] * 1e-6);
    return 100.0 * (double)(t[3 * n / 4] - t[n / 4]) / (double)(t[n / 2] ? t[n / 2] : 1);
}

static world *world_new(weft_sched *s, unsigned frames)
{
    world *w = calloc(1, sizeof *w);
    if (!w || !(w->hash = calloc(frames, sizeof *w->hash)))
        check(WEFT_ENOMEM, "world");
    w->s = s;
    for (size_t i = 0; i < BODIES; i++) {   /* a 256 x 256 grid, falling */
        w->pos[i] = (vec3){ (double)(i % 256) - 128, 5 + (double)(i % 7), (double)(i / 256) - 128 };
        w->vel[i] = (vec3){ (double)(i % 5) - 2, 0, (double)(i % 3) - 1 };
    }
    return w;
}

typedef struct game {
    world *w, *ref;       /* on weft, and the sequential twin */
    weft_graph *g;
    unsigned frames;
    uint64_t *tw, *ts;    /* ns per frame: weft, sequential */
} game;

/* The frame loop, itself a task: it runs the graph and waits for it (its
 * fiber suspends and its worker runs the graph's tasks), and owns the
 * long-lived fibers from start to shutdown. */
static void frame_loop(void *arg)
{
    game *gm = arg;
    world *w = gm->w, *ref = gm->ref;
    weft_waitgroup done;
    weft_waitgroup_init(&done, 0);
    service sv[SERVICES] = { { .work = audio_mix, .w = w, .done = &done },
                             { .work = stream_block, .w = w, .done = &done } };
    for (int i = 0; i < SERVICES; i++) {
        weft_event_init(&sv[i].wake, false, false);
        check(weft_spawn(w->s, service_main, &sv[i]), "spawn");
    }
    for (unsigned f = 0; f < gm->frames; f++) {
        uint64_t t0 = now_ns();
        w->frame = f;
        weft_waitgroup_add(&done, SERVICES);
        for (int i = 0; i < SERVICES; i++)
            weft_event_signal(&sv[i].wake);
        check(weft_graph_run(w->s, gm->g), "run");
        check(weft_graph_wait(gm->g), "wait");
        check(weft_waitgroup_wait(&done), "services");
        w->hash[f] = mix(mix(w->hash[f], w->audio_sum), w->stream_hash);
        gm->tw[f] = now_ns() - t0;

        t0 = now_ns();   /* the same frame as plain calls, under the same load */
        ref->frame = f;
        audio_mix(ref);
        stream_block(ref);
        input(ref);
        for (int k = 0; k < SUBSTEPS; k++)
            physics(0, BODIES, ref);
        animate(0, SKELETONS, ref);
        ref->bounds = empty_box;
        bounds_chunk(0, BODIES, &ref->bounds, ref);
        draw_list(ref);
        submit(ref);
        ref->hash[f] = mix(mix(ref->hash[f], ref->audio_sum), ref->stream_hash);
        gm->ts[f] = now_ns() - t0;
    }
    weft_waitgroup_add(&done, SERVICES);   /* the fibers' last round: quit */
    for (int i = 0; i < SERVICES; i++) {
        sv[i].quit = 1;
        weft_event_signal(&sv[i].wake);
    }
    check(weft_waitgroup_wait(&done), "shutdown");
    for (int i = 0; i < SERVICES; i++)
        weft_event_destroy(&sv[i].wake);
    weft_waitgroup_destroy(&done);
}

int main(int argc, char **argv)
{
    unsigned frames = argc > 1 ? (unsigned)atoi(argv[1]) : 200;
    weft_config cfg;
    weft_config_init(&cfg);
    if (argc > 2)
        cfg.workers = (unsigned)atoi(argv[2]);
    weft_sched *s;
    check(weft_sched_create(&s, &cfg), "scheduler");
    if (cfg.workers == 0)
        check(weft_sched_bind(s), "bind");   /* no workers: this thread runs the tasks */
    frames = frames ? frames : 1;
    game gm = { world_new(s, frames), world_new(s, frames), NULL, frames,
                calloc(frames, sizeof *gm.tw), calloc(frames, sizeof *gm.ts) };
    if (!gm.tw || !gm.ts)
        check(WEFT_ENOMEM, "times");

    /* The graph, built once. */
    check(weft_graph_create(&gm.g), "graph");
    weft_fn fns[] = { input, physics_task, animation_task, bounds_task, draw_list, submit };
    weft_task *t[6];
    for (int i = 0; i < 6; i++)
        check(weft_graph_add_task(gm.g, fns[i], gm.w, &t[i]), "graph");
    static const int edges[][2] = { { 0, 1 }, { 1, 2 }, { 2, 3 }, { 2, 4 }, { 3, 5 }, { 4, 5 } };
    for (int i = 0; i < 6; i++)
        check(weft_task_precede(t[edges[i][0]], t[edges[i][1]]), "graph");

    check(weft_spawn(s, frame_loop, &gm), "spawn");
    check(weft_wait_idle(s), "wait");   /* the loop, and the fibers it shut down */

    world *w = gm.w, *ref = gm.ref;
    unsigned bad = 0;
    while (bad < frames && w->hash[bad] == ref->hash[bad])
        bad++;
    int same = bad == frames && !memcmp(w->pos, ref->pos, sizeof w->pos) &&
               !memcmp(w->vel, ref->vel, sizeof w->vel) && !memcmp(w->joint, ref->joint, sizeof w->joint);
    printf("frame_jobs: %u frames of %d bodies x %d substeps, %d skeletons x %d bones, "
           "audio and streaming fibers\n", frames, BODIES, SUBSTEPS, SKELETONS, BONES);
    printf("  ms per frame            min   median      max\n");
    char what[32];
    snprintf(what, sizeof what, "weft, %u workers", weft_sched_workers(s));
    double sseq = report("sequential", gm.ts, frames), sw = report(what, gm.tw, frames);
    printf("  speedup of the median: %.2fx, frames spread %.0f%%; the last frame drew %zu of %d skeletons\n",
           (double)gm.ts[frames / 2] / (double)gm.tw[frames / 2], sseq > sw ? sseq : sw, w->ndraw,
           SKELETONS);
    if (same)
        printf("  every frame's checksum and the final state match the sequential run: ok\n");
    else
        printf("  WRONG: differs from the sequential run (first frame: %u of %u)\n", bad, frames);

    check(weft_graph_destroy(gm.g), "graph");
    if (cfg.workers == 0)
        weft_sched_unbind();
    check(weft_sched_destroy(s), "destroy");
    free(w->hash), free(ref->hash), free(w), free(ref), free(gm.tw), free(gm.ts);
    return same ? 0 : 1;
}
