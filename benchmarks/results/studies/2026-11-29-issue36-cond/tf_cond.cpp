// Taskflow's condition loop beside weft_cond.c (the same two kernels):
//   tf_cond THREADS N RUNS [self]
// default: init -> body -> cond, cond -0-> body, cond -1-> done;
// self: init -> cond, cond -0-> cond, cond -1-> done, the body's work in
// the condition (Taskflow's own example's shape, B.precede(B, C)).
// N iterations a run; executor.run(taskflow).wait() per run. Prints ns
// per iteration (mean over RUNS timed runs, after one untimed run).
// Built outside the repository against a fetched Taskflow:
//   g++ -O3 -DNDEBUG -std=c++20 -I TASKFLOW_DIR tf_cond.cpp -pthread
#include <taskflow/taskflow.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main(int argc, char **argv) {
  unsigned threads = argc > 1 ? atoi(argv[1]) : 1;
  long n = argc > 2 ? atol(argv[2]) : 1000000;
  int runs = argc > 3 ? atoi(argv[3]) : 10;
  bool self = argc > 4 && strcmp(argv[4], "self") == 0;
  tf::Executor ex(threads);
  tf::Taskflow tfw;
  long left = 0, body = 0;
  auto init = tfw.emplace([&] { left = n; });
  auto d = tfw.emplace([] {});
  if (self) {
    auto c = tfw.emplace([&]() -> int { body++; return --left > 0 ? 0 : 1; });
    init.precede(c);
    c.precede(c, d);
  } else {
    auto b = tfw.emplace([&] { body++; });
    auto c = tfw.emplace([&]() -> int { return --left > 0 ? 0 : 1; });
    init.precede(b);
    b.precede(c);
    c.precede(b, d);
  }
  ex.run(tfw).wait();
  long before = body;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; i++) ex.run(tfw).wait();
  auto t1 = std::chrono::steady_clock::now();
  if (body - before != n * runs) { std::fprintf(stderr, "WRONG\n"); return 1; }
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / (double(n) * runs);
  std::printf("taskflow t%u %.3f ns/iter\n", threads, ns);
  return 0;
}
