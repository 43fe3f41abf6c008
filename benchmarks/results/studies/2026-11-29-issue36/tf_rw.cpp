// tfrw W N: 32-task chain taskflow, N run().wait() cycles from main, W workers; ns per cycle
#include <taskflow/taskflow.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
int main(int argc, char **argv) {
  int W = atoi(argv[1]); long N = atol(argv[2]);
  tf::Executor ex(W); tf::Taskflow f; long cnt = 0;
  tf::Task prev;
  for (int i = 0; i < 32; i++) { auto t = f.emplace([&cnt] { cnt++; }); if (i) prev.precede(t); prev = t; }
  for (int i = 0; i < 1000; i++) ex.run(f).wait();
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < N; i++) ex.run(f).wait();
  auto t1 = std::chrono::steady_clock::now();
  if (cnt != 32 * (N + 1000)) { printf("WRONG\n"); return 1; }
  printf("W=%d %.0f ns/cycle\n", W, std::chrono::duration<double, std::nano>(t1 - t0).count() / N);
}
