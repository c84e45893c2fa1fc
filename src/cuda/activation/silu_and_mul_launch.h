// Raw-pointer interface of the sm_90a silu_and_mul kernel. No CUDA header.
#pragma once

#include <cstdint>

#include "lowbit/tensor.h"

namespace lowbit::cuda {

struct SiluAndMulParams {
  const void* input;  // [rows, 2 * cols] = [gate | up], bf16/fp16
  void* output;       // [rows, cols], bf16/fp16
  std::int64_t rows;
  std::int64_t cols;
  std::int64_t input_row_stride;   // elements
  std::int64_t output_row_stride;  // elements
  DType input_dtype;
  DType output_dtype;
  bool clamp;
  float limit;
  bool dependent_launch;  // launched with programmatic dependent launch (enable_pdl)
};

void launch_silu_and_mul(const char* op, const SiluAndMulParams& params, cudaStream_t stream);

}  // namespace lowbit::cuda
