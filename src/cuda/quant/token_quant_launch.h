// Raw-pointer interface of the sm_90a per-token and per-tensor quantization kernels.
// No CUDA header.
#pragma once

#include <cstdint>

#include "lowbit/formats.h"
#include "lowbit/tensor.h"

namespace lowbit::cuda {

struct RowQuantParams {
  const void* input;  // [rows, cols] of input_dtype, rows input_row_stride apart
  void* output;       // [rows, cols] of output_dtype (1 byte), rows output_row_stride apart
  std::int64_t rows;
  std::int64_t cols;
  std::int64_t input_row_stride;   // elements
  std::int64_t output_row_stride;  // elements
  DType input_dtype;
  DType output_dtype;
  float eps;
  bool dependent_launch;  // launched with programmatic dependent launch (enable_pdl)
  bool release_at_start = true;  // set by the launchers (quant_releases_at_start)
};

// The largest code magnitude of a quantized output: 448 for fp8 e4m3, 127 for int8.
inline float quantized_max(DType output) {
  return output == DType::kFP8E4M3 ? kFP8E4M3Max : kInt8Max;
}

// Per-token: symmetric (zero_points == nullptr; fp8 or int8, amax_bound = scale_ub or +Inf) or
// asymmetric int8 (zero_points != nullptr).
void launch_per_token_quant(const char* op, const RowQuantParams& params, float* scales,
                            std::int32_t* zero_points, float amax_bound, cudaStream_t stream);

// Per-tensor (sm90_tensor_quant.cu). Dynamic: quantizes with s = max(min(amax, amax_bound), eps)
// / qmax and writes s to `scale`; tensors of up to 1 MB in one launch with no workspace, larger
// ones by zeroing `amax_workspace` (4 bytes), reducing |x| into it, then quantizing. Static:
// quantizes with the s stored in `scale`.
void launch_per_tensor_quant(const char* op, const RowQuantParams& params, float* scale,
                             bool dynamic, float amax_bound, std::uint32_t* amax_workspace,
                             cudaStream_t stream);

}  // namespace lowbit::cuda
