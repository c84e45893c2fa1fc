// Launching lowbit's own kernels: an optional cluster along the grid's y dimension (the K split of
// common/gemv_wgmma.cuh and common/gemv_tma.cuh, the block pairs of
// block_gemm/block_fp8_gemm_tall.cuh) and optional programmatic dependent launch.
//
// Programmatic dependent launch (PDL, sm_90): a kernel launched with it may start while the
// stream's previous kernel is still running, once every block of that kernel has called
// allow_dependent_launch() or exited. It must call wait_for_prerequisite_grids() before it reads
// anything the previous kernels write and before its own first global write (which could
// otherwise overwrite what they still read); only weights may be read before it. Both
// instructions return at once in a kernel launched without PDL, so the kernels call them
// unconditionally and the host decides per launch (the ops' `enable_pdl`).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace lowbit::cuda {

// Lets the stream's next kernel, if launched with PDL, start on the SMs this grid frees.
__device__ __forceinline__ void allow_dependent_launch() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// Waits until the kernels this one depends on have finished and their writes are visible.
__device__ __forceinline__ void wait_for_prerequisite_grids() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

struct KernelLaunch {
  dim3 grid;
  unsigned threads = 0;
  std::size_t shared_bytes = 0;
  bool cluster_along_y = false;  // the blocks of each grid column form one cluster
  bool dependent = false;        // programmatic dependent launch
};

// The launch configuration of `launch`; `attributes` (2 entries) backs config.attrs.
inline cudaLaunchConfig_t launch_config(const KernelLaunch& launch, cudaStream_t stream,
                                        cudaLaunchAttribute (&attributes)[2]) {
  cudaLaunchConfig_t config = {};
  config.gridDim = launch.grid;
  config.blockDim = dim3(launch.threads, 1, 1);
  config.dynamicSmemBytes = launch.shared_bytes;
  config.stream = stream;
  unsigned count = 0;
  if (launch.cluster_along_y && launch.grid.y > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count].val.clusterDim.x = 1;
    attributes[count].val.clusterDim.y = launch.grid.y;
    attributes[count].val.clusterDim.z = 1;
    ++count;
  }
  if (launch.dependent) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count].val.programmaticStreamSerializationAllowed = 1;
    ++count;
  }
  config.attrs = attributes;
  config.numAttrs = count;
  return config;
}

template <typename Param>
inline cudaError_t allow_shared_bytes(void (*kernel)(Param), const KernelLaunch& launch) {
  if (launch.shared_bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(launch.shared_bytes));
}

// Launches `kernel(param)` as `launch` describes on `stream`.
template <typename Param>
inline cudaError_t launch_kernel(void (*kernel)(Param), const Param& param,
                                 const KernelLaunch& launch, cudaStream_t stream) {
  const cudaError_t status = allow_shared_bytes(kernel, launch);
  if (status != cudaSuccess) return status;
  cudaLaunchAttribute attributes[2];
  const cudaLaunchConfig_t config = launch_config(launch, stream, attributes);
  return cudaLaunchKernelEx(&config, kernel, param);
}

// How many clusters of `launch` (one grid column each: cluster_along_y) the device holds at
// once; 0 when the query fails.
template <typename Param>
inline int resident_clusters(void (*kernel)(Param), const KernelLaunch& launch) {
  if (allow_shared_bytes(kernel, launch) != cudaSuccess) return 0;
  cudaLaunchAttribute attributes[2];
  const cudaLaunchConfig_t config = launch_config(launch, nullptr, attributes);
  int clusters = 0;
  return cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) == cudaSuccess ? clusters
                                                                                   : 0;
}

}  // namespace lowbit::cuda
