// Launch configuration of the group quantization kernels, chosen from the problem size. Host
// code, no CUDA header. LOWBIT_PRINT_CONFIG=1 prints each choice to stderr.
#pragma once

#include <cstdint>

namespace lowbit::cuda {

struct GroupQuantConfig {
  int threads_per_block;  // 64, 128 or 256
};

// lanes_per_group: threads that share one group in the kernel.
GroupQuantConfig choose_group_quant_config(const char* op, std::int64_t total_groups,
                                           int group_size, int lanes_per_group, int sm_count);

}  // namespace lowbit::cuda
