// Launch configuration of the group quantization kernels, chosen from the problem size. Host
// code, no CUDA header. LOWBIT_PRINT_CONFIG=1 prints each choice to stderr. For tuning runs
// and tests: LOWBIT_QUANT_KERNEL=direct|pipelined, LOWBIT_QUANT_BLOCKS_PER_SM=1..3 and
// LOWBIT_QUANT_VECTORS=1|2|4 override the choice; LOWBIT_PER_TENSOR_DYNAMIC=two_pass forces the
// amax + quantize kernels of dynamic per_tensor_quant.
#pragma once

#include <cstdint>

namespace lowbit::cuda {

enum class GroupQuantKernel { kDirect, kPipelined };

// Block size of the direct kernel at 4 pieces per lane (its launch bound: 4 blocks per SM).
inline constexpr int kWideLaneThreads = 224;

struct GroupQuantConfig {
  GroupQuantKernel kernel;
  int threads_per_block;  // direct kernel: 64, 128 or 256 (224 at 4 pieces per lane); pipelined: 256
  int blocks_per_sm;      // pipelined: persistent blocks per SM (capped by shared memory)
  int vectors_per_lane;   // direct kernel: 16-byte pieces of a group per lane (1, 2 or 4)
};

// compute_heavy: the values are computed per element (silu_and_mul_quant), which makes the
// kernel issue-bound rather than latency-bound.
GroupQuantConfig choose_group_quant_config(const char* op, std::int64_t input_bytes,
                                           std::int64_t total_groups, int group_size,
                                           bool compute_heavy, int sm_count);

// Where the quantizers let a next kernel launched with PDL start: at their own start (true, the
// default) or once their PDL wait has returned. LOWBIT_QUANT_RELEASE=after_wait picks the
// latter, for measurements (docs/perf/pdl.md).
bool quant_releases_at_start();

// Dynamic per_tensor_quant: one cluster launch where the tensor fits its registers
// (`fits_one_launch`, up to 1 MB), else the memset + amax + quantize kernels.
bool choose_per_tensor_one_launch(const char* op, bool fits_one_launch);

}  // namespace lowbit::cuda
