// Options of `lowbit ffn` and the model presets it knows.
#pragma once

#include <cstdint>
#include <string>

namespace lowbit::tools {

// A SwiGLU FFN's widths: x [T, hidden] -> gate/up [T, intermediate] -> y [T, hidden].
struct FfnShape {
  std::string model;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
};

struct FfnOptions {
  std::string model = "deepseek-v3";  // preset; ignored when weights come from a file
  std::int64_t tokens = 0;            // 0: 4096 on a GPU, 16 on the CPU
  std::string weights_path;           // safetensors file (DeepSeek-V3 FP8 format); empty: random
  std::string layer;                  // tensor-name prefix in that file, e.g. model.layers.0.mlp
  std::uint64_t seed = 1;             // random weights and activations
  int reference_rows = 8;             // rows of y checked against the fp32 reference
  bool force_cpu = false;
  std::string json_path;              // empty: no JSON report
};

// The preset for a model name ("deepseek-v3", "llama3-8b", "qwen3-32b"); throws on others.
FfnShape ffn_preset(const std::string& model);
// "deepseek-v3, llama3-8b, qwen3-32b"
std::string ffn_preset_names();
// The CPU path's reduced size: both widths divided by 8 (still multiples of 128).
FfnShape reduced_for_cpu(const FfnShape& shape);

}  // namespace lowbit::tools
