// Heuristics for the memory-bound group quantizers (see quant_heuristics.h).
//
// Large problems use 256-thread blocks (8 per SM fill its 2048 threads). Small ones (decode:
// a few tokens) shrink the block so the grid still reaches at least two blocks per SM: the
// kernel is then latency-bound and each SM's share of the loads should start at once.
#include "quant_heuristics.h"

#include <cstdio>
#include <cstdlib>

namespace lowbit::cuda {

namespace {
bool print_config() {
  static const bool print = [] {
    const char* text = std::getenv("LOWBIT_PRINT_CONFIG");
    return text && text[0] == '1';
  }();
  return print;
}
}  // namespace

GroupQuantConfig choose_group_quant_config(const char* op, std::int64_t total_groups,
                                           int group_size, int lanes_per_group, int sm_count) {
  const std::int64_t threads = total_groups * lanes_per_group;
  int block = 256;
  while (block > 64 && threads / block < 2 * static_cast<std::int64_t>(sm_count)) block /= 2;
  const GroupQuantConfig config{block};
  if (print_config()) {
    std::fprintf(stderr, "[lowbit] %s: %lld groups of %d, %d lanes/group -> %d threads/block\n",
                 op, static_cast<long long>(total_groups), group_size, lanes_per_group, block);
  }
  return config;
}

}  // namespace lowbit::cuda
