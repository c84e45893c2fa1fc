// Launch configuration of the group quantization kernels, chosen from the problem size. Host
// code, no CUDA header. LOWBIT_PRINT_CONFIG=1 prints each choice to stderr;
// LOWBIT_QUANT_CHUNKS=1|2|4 forces chunks per thread (for tuning runs).
#pragma once

#include <cstdint>

namespace lowbit::cuda {

struct GroupQuantConfig {
  int threads_per_block;
  int chunks_per_thread;  // independent 16-byte loads each thread issues before using any
};

GroupQuantConfig choose_group_quant_config(const char* op, std::int64_t total_groups,
                                           int group_size, int sm_count);

}  // namespace lowbit::cuda
