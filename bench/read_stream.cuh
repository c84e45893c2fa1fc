// The plain read stream of the benches' same-size floor (harness.cu, measure_read_us) and of
// the read-floor probe (probes/read_floor_probe.cu): a grid-stride read of 16-byte vectors.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace lowbit::bench {

// Each thread XORs its 16-byte vectors (kDepth independent loads in flight per iteration) and
// writes one word per block, so that no load is removed. Under programmatic dependent launch only
// that write waits for the previous launch.
template <int kDepth>
__global__ void read_stream_kernel(const uint4* data, std::int64_t vectors, unsigned* sink) {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  uint4 sum = make_uint4(0, 0, 0, 0);
  for (; i + (kDepth - 1) * stride < vectors; i += kDepth * stride) {
    uint4 v[kDepth];
#pragma unroll
    for (int u = 0; u < kDepth; ++u) v[u] = __ldcs(data + i + u * stride);
#pragma unroll
    for (int u = 0; u < kDepth; ++u) sum.x ^= v[u].x, sum.y ^= v[u].y, sum.z ^= v[u].z, sum.w ^= v[u].w;
  }
  for (; i < vectors; i += stride) {
    const uint4 v = __ldcs(data + i);
    sum.x ^= v.x, sum.y ^= v.y, sum.z ^= v.z, sum.w ^= v.w;
  }
  const unsigned word = sum.x ^ sum.y ^ sum.z ^ sum.w;
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  if (word == 0x9E3779B9u) sink[blockIdx.x] = word;  // almost never: keeps the loads live
}

}  // namespace lowbit::bench
