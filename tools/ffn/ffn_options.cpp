// Model presets of `lowbit ffn`: dense SwiGLU FFN widths from each model's config.json.
#include "ffn_options.h"

#include "lowbit/error.h"

namespace lowbit::tools {
namespace {

const FfnShape kPresets[] = {
    {"deepseek-v3", 7168, 18432},  // hidden_size, intermediate_size (the dense layers 0-2)
    {"llama3-8b", 4096, 14336},
    {"qwen3-32b", 5120, 25600},
};

}  // namespace

FfnShape ffn_preset(const std::string& model) {
  for (const FfnShape& shape : kPresets) {
    if (shape.model == model) return shape;
  }
  throw Error("ffn", "--model", "one of " + ffn_preset_names(), "'" + model + "'");
}

std::string ffn_preset_names() {
  std::string names;
  for (const FfnShape& shape : kPresets) names += (names.empty() ? "" : ", ") + shape.model;
  return names;
}

FfnShape reduced_for_cpu(const FfnShape& shape) {
  return {shape.model + " / 8", shape.hidden / 8, shape.intermediate / 8};
}

}  // namespace lowbit::tools
