// CUDA error checks that turn a failed runtime call into lowbit::Error.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "lowbit/error.h"

namespace lowbit::cuda {

inline void check_cuda(cudaError_t status, const char* op, const char* what) {
  if (status != cudaSuccess) {
    throw Error(op, what, "cudaSuccess", std::string(cudaGetErrorName(status)) + " (" +
                                             cudaGetErrorString(status) + ")");
  }
}

// After a launch: catches bad configurations without synchronizing the stream.
inline void check_launch(const char* op) { check_cuda(cudaGetLastError(), op, "kernel launch"); }

}  // namespace lowbit::cuda
