// Benchmarks in a build without CUDA: there is no GPU to measure, and they say so.
#include <cstdio>

#include "bench.h"

namespace lowbit::bench {

int cuda_device_count() { return 0; }

int run_benchmarks(const std::string&, const BenchOptions&) {
  std::fprintf(stderr, "lowbit bench: this build has no CUDA (LOWBIT_WITH_CUDA=OFF); "
                       "benchmarks need a CUDA build and a Hopper GPU (lowbit plot re-plots "
                       "saved reports without one)\n");
  return 2;
}

}  // namespace lowbit::bench
