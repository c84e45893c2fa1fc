// Host copies of one SwiGLU FFN layer's weights, drawn at random or read from a DeepSeek-V3-format
// FP8 checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffn_options.h"

namespace lowbit::tools {

struct FfnWeights {
  FfnShape shape;
  std::string source;  // "random (seed 1)" or "FILE: LAYER"
  // The layer's true weights in fp32: the bf16 draw (exactly representable in bf16), or the
  // checkpoint's fp8 values times their block scales. The reference layer uses these.
  std::vector<float> gate_up;  // [2I, H]: gate rows, then up rows
  std::vector<float> down;     // [H, I]
  // Block-FP8 weights as stored in a checkpoint; empty for random weights, which the layer
  // quantizes with block_fp8_quantize_weight on the device it runs on.
  std::vector<std::uint8_t> gate_up_fp8;  // [2I, H] e4m3fn
  std::vector<float> gate_up_scales;      // [2I / 128, ceil(H / 128)]
  std::vector<std::uint8_t> down_fp8;     // [H, I]
  std::vector<float> down_scales;         // [ceil(H / 128), ceil(I / 128)]
  bool from_checkpoint() const { return !gate_up_fp8.empty(); }
};

// N(0, 1/fan_in) weights rounded to bf16, from a fixed seed.
FfnWeights random_ffn_weights(const FfnShape& shape, std::uint64_t seed);

// Reads LAYER.{gate,up,down}_proj.weight (F8_E4M3) and .weight_scale_inv (F32, 128 x 128 blocks)
// from a safetensors file, as DeepSeek-V3's checkpoints name them. The gate and up projections
// are stacked into one [2I, H] weight, which needs I % 128 == 0.
FfnWeights load_ffn_checkpoint(const std::string& path, const std::string& layer);

// Activations x [T, H] bf16: normal values with a per-token gain and a few outlier channels,
// as LLM hidden states have.
std::vector<std::uint16_t> ffn_activations(std::int64_t tokens, std::int64_t hidden,
                                           std::uint64_t seed);

}  // namespace lowbit::tools
