// StreamHold: a kernel that spins until the host releases it, and an L2 sweep before it.
#include "stream_hold.cuh"

#include <atomic>

#include "lowbit/error.h"

namespace lowbit::bench {

namespace {

// 100 ms: far beyond the host time to queue a batch (<= 200 launches), short enough that a
// launch which waits for the held stream fails the bench instead of hanging it.
constexpr unsigned long long kHoldTimeoutNs = 100'000'000ull;

__device__ unsigned long long global_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__global__ void hold_kernel(const volatile int* release, int* timed_out) {
  const unsigned long long start = global_ns();
  while (*release == 0) {
    if (global_ns() - start > kHoldTimeoutNs) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);
  }
}

// Reads every 16-byte vector once (through L2, so that its lines replace what was there); the
// XOR keeps the loads alive and is almost never written.
__global__ void sweep_kernel(const uint4* data, std::int64_t vectors, unsigned* sink) {
  unsigned word = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < vectors; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(data + i);
    word ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (word == 0x9E3779B9u) sink[0] = word;
}

}  // namespace

StreamHold::StreamHold(std::int64_t l2_bytes)
    : sweep_bytes_(2 * l2_bytes + 16), sweep_(static_cast<std::size_t>(sweep_bytes_)) {
  void* host = nullptr;
  check(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
  release_host_ = static_cast<volatile int*>(host);
  timed_out_host_ = release_host_ + 1;
  void* device = nullptr;
  check(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");
  release_device_ = static_cast<int*>(device);
  timed_out_device_ = release_device_ + 1;
  check(cudaMemset(sweep_.get(), 1, static_cast<std::size_t>(sweep_bytes_)), "cudaMemset");
}

StreamHold::~StreamHold() { cudaFreeHost(const_cast<int*>(release_host_)); }

void StreamHold::arm(cudaStream_t stream) {
  *release_host_ = 0;
  *timed_out_host_ = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const std::int64_t vectors = sweep_bytes_ / 16 - 1;  // the last 16 bytes are the sink
  sweep_kernel<<<1024, 256, 0, stream>>>(static_cast<const uint4*>(sweep_.get()), vectors,
                                         static_cast<unsigned*>(sweep_.get()) + vectors * 4);
  hold_kernel<<<1, 1, 0, stream>>>(release_device_, timed_out_device_);
  check(cudaGetLastError(), "stream hold launch");
}

void StreamHold::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *release_host_ = 1;
}

void StreamHold::throw_if_timed_out() const {
  if (*timed_out_host_ != 0) {
    throw Error("bench", "stream hold", "released within 100 ms",
                "timed out: a launch in the timed batch waited for the held stream");
  }
}

}  // namespace lowbit::bench
