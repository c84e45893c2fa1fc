// Test-only: a kernel that stands for the producer of an op's inputs under programmatic
// dependent launch. It lets the stream's next kernel start at once, then holds its writes until
// the host has enqueued that kernel (and a delay more), so a dependent that read the inputs
// before waiting for the producer would see the old contents. Run the op once before: the first
// launch of a kernel loads its module, which waits for the device to go idle (measured: each
// such test then took the producer's 1 s timeout and could not fail).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

namespace lowbit::testing {

struct CopyJob {
  void* destination = nullptr;
  const void* source = nullptr;
  std::int64_t bytes = 0;
};

struct SlowCopies {
  CopyJob jobs[4];
  int count = 0;
  unsigned delay_ns = 0;                  // after the release
  const volatile int* release = nullptr;  // host-mapped flag; set by HeldProducer::release()
};

// static: each test file that includes this header gets its own copy.
static __global__ void slow_copies_kernel(SlowCopies copies) {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  auto now = [] {
    unsigned long long t = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  };
  const unsigned long long start = now();
  // At most one second, so that a test that never releases fails instead of hanging.
  while (*copies.release == 0 && now() - start < 1000000000ull) {
  }
  const unsigned long long released = now();
  while (now() - released < copies.delay_ns) {
  }
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

// Enqueue(copies, stream), then the op under test on the same stream, then release().
// Nothing is allocated until enqueue(), and release() without it does nothing.
class HeldProducer {
 public:
  HeldProducer() = default;
  ~HeldProducer() { cudaFreeHost(flag_); }
  HeldProducer(const HeldProducer&) = delete;
  HeldProducer& operator=(const HeldProducer&) = delete;

  // A few blocks, so the dependent's blocks find free SMs.
  cudaError_t enqueue(SlowCopies copies, cudaStream_t stream) {
    if (flag_ == nullptr) {
      const cudaError_t status = cudaHostAlloc(&flag_, sizeof(int), cudaHostAllocMapped);
      if (status != cudaSuccess) return status;
      const cudaError_t mapped = cudaHostGetDevicePointer(&device_flag_, flag_, 0);
      if (mapped != cudaSuccess) return mapped;
    }
    *static_cast<volatile int*>(flag_) = 0;
    copies.release = static_cast<const volatile int*>(device_flag_);
    slow_copies_kernel<<<4, 256, 0, stream>>>(copies);
    return cudaGetLastError();
  }
  void release() {
    if (flag_ != nullptr) *static_cast<volatile int*>(flag_) = 1;
  }

 private:
  void* flag_ = nullptr;
  void* device_flag_ = nullptr;
};

// Runs `op`, which must launch on `stream` with enable_pdl, behind a held producer that copies
// `bytes` from `late` over `input` `delay_ns` after `op` is enqueued, and waits for the stream.
// An op that read its input before its PDL wait would read what `input` held before.
inline cudaError_t run_behind_late_input(void* input, const void* late, std::int64_t bytes,
                                         cudaStream_t stream, const std::function<void()>& op,
                                         unsigned delay_ns = 50000) {
  HeldProducer producer;
  SlowCopies copies;
  copies.jobs[0] = {input, late, bytes};
  copies.count = 1;
  copies.delay_ns = delay_ns;
  const cudaError_t enqueued = producer.enqueue(copies, stream);
  if (enqueued != cudaSuccess) return enqueued;
  op();
  producer.release();
  return cudaStreamSynchronize(stream);
}

}  // namespace lowbit::testing
