// Test-only: a kernel that stands for the producer of an op's inputs under programmatic
// dependent launch. It lets the stream's next kernel start at once, then writes the inputs only
// after a delay, so a dependent that read them before waiting for it would see the old contents.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace lowbit::testing {

struct CopyJob {
  void* destination = nullptr;
  const void* source = nullptr;
  std::int64_t bytes = 0;
};

struct SlowCopies {
  CopyJob jobs[4];
  int count = 0;
  unsigned delay_ns = 0;
};

// static: each test file that includes this header gets its own copy.
static __global__ void slow_copies_kernel(SlowCopies copies) {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < copies.delay_ns);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (int j = 0; j < copies.count; ++j) {
    auto* out = static_cast<unsigned char*>(copies.jobs[j].destination);
    const auto* in = static_cast<const unsigned char*>(copies.jobs[j].source);
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
         i < copies.jobs[j].bytes; i += stride) {
      out[i] = in[i];
    }
  }
}

// Enqueues the delayed copies on `stream` (a few blocks, so the dependent's blocks find free SMs).
inline cudaError_t slow_copies(const SlowCopies& copies, cudaStream_t stream) {
  slow_copies_kernel<<<4, 256, 0, stream>>>(copies);
  return cudaGetLastError();
}

}  // namespace lowbit::testing
