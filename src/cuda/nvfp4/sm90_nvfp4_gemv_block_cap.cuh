// Dynamic shared memory that caps how many blocks of an NVFP4 GEMV kernel share an SM. Under
// programmatic dependent launch the next launch's blocks fill the SMs that the previous kernel
// frees first, as many to an SM as fit; where registers leave room for more blocks than a launch
// is shaped for, those SMs take the extra ones and others get fewer, so the grid's even split over
// SMs no longer holds. Included by sm90_nvfp4_gemv.cu only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "../common/check.cuh"

namespace lowbit::cuda::nvfp4_gemv {

// Dynamic shared memory for a launch of `kKernel`: `at_least` bytes, or more, so that no more
// than `blocks_per_sm` blocks fit on an SM. The staged 2:4 kernels need fewer registers
// (balanced: 91 against 128), so a fifth block would fit (2:4 DeepSeek-V3 down at M = 1 under
// graph + PDL on an H200: 18.2 us unpadded, 17.0-17.2 us padded; forty-third session).
template <auto kKernel>
std::size_t blocks_per_sm_shared_bytes(int blocks_per_sm, std::size_t at_least, const char* op) {
  constexpr int kMaxDevices = 64;
  static std::atomic<long long> cached[kMaxDevices] = {};  // padding + 1; 0: not known yet
  int device = 0;
  check_cuda(cudaGetDevice(&device), op, "cudaGetDevice");
  long long known = device < kMaxDevices ? cached[device].load(std::memory_order_relaxed) : 0;
  if (known == 0) {
    int per_sm = 0, reserved = 0;
    check_cuda(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device),
               op, "cudaDeviceGetAttribute");
    check_cuda(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device),
               op, "cudaDeviceGetAttribute");
    cudaFuncAttributes attributes{};
    check_cuda(cudaFuncGetAttributes(&attributes, kKernel), op, "cudaFuncGetAttributes");
    // One byte more than a share of (blocks_per_sm + 1) blocks, rounded up to 16.
    const long long share = per_sm / (blocks_per_sm + 1) - reserved -
                            static_cast<long long>(attributes.sharedSizeBytes) + 1;
    known = (std::max(share, 0LL) + 15) / 16 * 16 + 1;
    if (device < kMaxDevices) cached[device].store(known, std::memory_order_relaxed);
  }
  return std::max(at_least, static_cast<std::size_t>(known - 1));
}

// The same, but only where the kernel's registers would let more than `blocks_per_sm` blocks of
// `threads` share an SM (otherwise none: the padding would only take L1's share of the SM).
template <auto kKernel>
std::size_t cap_blocks_shared_bytes(int blocks_per_sm, int threads, const char* op) {
  static const bool pad = [&] {  // one answer for every device: all run the sm_90a build
    int fit = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kKernel, threads, 0), op,
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return fit > blocks_per_sm;
  }();
  return pad ? blocks_per_sm_shared_bytes<kKernel>(blocks_per_sm, 0, op) : 0;
}

}  // namespace lowbit::cuda::nvfp4_gemv
