// `lowbit demo`: the main job until the FFN layer lands.
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
