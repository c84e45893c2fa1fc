// Benchmarks in a build without CUDA: there is no GPU to measure, and they say so.
#include <cstdio>

#include "bench.h"

namespace lowbit::bench {

int cuda_device_count() { return 0; }

namespace {
int no_cuda() {
  std::fprintf(stderr, "lowbit bench: this build has no CUDA (LOWBIT_WITH_CUDA=OFF); "
                       "benchmarks need a CUDA build and a Hopper GPU\n");
  return 2;
}
}  // namespace

int run_quant_bench(const BenchOptions&) { return no_cuda(); }
int run_nvfp4_bench(const BenchOptions&) { return no_cuda(); }
int run_block_gemm_bench(const BenchOptions&) { return no_cuda(); }

}  // namespace lowbit::bench
