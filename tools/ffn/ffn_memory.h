// Where `lowbit ffn` keeps its tensors: host memory for the CPU path, device memory for the GPU
// path. The layer code is the same for both; the ops pick CPU reference or CUDA kernel from the
// tensors' device.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "lowbit/tensor.h"

namespace lowbit::tools {

class FfnMemory {
 public:
  virtual ~FfnMemory() = default;
  virtual Device device() const = 0;
  // Filled with 0xFF bytes (NaN in bf16 and fp32), so an output never written shows as NaN.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void copy_in(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_out(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
};

std::unique_ptr<FfnMemory> make_host_memory();
#if LOWBIT_WITH_CUDA
std::unique_ptr<FfnMemory> make_cuda_memory();
#endif

}  // namespace lowbit::tools
