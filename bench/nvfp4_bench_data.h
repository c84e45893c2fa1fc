// What `lowbit bench nvfp4`'s sections share: the MoE models, weight bytes filled on the device,
// a projection's experts in both formats, and routings drawn top-k over a model's experts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "harness.cuh"
#include "lowbit/nvfp4.h"

namespace lowbit::bench {

struct Nvfp4Model {
  const char* name;
  std::int64_t experts, hidden, intermediate;
  int top_k;
};
inline constexpr Nvfp4Model kNvfp4Models[] = {{"deepseek-v3", 256, 7168, 2048, 8},
                                              {"qwen3-30b-a3b", 128, 2048, 768, 8},
                                              {"qwen3-next-80b-a3b", 512, 2048, 512, 10}};

// Fills `count` device bytes from `seed`: kind 0 e2m1 code pairs, 1 e4m3 block scales of
// moderate size, 2 valid 2:4 index bytes.
void fill_nvfp4_bytes(void* data, std::int64_t count, std::uint64_t seed, int kind);

// One projection's experts in both formats: [E, N, K] codes as dense pairs, 2:4 values and
// indices, and the block scales both read.
struct ProjectionWeights {
  std::int64_t experts, n, k;
  DeviceMemory packed, values, indices, scales;
  ProjectionWeights(std::int64_t e, std::int64_t rows, std::int64_t cols, std::uint64_t seed);
  TensorView view(const DeviceMemory& d, std::int64_t div, DType dtype) const {
    return TensorView::contiguous(d.get(), dtype, {experts, n, k / div}, Device::kCUDA);
  }
  // Weight bytes an active expert streams.
  double expert_bytes(bool sparse) const {
    const double codes = static_cast<double>(n) * k;
    return sparse ? codes / 4 + codes / 8 + codes / 16 : codes / 2 + codes / 16;
  }
};

// x [M, K] -> y [P, N] through w's experts: nvfp4_sparse24_gemv if `sparse`, else nvfp4_gemv;
// `prefetch` is the args' prefetch_before_wait.
void run_projection(const ProjectionWeights& w, bool sparse, const TensorView& x,
                    const TensorView& globals, const TensorView& y, const Nvfp4MoeRouting& routing,
                    bool pdl, cudaStream_t stream, bool prefetch = true);

// Medians (us) of run(set, sparse, pdl), sampled in turn (interleaved_median_us): dense and 2:4
// on a stream, then dense and 2:4 replayed from a graph with programmatic dependent launch.
std::vector<double> stream_and_pdl_median_us(const std::function<void(int, bool, bool)>& run,
                                             int sets, int samples);

// One routing of `tokens` tokens, each to top_k distinct experts drawn at random, as the GEMVs'
// lists (device int32): slot s = the s-th active expert, its tokens in order.
struct RoutingSet {
  std::unique_ptr<DeviceMemory> ids, offsets, tokens;
  std::int64_t slots = 0, rows = 0, active = 0;
  std::vector<std::int32_t> active_ids;
};
RoutingSet make_routing(const Nvfp4Model& m, std::int64_t tokens, std::mt19937_64& rng);

// The densest routing `tokens` tokens can have: all of them to the same top_k experts, drawn at
// random (so every active expert gets every token).
RoutingSet make_shared_routing(const Nvfp4Model& m, std::int64_t tokens, std::mt19937_64& rng);

// One routing's lists in buffers an engine's router rewrites every step: sized for the largest
// of `sets`.
struct LiveRouting {
  explicit LiveRouting(const std::vector<RoutingSet>& sets);
  std::unique_ptr<DeviceMemory> ids, offsets, tokens;
};

// Stands for an engine's router kernel right before the GEMV, launched with PDL: it lets the
// next kernel launch at once, waits for the kernel before it (which reads these lists), then
// copies `from`'s lists into `live`. A GEMV launched with PDL behind it that reads the lists
// before its wait sees the previous routing.
void launch_router_copy(const RoutingSet& from, const LiveRouting& live, cudaStream_t stream);

}  // namespace lowbit::bench
