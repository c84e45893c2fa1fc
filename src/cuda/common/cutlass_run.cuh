// Runs a CUTLASS 3.x device GEMM (GemmUniversalAdapter's kernel): can_implement, the workspace's
// initialization, the kernel's parameters, and the launch on the caller's stream. A failure names
// the stage, the status and the problem shape in a lowbit::Error of `op`.
//
// The launch is lowbit's own rather than the adapter's initialize() + run(): those call
// cudaFuncSetAttribute twice per GEMM (dynamic shared memory, non-portable clusters), and on an
// H200 host they took 12.5-14.5 us per call against the 10-15 us a 4096 x 4096 GEMM runs at
// M = 64-128, so back-to-back calls on a stream were bound by the host. Here the shared memory
// opt-in happens once per device and kernel (common/kernel_launch.cuh) and the cluster needs no
// opt-in (at most 8 blocks, the portable size).
//
// `dependent`: programmatic dependent launch, only for kernels whose mainloop waits for the
// previous kernel before its first load and lets the next one launch at its start or after its
// mainloop (common/cutlass_programmatic.cuh); so the launch and the prologue overlap the
// previous kernel's tail. Launched without the attribute the wait returns at once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include "kernel_launch.cuh"
#include "lowbit/error.h"

namespace lowbit::cuda {

template <typename Gemm>
void run_cutlass_gemm(const char* op, const typename Gemm::Arguments& args, void* workspace,
                      cudaStream_t stream, std::int64_t m, std::int64_t n, std::int64_t k,
                      bool dependent) {
  using Kernel = typename Gemm::GemmKernel;
  using ClusterShape = typename Kernel::DispatchPolicy::ClusterShape;
  static_assert(cute::size(ClusterShape{}) <= 8, "a portable cluster size needs no opt-in");
  const auto fail = [&](const char* stage, const std::string& status) {
    throw Error(op, std::string("CUTLASS ") + stage, "kSuccess",
                status + " for M=" + std::to_string(m) + " N=" + std::to_string(n) +
                    " K=" + std::to_string(k));
  };
  cutlass::Status status = Gemm::can_implement(args);
  if (status != cutlass::Status::kSuccess) {
    fail("can_implement", cutlass::cutlassGetStatusString(status));
  }
  status = Kernel::initialize_workspace(args, workspace, stream, nullptr);
  if (status != cutlass::Status::kSuccess) {
    fail("initialize_workspace", cutlass::cutlassGetStatusString(status));
  }
  const typename Kernel::Params params = Kernel::to_underlying_arguments(args, workspace);
  KernelLaunch launch;
  launch.grid = Kernel::get_grid_shape(params);
  launch.threads = Kernel::MaxThreadsPerBlock;
  launch.shared_bytes = static_cast<std::size_t>(Kernel::SharedStorageSize);
  launch.cluster = dim3(cute::size<0>(ClusterShape{}), cute::size<1>(ClusterShape{}),
                        cute::size<2>(ClusterShape{}));
  launch.dependent = dependent;
  const cudaError_t launched =
      launch_kernel(cutlass::device_kernel<Kernel>, params, launch, stream);
  if (launched != cudaSuccess) fail("launch", cudaGetErrorString(launched));
}

}  // namespace lowbit::cuda
