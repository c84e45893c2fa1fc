// Launching a lowbit kernel of several parameters with the options of kernel_launch.cuh
// (programmatic dependent launch, clusters, dynamic shared memory).
#pragma once

#include <cuda_runtime.h>

#include "kernel_launch.cuh"

namespace lowbit::cuda {

// Launches `kernel(args...)` as `launch` describes on `stream`.
template <typename... Params, typename... Args>
inline cudaError_t launch_kernel_with(void (*kernel)(Params...), const KernelLaunch& launch,
                                      cudaStream_t stream, Args... args) {
  const cudaError_t status =
      opt_in_shared_bytes(reinterpret_cast<const void*>(kernel), launch.shared_bytes);
  if (status != cudaSuccess) return status;
  cudaLaunchAttribute attributes[2];
  const cudaLaunchConfig_t config = launch_config(launch, stream, attributes);
  return cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace lowbit::cuda
