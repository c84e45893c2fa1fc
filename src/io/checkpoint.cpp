// Readers of DeepSeek-V3 block-FP8 and ModelOpt NVFP4 weights from safetensors (layouts in
// include/lowbit/checkpoint.h).
#include "lowbit/checkpoint.h"

#include <vector>

#include "lowbit/error.h"

namespace lowbit {
namespace {

constexpr const char* kOp = "read_checkpoint";

// The view of `name` with the dtype and exact shape expected.
TensorView tensor(const SafetensorsFile& file, const std::string& name, DType dtype,
                  const std::vector<std::int64_t>& shape) {
  const TensorView view = file.view(name, dtype);
  bool same = view.rank == static_cast<int>(shape.size());
  for (int d = 0; same && d < view.rank; ++d) same = view.shape[d] == shape[d];
  if (!same) {
    std::string expected = "[";
    for (std::size_t d = 0; d < shape.size(); ++d) expected += (d ? ", " : "") + std::to_string(shape[d]);
    throw Error(kOp, file.path() + ": tensor '" + name + "'", "shape " + expected + "]",
                view.describe());
  }
  return view;
}

TensorView matrix(const SafetensorsFile& file, const std::string& name, DType dtype) {
  const TensorView view = file.view(name, dtype);
  if (view.rank != 2) {
    throw Error(kOp, file.path() + ": tensor '" + name + "'", "rank 2", view.describe());
  }
  return view;
}

}  // namespace

BlockFp8Weight read_block_fp8_weight(const SafetensorsFile& file, const std::string& name) {
  BlockFp8Weight result;
  result.weight = matrix(file, name + ".weight", DType::kFP8E4M3);
  const std::int64_t n = result.weight.shape[0], k = result.weight.shape[1];
  result.scales = tensor(file, name + ".weight_scale_inv", DType::kFP32,
                         {(n + 127) / 128, (k + 127) / 128});
  return result;
}

Nvfp4Weight read_modelopt_nvfp4_weight(const SafetensorsFile& file, const std::string& name) {
  Nvfp4Weight result;
  result.packed = matrix(file, name + ".weight", DType::kUInt8);
  const std::int64_t n = result.packed.shape[0], k = 2 * result.packed.shape[1];
  if (k % 16 != 0) {
    throw Error(kOp, file.path() + ": tensor '" + name + ".weight'",
                "K = 2 x columns a multiple of 16", "K = " + std::to_string(k));
  }
  result.block_scales = tensor(file, name + ".weight_scale", DType::kFP8E4M3, {n, k / 16});
  result.global_scale = file.view(name + ".weight_scale_2", DType::kFP32);
  if (result.global_scale.numel() != 1 || result.global_scale.rank > 1) {
    throw Error(kOp, file.path() + ": tensor '" + name + ".weight_scale_2'", "shape [] or [1]",
                result.global_scale.describe());
  }
  // One element either way; callers get the [1] view the nvfp4 ops take.
  result.global_scale.rank = 1;
  result.global_scale.shape[0] = 1;
  result.global_scale.strides[0] = 1;
  return result;
}

}  // namespace lowbit
