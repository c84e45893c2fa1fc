// Launching a decode GEMV whose grid's y dimension splits K over the blocks of one cluster
// (common/gemv_wgmma.cuh, common/gemv_tma.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace lowbit::cuda {

// Launches `kernel(param)` on `grid` blocks of `threads` with `shared_bytes` of dynamic shared
// memory; when grid.y > 1 the blocks of each grid column form one cluster.
template <typename Param>
inline cudaError_t launch_with_cluster_along_y(void (*kernel)(Param), const Param& param,
                                               dim3 grid, unsigned threads,
                                               std::size_t shared_bytes, cudaStream_t stream) {
  if (shared_bytes > 48 * 1024) {
    const cudaError_t status = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes));
    if (status != cudaSuccess) return status;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(threads, 1, 1);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute cluster;
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 1;
  cluster.val.clusterDim.y = grid.y;
  cluster.val.clusterDim.z = 1;
  if (grid.y > 1) {
    config.attrs = &cluster;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&config, kernel, param);
}

}  // namespace lowbit::cuda
