/* frame_jobs: a game-style frame loop on weft, with main-thread jobs and
 * priorities.
 *
 * The main thread binds to the scheduler and runs the loop. Each frame runs
 * one task graph, built once and run again every frame:
 *
 *   input -> physics -> animation -+-> bounds ----+-> gpu upload (main thread)
 *                                  +-> draw list -+
 *   audio
 *
 * - The critical path, input to draw list, is HIGH priority: a worker takes
 *   it before any other queued work. physics and animation are
 *   weft_parallel_for loops, bounds a weft_parallel_reduce.
 * - gpu upload stands for calls that must come from the thread that made
 *   the graphics context: weft_task_set_pin pins it to the main thread,
 *   which runs it while it waits in weft_graph_wait. No channel, no event,
 *   no hand-made pump: the main thread's waits in weft are the pump (a loop
 *   that does not wait in weft each frame calls weft_pinned_run instead).
 * - audio is a NORMAL task of the same graph.
 * - streaming is background work: each frame spawns one LOW job
 *   (weft_spawn_ex) that loads a block of a made-up asset. It runs when
 *   nothing more urgent is queued, maybe frames later.
 *
 * Each frame also runs as plain calls on the main thread right after (so
 * both see the same load): the work is per element, so every frame's
 * checksum, every streamed block and the final state must be
 * bit-identical, or it prints WRONG and exits 1.
 *
 *   frame_jobs [-t FILE] [frames [workers]]     defaults: 200, one per CPU
 *
 * -t FILE traces frames 10 to 12 (the last three if there are fewer than
 * 13): weft_trace_start before frame 10, weft_trace_stop after frame 12,
 * then the trace is written to FILE as Chrome trace-event JSON (open it in
 * ui.perfetto.dev, or draw it with tools/trace_plot.py). The sequential
 * run of each frame shows in it as a zone of the main thread.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft.h>

enum { BODIES = 65536, SUBSTEPS = 4, SKELETONS = 1024, BONES = 24, SAMPLES = 1024,
       BLOCK_WORDS = 4096 };
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
    uint64_t audio_sum;
    uint64_t *hash;                       /* a checksum per frame */
    uint64_t *block;                      /* streaming: a checksum per loaded block */
    int upload_thread;                    /* where gpu upload last ran */
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

/* audio: a block of tone. streaming: a block of a made-up asset. */
static void audio_mix(void *arg)
{
    world *w = arg;
    double step = TAU * (220 + 20 * (w->frame % 12)) / 48000;
    for (int i = 0; i < SAMPLES; i++) {
        w->audio_sum = mix(w->audio_sum, (uint16_t)(int16_t)(16383 * sin(w->phase)));
        w->phase = fmod(w->phase + step, TAU);
    }
}

static uint64_t load_block(unsigned frame)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (uint64_t i = 0; i < BLOCK_WORDS; i++)
        h = mix(h, ((uint64_t)frame * BLOCK_WORDS + i) * 0x9e3779b97f4a7c15u);
    return h;
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

/* Pinned to the main thread: the only thread that may talk to the GPU. */
static void gpu_upload(void *arg)
{
    world *w = arg;
    w->upload_thread = weft_thread_id();
    submit(w);
}

typedef struct stream_job {
    world *w;
    unsigned frame;
} stream_job;

static void stream(void *arg)
{
    stream_job *job = arg;
    job->w->block[job->frame] = load_block(job->frame);
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
    if (!w || !(w->hash = calloc(frames, sizeof *w->hash)) || !(w->block = calloc(frames, sizeof *w->block)))
        check(WEFT_ENOMEM, "world");
    w->s = s;
    for (size_t i = 0; i < BODIES; i++) {   /* a 256 x 256 grid, falling */
        w->pos[i] = (vec3){ (double)(i % 256) - 128, 5 + (double)(i % 7), (double)(i / 256) - 128 };
        w->vel[i] = (vec3){ (double)(i % 5) - 2, 0, (double)(i % 3) - 1 };
    }
    return w;
}

/* -t: the trace of frames first..last, written to path. */
static void write_trace(weft_sched *s, const char *path, unsigned first, unsigned last)
{
    FILE *out = fopen(path, "w");
    if (!out) {
        perror(path);
        exit(1);
    }
    check(weft_trace_write(s, out), "trace");
    bool bad = ferror(out);
    if (fclose(out) != 0 || bad) {
        perror(path);
        exit(1);
    }
    printf("  frames %u to %u traced: %s\n", first, last, path);
}

