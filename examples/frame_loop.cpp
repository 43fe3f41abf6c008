/* frame_loop: a game-style frame loop in C++ on weft.hpp: a graph of jobs
 * built once and run every frame, a job pinned to the main thread, and
 * background work at low priority. (frame_jobs.c is the same idea in C.)
 *
 * The main thread binds to the scheduler (weft::bind_guard) and runs the
 * loop. Each frame's graph:
 *
 *   input -> physics -> +-> bounds ----+-> present (main thread)
 *                       +-> draw list -+
 *   audio
 *
 * - Tasks are lambdas capturing the world by reference; physics is a
 *   weft::parallel_for over the bodies, bounds a weft::parallel_reduce.
 * - present stands for calls that must come from the thread that owns the
 *   window: task::pin(main thread) makes the main thread run it while it
 *   waits in graph::wait(); no queue of its own is needed.
 * - The critical path is HIGH priority; each frame also spawns one LOW
 *   streaming job (spawn_options), which runs when nothing more urgent is
 *   queued, maybe frames later.
 * - Errors are codes (std::error_code): check() prints one and exits.
 *
 * Each frame is also computed by plain calls on the main thread: every
 * frame's checksum and every streamed block must match bit for bit, or it
 * prints WRONG and exits 1.
 *
 *   frame_loop [frames [workers]]     defaults: 120, one per CPU (0: none)
 */
#include <weft.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr std::size_t bodies = 1 << 15;
constexpr int substeps = 4;
constexpr double dt = 1.0 / 60 / substeps;
constexpr double tau = 6.283185307179586;

struct box {
    double lo[3] = {INFINITY, INFINITY, INFINITY};
    double hi[3] = {-INFINITY, -INFINITY, -INFINITY};
};

box merge(box a, const box &b)
{
    for (int k = 0; k < 3; k++) {
        a.lo[k] = std::min(a.lo[k], b.lo[k]);
        a.hi[k] = std::max(a.hi[k], b.hi[k]);
    }
    return a;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) { return (h ^ v) * 0x100000001b3u; }

std::uint64_t bits(double d)
{
    std::uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
}

struct world {
    unsigned frame = 0;
    double wind = 0, camera = 0;
    std::vector<double> pos = std::vector<double>(3 * bodies), vel = std::vector<double>(3 * bodies);
    box bounds;
    std::vector<std::uint32_t> draw;
    double phase = 0;
    std::uint64_t audio = 0;
    std::vector<std::uint64_t> hash, block;

    explicit world(unsigned frames) : hash(frames), block(frames)
    {
        for (std::size_t i = 0; i < bodies; i++) {
            pos[3 * i] = double(i % 256) - 128;
            pos[3 * i + 1] = double(i % 97);
            pos[3 * i + 2] = double(i / 256) - 64;
            vel[3 * i] = double(i % 5) - 2;
        }
    }

    /* The frame's work, shared by the graph and the plain run. */
    void input()
    {
        double t = frame / 60.0;
        wind = 2 * std::sin(0.7 * t);
        camera = 80 * std::cos(0.1 * t);
    }
    void step(std::size_t i)   /* one body, one substep */
    {
        double *p = &pos[3 * i], *v = &vel[3 * i];
        v[0] += (wind - 0.1 * v[0]) * dt;
        v[1] += (-9.81 - 0.1 * v[1]) * dt;
        for (int k = 0; k < 3; k++)
            p[k] += v[k] * dt;
        if (p[1] < 0) {
            p[1] = -p[1];
            v[1] = -0.8 * v[1];
        }
    }
    box point(std::size_t i) const
    {
        box b;
        for (int k = 0; k < 3; k++)
            b.lo[k] = b.hi[k] = pos[3 * i + k];
        return b;
    }
    void draw_list()   /* every 64th body in front of the camera, nearest first */
    {
        draw.clear();
        for (std::uint32_t i = 0; i < bodies; i += 64)
            if (pos[3 * i] < camera)
                draw.push_back(i);
        std::sort(draw.begin(), draw.end(), [&](std::uint32_t a, std::uint32_t b) {
            double da = camera - pos[3 * a], db = camera - pos[3 * b];
            return da < db || (da == db && a < b);
        });
    }
    void present()
    {
        std::uint64_t h = mix(0xcbf29ce484222325u, draw.size());
        for (std::uint32_t i : draw)
            h = mix(h, i);
        for (int k = 0; k < 3; k++)
            h = mix(mix(h, bits(bounds.lo[k])), bits(bounds.hi[k]));
        hash[frame] = h;
    }
    void mix_audio()
    {
        double f = tau * (220 + 20 * (frame % 12)) / 48000;
        for (int i = 0; i < 1024; i++) {
            audio = mix(audio, std::uint16_t(std::int16_t(16383 * std::sin(phase))));
            phase = std::fmod(phase + f, tau);
        }
    }
};

