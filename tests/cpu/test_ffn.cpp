// `lowbit ffn` on the CPU: the FP8 layer (four lowbit ops on host tensors) against the
// double-precision reference on random weights and on a small DeepSeek-V3-format checkpoint
// written here, the checkpoint loader's errors, and that the accuracy bar rejects bad output.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/temp_path.h"
#include "ffn_reference.h"
#include "ffn_run.h"
#include "ffn_weights.h"
#include "lowbit/block_gemm.h"
#include "lowbit/error.h"
#include "lowbit/formats.h"
#include "lowbit/safetensors.h"

namespace lowbit::tools {
namespace {

std::string temp_path(const std::string& name) { return lowbit::testing::temp_path("lowbit_ffn_", name); }

struct BlockFp8 {
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
};

BlockFp8 quantize(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::vector<float> w(rows * cols);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
  for (float& v : w) v = normal(rng);
  BlockFp8 q{std::vector<std::uint8_t>(rows * cols),
             std::vector<float>(((rows + 127) / 128) * ((cols + 127) / 128))};
  BlockFp8QuantizeWeightArgs args;
  args.weight = TensorView::contiguous(w.data(), DType::kFP32, {rows, cols});
  args.output = TensorView::contiguous(q.codes.data(), DType::kFP8E4M3, {rows, cols});
  args.scales = TensorView::contiguous(q.scales.data(), DType::kFP32,
                                       {(rows + 127) / 128, (cols + 127) / 128});
  block_fp8_quantize_weight(args);
  return q;
}

// A DeepSeek-V3-format layer: prefix.{gate,up,down}_proj.weight + .weight_scale_inv.
struct Checkpoint {
  BlockFp8 gate, up, down;
  std::vector<SafetensorsWriteEntry> entries;
  Checkpoint(std::int64_t hidden, std::int64_t intermediate, const std::string& prefix)
      : gate(quantize(intermediate, hidden, 1)),
        up(quantize(intermediate, hidden, 2)),
        down(quantize(hidden, intermediate, 3)) {
    add(prefix + ".gate_proj", gate, intermediate, hidden);
    add(prefix + ".up_proj", up, intermediate, hidden);
    add(prefix + ".down_proj", down, hidden, intermediate);
  }
  void add(const std::string& name, const BlockFp8& w, std::int64_t rows, std::int64_t cols) {
    entries.push_back({name + ".weight", DType::kFP8E4M3, {rows, cols}, w.codes.data()});
    entries.push_back({name + ".weight_scale_inv", DType::kFP32,
                       {(rows + 127) / 128, (cols + 127) / 128}, w.scales.data()});
  }
};

std::string load_error(const std::string& path, const std::string& layer) {
  try {
    load_ffn_checkpoint(path, layer);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(FfnLayer, RandomWeightsOnTheCpuMeetTheAccuracyBar) {
  FfnOptions options;
  options.force_cpu = true;
  options.tokens = 5;
  const FfnResult result = run_ffn_layer(options);
  EXPECT_FALSE(result.on_gpu);
  EXPECT_EQ(result.shape.hidden, 7168 / 8);
  EXPECT_EQ(result.shape.intermediate, 18432 / 8);
  ASSERT_EQ(result.stages.size(), 4u);
  EXPECT_EQ(result.stages[1].name, "gate_up block_fp8_mm");
  EXPECT_EQ(result.stages[1].flops, 2.0 * 5 * (2 * 2304) * 896);
  EXPECT_EQ(result.reference_rows.size(), 5u);
  EXPECT_TRUE(accuracy_ok(result.accuracy))
      << "relative error " << result.accuracy.relative_error << " cosine " << result.accuracy.cosine;
  // FP8 cannot be this exact: a far smaller error would mean the reference is not independent.
  EXPECT_GT(result.accuracy.relative_error, 0.01);
}

TEST(FfnLayer, CheckpointLayerRunsAndMatchesItsDequantizedReference) {
  const std::string path = temp_path("layer.safetensors");
  const Checkpoint checkpoint(256, 384, "model.layers.0.mlp");
  write_safetensors(path, checkpoint.entries);
  FfnOptions options;
  options.force_cpu = true;
  options.tokens = 3;
  options.weights_path = path;
  options.layer = "model.layers.0.mlp";
  const FfnResult result = run_ffn_layer(options);
  EXPECT_EQ(result.shape.hidden, 256);
  EXPECT_EQ(result.shape.intermediate, 384);
  EXPECT_TRUE(accuracy_ok(result.accuracy)) << result.accuracy.relative_error;

  const FfnWeights weights = load_ffn_checkpoint(path, "model.layers.0.mlp");
  ASSERT_EQ(weights.gate_up.size(), 2u * 384 * 256);
  // Up rows follow gate rows; the reference weight is code x its block's scale.
  const std::int64_t row = 384 + 130, col = 200;
  const float expected = fp8_e4m3_to_float(checkpoint.up.codes[130 * 256 + col]) *
                         checkpoint.up.scales[1 * 2 + 1];
  EXPECT_EQ(weights.gate_up[row * 256 + col], expected);
}

TEST(FfnLayer, CheckpointErrorsNameTheTensor) {
  const std::string path = temp_path("bad.safetensors");
  Checkpoint checkpoint(256, 384, "mlp");
  std::vector<SafetensorsWriteEntry> missing(checkpoint.entries.begin(), checkpoint.entries.end() - 2);
  write_safetensors(path, missing);
  EXPECT_NE(load_error(path, "mlp").find("a tensor named 'mlp.down_proj.weight'"), std::string::npos);

  std::vector<SafetensorsWriteEntry> wrong_dtype = checkpoint.entries;
  wrong_dtype[0].dtype = DType::kUInt8;
  write_safetensors(path, wrong_dtype);
  EXPECT_NE(load_error(path, "mlp").find("mlp.gate_proj.weight"), std::string::npos);

  std::vector<SafetensorsWriteEntry> wrong_scales = checkpoint.entries;
  wrong_scales[1].shape = {2, 3};
  write_safetensors(path, wrong_scales);
  EXPECT_NE(load_error(path, "mlp").find("weight_scale_inv'': expected shape [3, 2]"), std::string::npos);

  const Checkpoint odd(256, 320, "mlp");  // I = 320 cannot stack gate and up in 128-row blocks
  write_safetensors(path, odd.entries);
  EXPECT_NE(load_error(path, "mlp").find("multiples of 128"), std::string::npos);
  EXPECT_NE(load_error(path, "other").find("'other.gate_proj.weight'"), std::string::npos);
}

TEST(FfnAccuracy, BarRejectsWrongOrNonFiniteOutput) {
  const std::vector<double> reference = {1.0, -2.0, 3.0, 0.5};
  const std::vector<std::int64_t> rows = {0};
  std::vector<std::uint16_t> y;
  for (double v : reference) y.push_back(float_to_bf16(static_cast<float>(v)));
  EXPECT_TRUE(accuracy_ok(compare_with_reference(y, 4, rows, reference)));
  std::vector<std::uint16_t> nan = y;
  nan[2] = 0x7FC0;
  EXPECT_FALSE(accuracy_ok(compare_with_reference(nan, 4, rows, reference)));
  std::vector<std::uint16_t> scaled = y;
  scaled[0] = float_to_bf16(1.5f);
  EXPECT_FALSE(accuracy_ok(compare_with_reference(scaled, 4, rows, reference)));
}

}  // namespace
}  // namespace lowbit::tools
