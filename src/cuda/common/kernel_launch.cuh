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
#include <mutex>
#include <vector>

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
  dim3 cluster = dim3(1, 1, 1);  // otherwise this cluster shape (CUTLASS kernels), if not 1x1x1
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
  const dim3 cluster = launch.cluster_along_y ? dim3(1, launch.grid.y, 1) : launch.cluster;
  if (cluster.x * cluster.y * cluster.z > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count].val.clusterDim.x = cluster.x;
    attributes[count].val.clusterDim.y = cluster.y;
    attributes[count].val.clusterDim.z = cluster.z;
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

// Opts `kernel` in to `bytes` of dynamic shared memory on the current device. Without an opt-in a
// kernel gets 48 KB less its static shared memory, so the first launch with dynamic shared memory
// asks the kernel what it is allowed now. The opt-in lasts for the process, and
// cudaFuncGetAttributes / cudaFuncSetAttribute cost microseconds of host time, as much as a small
// decode kernel runs: so each is called once per device, kernel and larger size.
inline cudaError_t opt_in_shared_bytes(const void* kernel, std::size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  int device = 0;
  const cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  struct Allowed {
    int device;
    const void* kernel;
    std::size_t bytes;  // the dynamic shared memory the kernel may launch with
  };
  static std::mutex mutex;
  static std::vector<Allowed> allowed;
  const std::lock_guard<std::mutex> lock(mutex);
  Allowed* known = nullptr;
  for (Allowed& a : allowed) {
    if (a.device == device && a.kernel == kernel) known = &a;
  }
  if (known == nullptr) {
    cudaFuncAttributes attributes{};
    const cudaError_t queried = cudaFuncGetAttributes(&attributes, kernel);
    if (queried != cudaSuccess) return queried;
    allowed.push_back(
        {device, kernel, static_cast<std::size_t>(attributes.maxDynamicSharedSizeBytes)});
    known = &allowed.back();
  }
  if (known->bytes >= bytes) return cudaSuccess;
  const cudaError_t set = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(bytes));
  if (set != cudaSuccess) return set;
  known->bytes = bytes;
  return cudaSuccess;
}

template <typename Param>
inline cudaError_t allow_shared_bytes(void (*kernel)(Param), const KernelLaunch& launch) {
  return opt_in_shared_bytes(reinterpret_cast<const void*>(kernel), launch.shared_bytes);
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
