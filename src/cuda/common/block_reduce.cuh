// Block-wide reduction of one float: warp shuffles, then one value per warp through shared
// memory. Every thread gets the result.
#pragma once

#include <cuda_runtime.h>

namespace lowbit::cuda {

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// blockDim.x is a multiple of 32 and scratch holds one float per warp.
template <typename Op>
__device__ float block_reduce(float value, Op op, float* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xFFFFFFFFu, value, offset));
  }
  __syncthreads();  // scratch may still be read from a previous reduction
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  value = scratch[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) value = op(value, scratch[w]);
  return value;
}

}  // namespace lowbit::cuda
