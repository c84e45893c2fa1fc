// Heuristics for the memory-bound group quantizers (see quant_heuristics.h).
//
// NOTE: H100/H200 need roughly 30 KB of loads in flight per SM to cover DRAM latency at full
// bandwidth; one 16-byte load per thread at 2048 threads per SM is 32 KB only if every thread
// is loading at once, so large problems give each thread several chunks, loaded up front. Small
// problems keep one chunk per thread so the grid still spreads across all SMs.
#include "quant_heuristics.h"

#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace lowbit::cuda {

namespace {
constexpr int kThreadsPerBlock = 256;
constexpr int kElementsPerThread = 8;
constexpr int kBlocksPerSmForFullWave = 8;  // 8 x 256 threads = 2048, the SM's thread limit

int forced_chunks() {
  static const int forced = [] {
    const char* text = std::getenv("LOWBIT_QUANT_CHUNKS");
    const int value = text ? std::atoi(text) : 0;
    return (value == 1 || value == 2 || value == 4) ? value : 0;
  }();
  return forced;
}

bool print_config() {
  static const bool print = [] {
    const char* text = std::getenv("LOWBIT_PRINT_CONFIG");
    return text && text[0] == '1';
  }();
  return print;
}
}  // namespace

GroupQuantConfig choose_group_quant_config(const char* op, std::int64_t total_groups,
                                           int group_size, int sm_count) {
  const std::int64_t groups_per_pass = kThreadsPerBlock / (group_size / kElementsPerThread);
  const std::int64_t full_wave_blocks = static_cast<std::int64_t>(sm_count) * kBlocksPerSmForFullWave;
  int chunks = 1;
  for (int candidate : {4, 2}) {
    if (total_groups / (groups_per_pass * candidate) >= 2 * full_wave_blocks) {
      chunks = candidate;
      break;
    }
  }
  if (forced_chunks() != 0) chunks = forced_chunks();
  const GroupQuantConfig config{kThreadsPerBlock, chunks};
  if (print_config()) {
    std::fprintf(stderr, "[lowbit] %s: %lld groups of %d -> %d threads/block, %d chunks/thread%s\n",
                 op, static_cast<long long>(total_groups), group_size, config.threads_per_block,
                 config.chunks_per_thread, forced_chunks() ? " (LOWBIT_QUANT_CHUNKS)" : "");
  }
  return config;
}

}  // namespace lowbit::cuda