int main(int argc, char **argv)
{
    const char *trace = NULL;
    for (int opt; (opt = getopt(argc, argv, "t:")) != -1;) {
        if (opt != 't') {
            fputs("usage: frame_jobs [-t FILE.json] [frames [workers]]\n", stderr);
            return 2;
        }
        trace = optarg;
    }
    argc -= optind - 1, argv += optind - 1;   /* the positional arguments, as before */
    unsigned frames = argc > 1 ? (unsigned)atoi(argv[1]) : 200;
    frames = frames ? frames : 1;
    unsigned trace_first = frames >= 13 ? 10 : frames > 3 ? frames - 3 : 0;
    unsigned trace_last = trace_first + 2 < frames ? trace_first + 2 : frames - 1;
    weft_config cfg;
    weft_config_init(&cfg);
    if (argc > 2)
        cfg.workers = atoi(argv[2]) > 0 ? (unsigned)atoi(argv[2]) : WEFT_WORKERS_NONE;
    weft_sched *s;
    check(weft_sched_create(&s, &cfg), "scheduler");
    /* The main thread joins the scheduler: while it waits in weft it helps
     * run the frame (with no workers it runs all of it), and it runs the
     * tasks pinned to it. */
    check(weft_sched_bind(s), "bind");
    int main_thread = weft_thread_id();

    world *w = world_new(s, frames), *ref = world_new(s, frames);
    uint64_t *tw = calloc(frames, sizeof *tw), *ts = calloc(frames, sizeof *ts);
    stream_job *jobs = calloc(frames, sizeof *jobs);
    if (!tw || !ts || !jobs)
        check(WEFT_ENOMEM, "times");

    /* The graph, built once. */
    weft_graph *g;
    check(weft_graph_create(&g), "graph");
    weft_fn fns[] = { input, physics_task, animation_task, bounds_task, draw_list, gpu_upload, audio_mix };
    static const char *names[] = { "input", "physics", "animation", "bounds", "draw list", "gpu upload", "audio" };
    enum { INPUT, PHYSICS, ANIMATION, BOUNDS, DRAW_LIST, UPLOAD, AUDIO, NTASKS };
    weft_task *t[NTASKS];
    for (int i = 0; i < NTASKS; i++) {   /* names show in traces and stall reports */
        check(weft_graph_add_task(g, fns[i], w, &t[i]), "graph");
        weft_task_set_name(t[i], names[i]);
    }
    static const int edges[][2] = { { INPUT, PHYSICS }, { PHYSICS, ANIMATION }, { ANIMATION, BOUNDS },
                                    { ANIMATION, DRAW_LIST }, { BOUNDS, UPLOAD }, { DRAW_LIST, UPLOAD } };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        check(weft_task_precede(t[edges[i][0]], t[edges[i][1]]), "graph");
    for (int i = INPUT; i <= DRAW_LIST; i++)   /* the critical path goes first */
        weft_task_set_priority(t[i], WEFT_PRIORITY_HIGH);
    check(weft_task_set_pin(t[UPLOAD], main_thread), "pin");

    const weft_spawn_opts background = { .priority = WEFT_PRIORITY_LOW, .name = "streaming" };
    for (unsigned f = 0; f < frames; f++) {
        if (trace && f == trace_first)
            check(weft_trace_start(s, (size_t)1 << 16), "trace");
        uint64_t t0 = now_ns();
        w->frame = f;
        jobs[f] = (stream_job){ w, f };
        check(weft_spawn_ex(s, stream, &jobs[f], &background), "stream");
        check(weft_graph_run(s, g), "run");
        check(weft_graph_wait(g), "wait");   /* runs gpu upload here, on this thread */
        w->hash[f] = mix(w->hash[f], w->audio_sum);
        tw[f] = now_ns() - t0;
        if (w->upload_thread != main_thread)
            check(WEFT_EINVAL, "gpu upload ran off the main thread");

        t0 = now_ns();   /* the same frame as plain calls, under the same load */
        weft_trace_begin("sequential frame");
        ref->frame = f;
        ref->block[f] = load_block(f);
        input(ref);
        for (int k = 0; k < SUBSTEPS; k++)
            physics(0, BODIES, ref);
        animate(0, SKELETONS, ref);
        ref->bounds = empty_box;
        bounds_chunk(0, BODIES, &ref->bounds, ref);
        draw_list(ref);
        submit(ref);
        audio_mix(ref);
        ref->hash[f] = mix(ref->hash[f], ref->audio_sum);
        ts[f] = now_ns() - t0;
        weft_trace_end();
        if (trace && f == trace_last)
            check(weft_trace_stop(s), "trace");
    }
    check(weft_sched_wait_idle(s), "streaming");   /* the last blocks may still be loading */

    unsigned bad = 0;
    while (bad < frames && w->hash[bad] == ref->hash[bad] && w->block[bad] == ref->block[bad])
        bad++;
    int same = bad == frames && !memcmp(w->pos, ref->pos, sizeof w->pos) &&
               !memcmp(w->vel, ref->vel, sizeof w->vel) && !memcmp(w->joint, ref->joint, sizeof w->joint);
    printf("frame_jobs: %u frames of %d bodies x %d substeps, %d skeletons x %d bones, "
           "gpu upload on the main thread, streaming in the background\n", frames, BODIES, SUBSTEPS,
           SKELETONS, BONES);
    printf("  ms per frame            min   median      max\n");
    char what[32];
    snprintf(what, sizeof what, "weft, %u workers", weft_sched_workers(s));
    double sseq = report("sequential", ts, frames), sw = report(what, tw, frames);
    printf("  speedup of the median: %.2fx, frames spread %.0f%%; the last frame drew %zu of %d skeletons\n",
           (double)ts[frames / 2] / (double)tw[frames / 2], sseq > sw ? sseq : sw, w->ndraw, SKELETONS);
    if (same)
        printf("  every frame's checksum, every streamed block and the final state match the sequential run: ok\n");
    else
        printf("  WRONG: differs from the sequential run (first frame: %u of %u)\n", bad, frames);
    if (trace)
        write_trace(s, trace, trace_first, trace_last);

    check(weft_graph_destroy(g), "graph");
    weft_sched_unbind();
    check(weft_sched_destroy(s), "destroy");
    free(w->hash), free(w->block), free(ref->hash), free(ref->block), free(w), free(ref);
    free(tw), free(ts), free(jobs);
    return same ? 0 : 1;
}
