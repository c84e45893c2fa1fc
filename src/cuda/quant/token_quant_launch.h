// Raw-pointer interface of the sm_90a per-token and per-tensor quantization kernels.
// No CUDA header.
#pragma once

#include <cstdint>

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
};

// Per-token: symmetric (zero_points == nullptr; fp8 or int8, amax_bound = scale_ub or +Inf) or
// asymmetric int8 (zero_points != nullptr).
void launch_per_token_quant(const char* op, const RowQuantParams& params, float* scales,
                            std::int32_t* zero_points, float amax_bound, cudaStream_t stream);

// Per-tensor. Dynamic: zeroes `amax_workspace` (4 bytes), reduces |x| into it, then quantizes
// with s = max(min(amax, amax_bound), eps) / qmax and writes s to `scale`. Static: quantizes with
// the s stored in `scale`.
void launch_per_tensor_quant(const char* op, const RowQuantParams& params, float* scale,
                             bool dynamic, float amax_bound, std::uint32_t* amax_workspace,
                             cudaStream_t stream);

}  // namespace lowbit::cuda
