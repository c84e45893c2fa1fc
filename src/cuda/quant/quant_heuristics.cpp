// Heuristics for the memory-bound group quantizers (see quant_heuristics.h).
//
// Large inputs take the pipelined kernel (bulk copies keep 4 tiles in flight per block). Small
// ones (decode: a few tokens) take the direct kernel, whose one-load-per-lane grid spreads over
// every SM at once; its block shrinks until the grid reaches two blocks per SM. The crossover
// was measured on H200 (docs/perf/per_token_group_quant.md).
#include "quant_heuristics.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../../common/config_print.h"

namespace lowbit::cuda {

namespace {
constexpr std::int64_t kPipelinedFromBytes = std::int64_t{8} << 20;
constexpr int kElementsPerLane = 8;  // direct kernel

int env_int(const char* name) {
  const char* text = std::getenv(name);
  return text ? std::atoi(text) : 0;
}

// 0: no override, 1: direct, 2: pipelined.
int forced_kernel() {
  static const int forced = [] {
    const char* text = std::getenv("LOWBIT_QUANT_KERNEL");
    if (!text) return 0;
    if (std::strcmp(text, "direct") == 0) return 1;
    if (std::strcmp(text, "pipelined") == 0) return 2;
    return 0;
  }();
  return forced;
}
}  // namespace

GroupQuantConfig choose_group_quant_config(const char* op, std::int64_t input_bytes,
                                           std::int64_t total_groups, int group_size,
                                           bool compute_heavy, int sm_count) {
  static const int forced_blocks_per_sm = env_int("LOWBIT_QUANT_BLOCKS_PER_SM");
  static const int forced_vectors = env_int("LOWBIT_QUANT_VECTORS");
  // Two persistent blocks per SM (2 x 4 stages x 16 KB for bf16) beat three on H200.
  GroupQuantConfig config{GroupQuantKernel::kDirect, 256, 2, 1};
  if (forced_blocks_per_sm >= 1 && forced_blocks_per_sm <= 3) {
    config.blocks_per_sm = forced_blocks_per_sm;
  }
  // Compute-heavy sources are issue-bound: they want the direct kernel's full occupancy (2048
  // threads/SM) more than the pipeline's bytes in flight (16 warps/SM). H200, silu_and_mul_quant
  // 16384 x 18432: direct 49.7% of copy, pipelined 27.9%.
  if (input_bytes >= kPipelinedFromBytes && !compute_heavy) {
    config.kernel = GroupQuantKernel::kPipelined;
  }
  // At those sizes the SiLU source also takes wide lanes: 4 pieces (32 elements) per lane
  // spread each group's fixed cost (index math, shuffles, scale, reciprocal) over 4x the work.
  if (input_bytes >= kPipelinedFromBytes && compute_heavy) config.vectors_per_lane = 4;
  if (compute_heavy && (forced_vectors == 1 || forced_vectors == 2 || forced_vectors == 4)) {
    config.vectors_per_lane = forced_vectors;
  }
  if (config.vectors_per_lane == 4) config.threads_per_block = kWideLaneThreads;
  if (forced_kernel() == 1) config.kernel = GroupQuantKernel::kDirect;
  if (forced_kernel() == 2) config.kernel = GroupQuantKernel::kPipelined;
  if (config.kernel == GroupQuantKernel::kDirect) {
    const std::int64_t threads =
        total_groups * (group_size / (kElementsPerLane * config.vectors_per_lane));
    while (config.threads_per_block > 64 &&
           threads / config.threads_per_block < 2 * static_cast<std::int64_t>(sm_count)) {
      config.threads_per_block /= 2;
    }
  }
  detail::print_config_once(
      "%s: %lld input bytes, %lld groups of %d -> %s kernel, %d threads/block, %d blocks/SM, "
      "%d vectors/lane", op, static_cast<long long>(input_bytes),
      static_cast<long long>(total_groups), group_size,
      config.kernel == GroupQuantKernel::kPipelined ? "pipelined" : "direct",
      config.threads_per_block, config.blocks_per_sm, config.vectors_per_lane);
  return config;
}

bool quant_releases_at_start() {
  static const bool after_wait = [] {
    const char* text = std::getenv("LOWBIT_QUANT_RELEASE");
    return text && std::strcmp(text, "after_wait") == 0;
  }();
  return !after_wait;
}

bool choose_per_tensor_one_launch(const char* op, bool fits_one_launch) {
  static const bool forced_two_pass = [] {
    const char* text = std::getenv("LOWBIT_PER_TENSOR_DYNAMIC");
    return text && std::strcmp(text, "two_pass") == 0;
  }();
  const bool one_launch = fits_one_launch && !forced_two_pass;
  detail::print_config_once("%s: dynamic per-tensor -> %s", op,
                            one_launch ? "one_launch (16-block cluster)"
                                       : "two_pass (amax + quantize)");
  return one_launch;
}

}  // namespace lowbit::cuda
