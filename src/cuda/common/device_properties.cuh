// Immutable properties of the current device, read once per device and cached (they never
// change, so the cache is not state any op depends on beyond the hardware itself).
#pragma once

#include <cuda_runtime.h>

#include <atomic>

#include "check.cuh"

namespace lowbit::cuda {

inline int current_device_sm_count(const char* op) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices] = {};
  int device = 0;
  check_cuda(cudaGetDevice(&device), op, "cudaGetDevice");
  if (device < kMaxDevices) {
    const int known = cached[device].load(std::memory_order_relaxed);
    if (known > 0) return known;
  }
  int count = 0;
  check_cuda(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device), op,
             "cudaDeviceGetAttribute");
  if (device < kMaxDevices) cached[device].store(count, std::memory_order_relaxed);
  return count;
}

}  // namespace lowbit::cuda
