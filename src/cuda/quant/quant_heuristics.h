// Launch configuration of the group quantization kernels, chosen from the problem size. Host
// code, no CUDA header. LOWBIT_PRINT_CONFIG=1 prints each choice to stderr;
// LOWBIT_QUANT_KERNEL=direct|pipelined forces a kernel (for tuning runs and tests).
#pragma once

#include <cstdint>

namespace lowbit::cuda {

enum class GroupQuantKernel { kDirect, kPipelined };

struct GroupQuantConfig {
  GroupQuantKernel kernel;
  int threads_per_block;  // direct kernel: 64, 128 or 256; pipelined: 256
};

GroupQuantConfig choose_group_quant_config(const char* op, std::int64_t input_bytes,
                                           std::int64_t total_groups, int group_size,
                                           int sm_count);

}  // namespace lowbit::cuda
