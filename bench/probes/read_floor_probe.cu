// Probe (not part of the library): how fast any plain read moves the bytes of the NVFP4 GEMV
// rows of the issue's bar (DeepSeek-V3 gate_up and down at M = 1, dense and 2:4), over read
// kernels of several shapes, on a stream and replayed from a graph with programmatic dependent
// launch. `lowbit bench nvfp4` times one read shape as the same-size floor; this checks that
// floor against others, and gives the 2:4 / dense ratio that reads alone reach
// (docs/perf/nvfp4_gemv.md, "What plain reads allow 2:4").
//
// Each variant is the benches' grid-stride read of 16-byte vectors (read_stream.cuh), `depth`
// loads in flight per thread, `blocks_per_sm` blocks of 256 threads per SM; timed held, sampled in turn with the other
// shapes, inputs rotated over 2.5x L2 (bench/harness.cuh).
//
// Build (from the repository root; nvcc 13, sm_90a):
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//     -Iinclude -Ibench -Isrc bench/probes/read_floor_probe.cu bench/harness.cu \
//     bench/stream_hold.cu bench/device_pool.cu src/core/error.cpp -o read_floor_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "harness.cuh"
#include "read_stream.cuh"

namespace {

using namespace lowbit::bench;

struct Shape {
  int depth, blocks_per_sm;
};
constexpr Shape kShapes[] = {{2, 8}, {4, 8}, {8, 8}, {4, 4}, {8, 4}, {16, 2}, {8, 2}};

using Kernel = void (*)(const uint4*, std::int64_t, unsigned*);
Kernel kernel_of(int depth) {
  switch (depth) {
    case 2: return read_stream_kernel<2>;
    case 4: return read_stream_kernel<4>;
    case 8: return read_stream_kernel<8>;
    default: return read_stream_kernel<16>;
  }
}

// Median µs of every shape for one byte count, on a stream and under graph + PDL.
std::vector<double> time_shapes(std::int64_t bytes, const DeviceInfo& device, int samples) {
  const std::int64_t vectors = (bytes + 15) / 16;
  const int sets = rotation_sets(vectors * 16, device.l2_bytes);
  DeviceMemory data(static_cast<std::size_t>(vectors * 16 * sets)), sink(4096 * 4);
  check(cudaMemset(data.get(), 1, static_cast<std::size_t>(vectors * 16 * sets)), "cudaMemset");
  static cudaLaunchAttribute dependent;
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  std::vector<Variant> variants;
  for (bool pdl : {false, true}) {
    for (const Shape& s : kShapes) {
      variants.push_back({[&, s, pdl](int set) {
                            cudaLaunchConfig_t config = {};
                            config.gridDim = dim3(device.sm_count * s.blocks_per_sm);
                            config.blockDim = dim3(256);
                            config.stream = bench_stream();
                            config.attrs = &dependent;
                            config.numAttrs = pdl ? 1 : 0;
                            check(cudaLaunchKernelEx(&config, kernel_of(s.depth),
                                                     static_cast<const uint4*>(data.get()) + set * vectors,
                                                     vectors, static_cast<unsigned*>(sink.get())),
                                  "read launch");
                          },
                          pdl ? Replay::kGraph : Replay::kStream});
    }
  }
  return interleaved_median_us(variants, sets, samples);
}

}  // namespace

int main() {
  const DeviceInfo device = device_info();
  const int samples = 30;
  std::printf("device: %s (%d SMs, L2 %lld MB); copy %.1f GB/s\n", device.name.c_str(), device.sm_count,
              static_cast<long long>(device.l2_bytes >> 20), measure_copy_gbps(samples));
  // Bytes as `lowbit bench nvfp4` counts them at M = 1 over 8 experts: weights + x + y.
  struct Row {
    const char* name;
    std::int64_t n, k;
  };
  const Row rows[] = {{"deepseek-v3 gate_up", 4096, 7168}, {"deepseek-v3 down", 7168, 2048}};
  for (const Row& r : rows) {
    const std::int64_t codes = r.n * r.k, io = r.k * 2 + 8 * r.n * 2;
    const std::int64_t dense = 8 * (codes / 2 + codes / 16) + io;
    const std::int64_t sparse = 8 * (codes / 4 + codes / 8 + codes / 16) + io;
    const std::vector<double> d = time_shapes(dense, device, samples);
    const std::vector<double> s = time_shapes(sparse, device, samples);
    const int count = static_cast<int>(std::size(kShapes));
    std::printf("%s M=1: dense %lld B, 2:4 %lld B (%.3fx)\n", r.name, static_cast<long long>(dense),
                static_cast<long long>(sparse), static_cast<double>(dense) / sparse);
    std::printf("  %-22s %10s %10s %7s | %10s %10s %7s\n", "read shape", "dense us", "2:4 us", "ratio",
                "PDL dense", "PDL 2:4", "ratio");
    for (int i = 0; i < count; ++i) {
      std::printf("  depth %2d, %2d blocks/SM %10.2f %10.2f %6.3fx | %10.2f %10.2f %6.3fx\n", kShapes[i].depth,
                  kShapes[i].blocks_per_sm, d[i], s[i], d[i] / s[i], d[count + i], s[count + i],
                  d[count + i] / s[count + i]);
    }
    const double best_d = *std::min_element(d.begin(), d.begin() + count);
    const double best_s = *std::min_element(s.begin(), s.begin() + count);
    const double best_pd = *std::min_element(d.begin() + count, d.end());
    const double best_ps = *std::min_element(s.begin() + count, s.end());
    std::printf("  best of each: stream %.2f / %.2f us (%.3fx); graph + PDL %.2f / %.2f us (%.3fx)\n",
                best_d, best_s, best_d / best_s, best_pd, best_ps, best_pd / best_ps);
    std::fflush(stdout);
  }
  return 0;
}
