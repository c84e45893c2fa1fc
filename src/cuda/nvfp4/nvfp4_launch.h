// Host-callable launchers of the sm_90a NVFP4 kernels (arguments validated by src/ops).
#pragma once

#include <cstdint>

#include "lowbit/tensor.h"

namespace lowbit::cuda {

struct Nvfp4QuantizeParams {
  const void* weight;  // [rows, cols] rows of `dtype`
  DType dtype;
  std::int64_t rows, cols, row_stride;
  std::uint8_t* packed;        // [rows, cols / 2]
  std::uint8_t* block_scales;  // [rows, cols / 16]
  float* global_scale;         // [1]
  bool global_scale_is_input;
  std::uint32_t* amax_bits;    // workspace (when the global scale is computed)
};
void launch_nvfp4_quantize_weight(const Nvfp4QuantizeParams& p, cudaStream_t stream);

struct Nvfp4DequantizeParams {
  const std::uint8_t* packed;
  const std::uint8_t* block_scales;
  const float* global_scale;
  void* output;  // contiguous [rows, cols] of `dtype`
  DType dtype;
  std::int64_t rows, cols;
};
void launch_nvfp4_dequantize_weight(const Nvfp4DequantizeParams& p, cudaStream_t stream);

// Dense when `indices` is null, 2:4 sparse otherwise; weights in GEMV layout.
struct Nvfp4GemvParams {
  const std::uint16_t* x;  // bf16 [tokens, cols]
  std::int64_t tokens, x_row_stride;
  std::int64_t rows, cols, experts;  // per expert: [rows, cols] logical weight
  const std::uint8_t* weights;       // dense codes or 2:4 values
  const std::uint8_t* indices;       // 2:4 indices or null
  const std::uint8_t* block_scales;
  const float* global_scales;        // [experts]
  std::uint16_t* output;             // bf16 [output_rows, rows]
  std::int64_t output_rows, output_row_stride;
  const std::int32_t* expert_ids;    // [slots]; null: one slot of expert 0 over every x row
  const std::int32_t* slot_offsets;  // [slots + 1] or null
  const std::int32_t* token_ids;     // or null
  std::int64_t slots;
  bool dependent_launch = false;  // programmatic dependent launch (common/kernel_launch.cuh)
  // Under it, the balanced kernels' L2 prefetch of each warp's first round, aimed by a routing
  // read before the wait (sm90_nvfp4_gemv_early_prefetch.cuh).
  bool prefetch_before_wait = true;
};
void launch_nvfp4_gemv(const Nvfp4GemvParams& p, cudaStream_t stream);

}  // namespace lowbit::cuda
