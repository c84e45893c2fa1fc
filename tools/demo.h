// `lowbit demo`: per_token_group_quant on a DeepSeek-V3-shaped activation, with accuracy, a bit-exact
// check against the CPU reference and a quick timing on a GPU.
#pragma once

#include <cstdint>

namespace lowbit::tools {

struct DemoOptions {
  std::int64_t tokens = 0;     // 0: 4096 on a GPU, 64 on the CPU
  std::int64_t hidden = 7168;  // DeepSeek-V3 hidden size
  bool force_cpu = false;
};

int run_demo(const DemoOptions& options);

}  // namespace lowbit::tools
