// FFN weights for `lowbit ffn`: a seeded bf16 draw, or a DeepSeek-V3 FP8 layer read with
// read_block_fp8_weight (every name, dtype and shape checked).
#include "ffn_weights.h"

#include <cmath>

#include "ffn_random.h"
#include "lowbit/block_gemm.h"
#include "lowbit/checkpoint.h"
#include "lowbit/error.h"
#include "lowbit/formats.h"
#include "lowbit/safetensors.h"

namespace lowbit::tools {
namespace {

std::int64_t blocks(std::int64_t extent) { return (extent + 127) / 128; }

std::vector<float> bf16_normal(std::int64_t count, float stddev, std::uint64_t seed) {
  std::vector<float> values(count);
  parallel_ranges(count, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      values[i] = bf16_to_float(float_to_bf16(stddev * normal_at(seed, i)));
    }
  });
  return values;
}

void append(std::vector<std::uint8_t>& codes, std::vector<float>& scales, const BlockFp8Weight& w) {
  const auto* code_bytes = static_cast<const std::uint8_t*>(w.weight.data);
  codes.insert(codes.end(), code_bytes, code_bytes + w.weight.numel());
  const auto* scale_values = static_cast<const float*>(w.scales.data);
  scales.insert(scales.end(), scale_values, scale_values + w.scales.numel());
}

std::vector<float> dequantize(std::vector<std::uint8_t>& codes, std::vector<float>& scales,
                              std::int64_t rows, std::int64_t cols) {
  std::vector<float> values(rows * cols);
  BlockFp8DequantizeWeightArgs args;
  args.weight = TensorView::contiguous(codes.data(), DType::kFP8E4M3, {rows, cols});
  args.scales = TensorView::contiguous(scales.data(), DType::kFP32, {blocks(rows), blocks(cols)});
  args.output = TensorView::contiguous(values.data(), DType::kFP32, {rows, cols});
  block_fp8_dequantize_weight(args);
  return values;
}

}  // namespace

FfnWeights random_ffn_weights(const FfnShape& shape, std::uint64_t seed) {
  FfnWeights weights;
  weights.shape = shape;
  weights.source = "random bf16 draw (seed " + std::to_string(seed) + ")";
  const std::int64_t h = shape.hidden, i = shape.intermediate;
  weights.gate_up = bf16_normal(2 * i * h, 1.0f / std::sqrt(static_cast<float>(h)), seed * 3 + 1);
  weights.down = bf16_normal(h * i, 1.0f / std::sqrt(static_cast<float>(i)), seed * 3 + 2);
  return weights;
}

FfnWeights load_ffn_checkpoint(const std::string& path, const std::string& layer) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  const BlockFp8Weight gate = read_block_fp8_weight(file, layer + ".gate_proj");
  const BlockFp8Weight up = read_block_fp8_weight(file, layer + ".up_proj");
  const BlockFp8Weight down = read_block_fp8_weight(file, layer + ".down_proj");
  const std::int64_t i = gate.weight.shape[0], h = gate.weight.shape[1];
  if (up.weight.shape[0] != i || up.weight.shape[1] != h || down.weight.shape[0] != h ||
      down.weight.shape[1] != i) {
    throw Error("ffn", layer,
                "gate_proj and up_proj [I, H] and down_proj [H, I] with one I and one H",
                "gate " + gate.weight.describe() + ", up " + up.weight.describe() + ", down " +
                    down.weight.describe());
  }
  if (i % 128 != 0 || h % 128 != 0) {
    throw Error("ffn", layer, "H and I multiples of 128 (gate and up stack into one weight)",
                "H = " + std::to_string(h) + ", I = " + std::to_string(i));
  }
  FfnWeights weights;
  weights.shape = {layer, h, i};
  weights.source = path + ": " + layer;
  append(weights.gate_up_fp8, weights.gate_up_scales, gate);
  append(weights.gate_up_fp8, weights.gate_up_scales, up);
  append(weights.down_fp8, weights.down_scales, down);
  weights.gate_up = dequantize(weights.gate_up_fp8, weights.gate_up_scales, 2 * i, h);
  weights.down = dequantize(weights.down_fp8, weights.down_scales, h, i);
  return weights;
}

std::vector<std::uint16_t> ffn_activations(std::int64_t tokens, std::int64_t hidden,
                                           std::uint64_t seed) {
  std::vector<std::uint16_t> x(tokens * hidden);
  parallel_ranges(tokens, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const float token_gain = std::exp(0.5f * normal_at(seed * 7 + 5, t));
      for (std::int64_t c = 0; c < hidden; ++c) {
        const float channel_gain = c % 997 == 0 ? 20.0f : 1.0f;
        const float value = normal_at(seed * 7 + 6, t * hidden + c) * token_gain * channel_gain;
        x[t * hidden + c] = float_to_bf16(value);
      }
    }
  });
  return x;
}

}  // namespace lowbit::tools
