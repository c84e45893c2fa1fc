// Raw-pointer interface between the op layer and the sm_90a group quantization kernels, which
// serve per_token_group_quant (x read as is) and silu_and_mul_quant (x = silu(gate) * up).
// No CUDA header: the host layer compiles with the C++ compiler alone.
#pragma once

#include <cstdint>

#include "lowbit/tensor.h"

namespace lowbit::cuda {

struct GroupQuantParams {
  const void* input;             // rows x cols values (or gate values) of input_dtype
  void* output;                  // [rows, cols] of output_dtype, rows output_row_stride apart
  float* scales;                 // scale(m, g) at m * scale_stride_row + g * scale_stride_group
  std::int64_t rows;
  std::int64_t cols;               // quantized columns (H for silu_and_mul_quant)
  std::int64_t input_row_stride;   // elements
  std::int64_t output_row_stride;  // elements
  std::int64_t scale_stride_row;
  std::int64_t scale_stride_group;
  DType input_dtype;
  DType output_dtype;
  int group_size;
  float eps;
  float amax_bound;  // scale_ub, or +Inf when absent
  bool power_of_two_scale;
  bool silu_mul;     // x = silu(input[:, c]) * input[:, cols + c]
  bool clamp;        // SwiGLU clamp with `limit` (silu_mul only)
  float limit;
  bool dependent_launch;  // launched with programmatic dependent launch (enable_pdl)
};

void launch_group_quant(const char* op, const GroupQuantParams& params, cudaStream_t stream);

}  // namespace lowbit::cuda