std::uint64_t load_block(unsigned frame)
{
    std::uint64_t h = 0xcbf29ce484222325u;
    for (std::uint64_t i = 0; i < 4096; i++)
        h = mix(h, (std::uint64_t(frame) * 4096 + i) * 0x9e3779b97f4a7c15u);
    return h;
}

void check(std::error_code ec, const char *what)
{
    if (ec) {
        std::fprintf(stderr, "frame_loop: %s: %s\n", what, ec.message().c_str());
        std::exit(1);
    }
}

double median_ms(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
    unsigned frames = argc > 1 ? unsigned(std::max(1, std::atoi(argv[1]))) : 120;
    unsigned workers = weft::auto_workers;
    if (argc > 2)
        workers = std::atoi(argv[2]) > 0 ? unsigned(std::atoi(argv[2])) : weft::no_workers;
    weft::scheduler s(workers);
    check(s.error(), "scheduler");
    weft::bind_guard bound(s);   /* after s: unbinds before s is destroyed */
    check(bound.error(), "bind");
    const int main_thread = weft::thread_id();

    world w(frames), ref(frames);
    int present_thread = -1;

    /* The graph, built once. A build call that fails is kept and makes
     * run() fail, so one check of build_error() covers them all. */
    weft::graph g;
    weft::task input = g.emplace([&] { w.input(); }).name("input");
    weft::task physics = g.emplace([&] {
        for (int k = 0; k < substeps; k++)
            check(weft::parallel_for(s, std::size_t(0), bodies, [&](std::size_t i) { w.step(i); }), "physics");
    }).name("physics");
    weft::task bounds = g.emplace([&] {
        /* 16 chunks: grouped the same way on every run and at every
         * worker count, so the result is the plain run's. */
        auto op = [](const box &a, const box &b) { return merge(a, b); };   /* a lambda inlines; a function's address is called per element */
        check(weft::parallel_transform_reduce(s, std::size_t(0), bodies, w.bounds, box(), op,
                                              [&](std::size_t i) { return w.point(i); }, bodies / 16),
              "bounds");
    }).name("bounds");
    weft::task draw = g.emplace([&] { w.draw_list(); }).name("draw list");
    weft::task present = g.emplace([&] {
        present_thread = weft::thread_id();
        w.present();
    }).name("present");
    g.emplace([&] { w.mix_audio(); }).name("audio");
    input.precede(physics);
    physics.precede(bounds, draw);
    present.succeed(bounds, draw).pin(main_thread);
    for (weft::task t : {input, physics, bounds, draw})
        t.prio(weft::priority::high);
    check(g.build_error(), "building the graph");

    std::vector<double> t_weft, t_plain;
    using clock = std::chrono::steady_clock;
    for (unsigned f = 0; f < frames; f++) {
        auto t0 = clock::now();
        w.frame = f;
        check(s.spawn(weft::spawn_options().prio(weft::priority::low).name("streaming"),
                      [&w, f] { w.block[f] = load_block(f); }),
              "streaming");
        check(s.run(g), "run");
        check(g.wait(), "frame");   /* runs present here, on this thread */
        w.hash[f] = mix(w.hash[f], w.audio);
        t_weft.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
        if (present_thread != main_thread)
            check(weft::errc::einval, "present ran off the main thread");

        t0 = clock::now();   /* the same frame as plain calls */
        ref.frame = f;
        ref.block[f] = load_block(f);
        ref.input();
        for (int k = 0; k < substeps; k++)
            for (std::size_t i = 0; i < bodies; i++)
                ref.step(i);
        box b[16];
        for (std::size_t c = 0; c < 16; c++)
            for (std::size_t i = c * (bodies / 16); i < (c + 1) * (bodies / 16); i++)
                b[c] = merge(b[c], ref.point(i));
        ref.bounds = box();
        for (const box &x : b)
            ref.bounds = merge(ref.bounds, x);
        ref.draw_list();
        ref.present();
        ref.mix_audio();
        ref.hash[f] = mix(ref.hash[f], ref.audio);
        t_plain.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    check(s.wait_idle(), "streaming");   /* the last blocks may still be loading */

    bool same = w.hash == ref.hash && w.block == ref.block && w.pos == ref.pos && w.vel == ref.vel;
    std::printf("frame_loop: %u frames of %zu bodies x %d substeps on %u workers; present on the main thread\n",
                frames, bodies, substeps, s.workers());
    std::printf("  median ms per frame: plain %.3f, weft %.3f (%.2fx)\n", median_ms(t_plain), median_ms(t_weft),
                median_ms(t_plain) / median_ms(t_weft));
    std::printf(same ? "  every frame and streamed block matches the plain run: ok\n"
                     : "  WRONG: differs from the plain run\n");
    return same ? 0 : 1;
}
