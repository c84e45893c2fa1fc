// FFN weights for `lowbit ffn`: a seeded bf16 draw, or a DeepSeek-V3 FP8 layer read through the
// safetensors reader with every name, dtype and shape checked.
#include "ffn_weights.h"

#include <cmath>
#include <cstring>

#include "ffn_random.h"
#include "lowbit/block_gemm.h"
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

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// One block-FP8 projection read from the file: codes [rows, cols] and scales.
struct Projection {
  std::int64_t rows = 0, cols = 0;
  const std::uint8_t* codes = nullptr;
  const std::uint8_t* scales = nullptr;  // fp32 bytes, possibly unaligned in the mapping
};

Projection read_projection(const SafetensorsFile& file, const std::string& name) {
  const SafetensorsEntry& weight = file.at(name + ".weight");
  const SafetensorsEntry& scale = file.at(name + ".weight_scale_inv");
  if (weight.dtype_name != "F8_E4M3" || weight.shape.size() != 2) {
    throw Error("ffn", name + ".weight", "F8_E4M3 of rank 2",
                weight.dtype_name + " " + shape_text(weight.shape));
  }
  Projection projection{weight.shape[0], weight.shape[1], file.data(weight), file.data(scale)};
  const std::vector<std::int64_t> expected = {blocks(projection.rows), blocks(projection.cols)};
  if (scale.dtype_name != "F32" || scale.shape != expected) {
    throw Error("ffn", name + ".weight_scale_inv", "F32 " + shape_text(expected),
                scale.dtype_name + " " + shape_text(scale.shape));
  }
  return projection;
}

void append(std::vector<std::uint8_t>& codes, std::vector<float>& scales, const Projection& p) {
  codes.insert(codes.end(), p.codes, p.codes + p.rows * p.cols);
  const std::size_t count = blocks(p.rows) * blocks(p.cols);
  const std::size_t offset = scales.size();
  scales.resize(offset + count);
  std::memcpy(scales.data() + offset, p.scales, count * sizeof(float));
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
  const Projection gate = read_projection(file, layer + ".gate_proj");
  const Projection up = read_projection(file, layer + ".up_proj");
  const Projection down = read_projection(file, layer + ".down_proj");
  const std::int64_t i = gate.rows, h = gate.cols;
  if (up.rows != i || up.cols != h || down.rows != h || down.cols != i) {
    throw Error("ffn", layer,
                "gate_proj and up_proj [I, H] and down_proj [H, I] with one I and one H",
                "gate [" + std::to_string(gate.rows) + ", " + std::to_string(gate.cols) + "], up [" +
                    std::to_string(up.rows) + ", " + std::to_string(up.cols) + "], down [" +
                    std::to_string(down.rows) + ", " + std::to_string(down.cols) + "]");
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
