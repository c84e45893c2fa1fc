// Checkpoint layouts: a ModelOpt NVFP4 weight and a DeepSeek-V3 block-FP8 weight written to
// safetensors, read back as views, dequantized to the values they were quantized from; and every
// name, dtype and shape error.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/temp_path.h"
#include "lowbit/checkpoint.h"
#include "lowbit/error.h"
#include "lowbit/nvfp4.h"

namespace lowbit {
namespace {

std::string temp_path(const std::string& name) { return testing::temp_path("lowbit_ckpt_", name); }

std::string read_error(const std::string& path, bool nvfp4) {
  try {
    const SafetensorsFile file = SafetensorsFile::open(path);
    if (nvfp4) {
      read_modelopt_nvfp4_weight(file, "w");
    } else {
      read_block_fp8_weight(file, "w");
    }
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

struct Nvfp4Parts {
  std::vector<std::uint8_t> packed, scales;
  float global = 0;
  std::vector<float> dequantized;
};

Nvfp4Parts quantize_nvfp4(std::int64_t n, std::int64_t k) {
  std::vector<float> w(n * k);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (float& v : w) v = normal(rng);
  Nvfp4Parts parts{std::vector<std::uint8_t>(n * k / 2), std::vector<std::uint8_t>(n * k / 16), 0,
                   std::vector<float>(n * k)};
  Nvfp4QuantizeWeightArgs q;
  q.weight = TensorView::contiguous(w.data(), DType::kFP32, {n, k});
  q.packed = TensorView::contiguous(parts.packed.data(), DType::kUInt8, {n, k / 2});
  q.block_scales = TensorView::contiguous(parts.scales.data(), DType::kFP8E4M3, {n, k / 16});
  q.global_scale = TensorView::contiguous(&parts.global, DType::kFP32, {1});
  nvfp4_quantize_weight(q);
  Nvfp4DequantizeWeightArgs d;
  d.packed = q.packed;
  d.block_scales = q.block_scales;
  d.global_scale = q.global_scale;
  d.output = TensorView::contiguous(parts.dequantized.data(), DType::kFP32, {n, k});
  nvfp4_dequantize_weight(d);
  return parts;
}

TEST(Checkpoint, ModelOptNvfp4WeightRoundTrip) {
  const std::int64_t n = 24, k = 64;
  Nvfp4Parts parts = quantize_nvfp4(n, k);
  const std::string path = temp_path("nvfp4.safetensors");
  for (const bool scalar_global : {true, false}) {
    write_safetensors(path, {{"w.weight", DType::kUInt8, {n, k / 2}, parts.packed.data()},
                             {"w.weight_scale", DType::kFP8E4M3, {n, k / 16}, parts.scales.data()},
                             {"w.weight_scale_2", DType::kFP32,
                              scalar_global ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{1},
                              &parts.global}});
    const SafetensorsFile file = SafetensorsFile::open(path);
    const Nvfp4Weight weight = read_modelopt_nvfp4_weight(file, "w");
    EXPECT_EQ(weight.global_scale.rank, 1);
    EXPECT_EQ(*static_cast<const float*>(weight.global_scale.data), parts.global);
    std::vector<float> values(n * k);
    Nvfp4DequantizeWeightArgs d;
    d.packed = weight.packed;
    d.block_scales = weight.block_scales;
    d.global_scale = weight.global_scale;
    d.output = TensorView::contiguous(values.data(), DType::kFP32, {n, k});
    nvfp4_dequantize_weight(d);
    EXPECT_EQ(values, parts.dequantized);
  }
}

TEST(Checkpoint, ModelOptNvfp4Errors) {
  Nvfp4Parts parts = quantize_nvfp4(8, 32);
  const std::string path = temp_path("bad_nvfp4.safetensors");
  const float two_globals[2] = {1.0f, 2.0f};
  write_safetensors(path, {{"w.weight", DType::kUInt8, {8, 16}, parts.packed.data()},
                           {"w.weight_scale", DType::kFP8E4M3, {8, 2}, parts.scales.data()},
                           {"w.weight_scale_2", DType::kFP32, {2}, two_globals}});
  EXPECT_NE(read_error(path, true).find("weight_scale_2'': expected shape [] or [1]"), std::string::npos);
  write_safetensors(path, {{"w.weight", DType::kUInt8, {8, 16}, parts.packed.data()},
                           {"w.weight_scale", DType::kFP8E4M3, {8, 1}, parts.scales.data()},
                           {"w.weight_scale_2", DType::kFP32, {}, two_globals}});
  EXPECT_NE(read_error(path, true).find("weight_scale'': expected shape [8, 2]"), std::string::npos);
  write_safetensors(path, {{"w.weight", DType::kInt8, {8, 16}, parts.packed.data()}});
  EXPECT_NE(read_error(path, true).find("expected dtype U8"), std::string::npos);
  write_safetensors(path, {{"w.weight", DType::kUInt8, {8, 4}, parts.packed.data()}});
  EXPECT_NE(read_error(path, true).find("a multiple of 16"), std::string::npos);
  write_safetensors(path, {{"w.weight", DType::kUInt8, {8, 16}, parts.packed.data()}});
  EXPECT_NE(read_error(path, true).find("a tensor named 'w.weight_scale'"), std::string::npos);
}

TEST(Checkpoint, BlockFp8WeightAndErrors) {
  std::vector<std::uint8_t> codes(200 * 130, 0x38);
  std::vector<float> scales(2 * 2, 0.5f);
  const std::string path = temp_path("fp8.safetensors");
  write_safetensors(path, {{"w.weight", DType::kFP8E4M3, {200, 130}, codes.data()},
                           {"w.weight_scale_inv", DType::kFP32, {2, 2}, scales.data()}});
  {
    const SafetensorsFile file = SafetensorsFile::open(path);
    const BlockFp8Weight weight = read_block_fp8_weight(file, "w");
    EXPECT_EQ(weight.weight.shape[0], 200);
    EXPECT_EQ(weight.weight.shape[1], 130);
    EXPECT_EQ(weight.scales.shape[0], 2);
  }
  write_safetensors(path, {{"w.weight", DType::kFP8E4M3, {200, 130}, codes.data()},
                           {"w.weight_scale_inv", DType::kFP32, {4}, scales.data()}});
  EXPECT_NE(read_error(path, false).find("weight_scale_inv'': expected shape [2, 2]"), std::string::npos);
  write_safetensors(path, {{"w.weight", DType::kFP8E4M3, {26000}, codes.data()}});
  EXPECT_NE(read_error(path, false).find("expected rank 2"), std::string::npos);
  write_safetensors(path, {{"w.weight", DType::kFP8E5M2, {200, 130}, codes.data()}});
  EXPECT_NE(read_error(path, false).find("expected dtype F8_E4M3"), std::string::npos);
}

}  // namespace
}  // namespace lowbit
