// Raw-pointer interface between the op layer (src/ops/quant.cpp) and the sm_90a kernel.
// No CUDA header: the host layer compiles with the C++ compiler alone.
#pragma once

#include <cstdint>

#include "lowbit/tensor.h"

namespace lowbit::cuda {

struct PerTokenGroupQuantParams {
  const void* input;             // [rows, cols] of input_dtype, rows input_row_stride apart
  void* output;                  // [rows, cols] of output_dtype, rows output_row_stride apart
  float* scales;                 // scale(m, g) at m * scale_stride_row + g * scale_stride_group
  std::int64_t rows;
  std::int64_t cols;
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
};

void launch_per_token_group_quant(const PerTokenGroupQuantParams& params, cudaStream_t stream);

}  // namespace lowbit::cuda
