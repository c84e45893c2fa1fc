// The frame of lowbit's own prefill tiles (block_fp8_gemm_tall.cuh): one block of a 2-block
// cluster with a producer warpgroup (one thread issues the TMA copies) and two consumer
// warpgroups, over a shared-memory ring of stages, each holding one K block of A, of B and of
// the block's activation scales, with a full and an empty mbarrier.
#pragma once

#include <cooperative_groups.h>
#include <cuda.h>

#include <cstdint>

#include "../common/bulk_copy.cuh"
#include "../common/gemv_wgmma.cuh"

namespace lowbit::cuda::own_prefill {

constexpr int kConsumerWarps = 8;  // two warpgroups
constexpr int kThreads = 128 + 32 * kConsumerWarps;
// setmaxnreg moves the producer's registers to the consumers: 40 + 2 x 232 = 3 x 168 per thread,
// the launch's. A producer that needs more (kWideProducer) takes 48 and leaves its consumers 224.
template <bool kWideProducer>
constexpr int kProducerRegisters = kWideProducer ? 48 : 40;
template <bool kWideProducer>
constexpr int kConsumerRegisters = kWideProducer ? 224 : 232;

// A consumer thread's place: its warpgroup (64 tokens each), lane, and the first of its two
// fragment rows in the warpgroup's first 64 tokens (the other is row_lo + 8).
struct ConsumerThread {
  int thread, group, lane, row_lo;
};
__device__ __forceinline__ ConsumerThread consumer_thread() {
  const int thread = threadIdx.x - 128;  // 0..255
  const int group = thread / 128, lane = thread % 32;
  return {thread, group, lane, 64 * group + 16 * ((thread / 32) % 4) + lane / 4};
}

struct ConsumerRing {
  std::uint32_t a_ring, b_ring;
  std::uint32_t out_tile;  // the output staging buffer (kOutBytes of run_block; 1024-aligned)
  const float* scale_ring;
  std::uint64_t* full;
  std::uint64_t* empty;
};

// Keeps the compiler from moving accesses of `sum` across a wgmma issue or wait.
template <int kValues>
__device__ __forceinline__ void fence_sum(float (&sum)[kValues]) {
#pragma unroll
  for (int v = 0; v < kValues; ++v) gemv_wgmma::fence_operand(sum[v]);
}

// Shared memory of a block: an output staging buffer of kOutBytes (a multiple of 1024, or 0),
// the ring of kStages stages (A, then B, then kScales floats of activation scales per stage)
// and its barriers.
template <int kStages, int kABytes, int kBBytes, int kScales, int kOutBytes = 0>
constexpr int shared_bytes() {
  return 1024 + kOutBytes + kStages * (kABytes + kBBytes + 4 * kScales) + 2 * kStages * 8;
}

// The body of one block: carves the ring, initializes the barriers (the empty ones take
// `empty_arrivals`: one from every consumer warp of each block that reads the stage), and runs
//   produce(rank, cluster, clusters, a_ring, b_ring, scale_ring, full, empty)
// on thread 0 and consume(rank, cluster, clusters, ring) on the consumer warpgroups.
// `maps` are the tensor maps to prefetch.
template <int kStages, int kABytes, int kBBytes, int kScales, int kOutBytes, bool kWideProducer,
          typename Produce, typename Consume>
__device__ __forceinline__ void run_block(const CUtensorMap& a_map, const CUtensorMap& b_map,
                                          std::uint32_t empty_arrivals, Produce produce,
                                          Consume consume) {
  extern __shared__ __align__(1024) unsigned char shared[];
  const std::uint32_t raw = shared_address(shared);
  const std::uint32_t out_tile = (raw + 1023) & ~1023u;
  const std::uint32_t a_ring = out_tile + kOutBytes;
  const std::uint32_t b_ring = a_ring + kStages * kABytes;
  unsigned char* base = shared + (a_ring - raw);
  auto* scale_ring = reinterpret_cast<float*>(base + kStages * (kABytes + kBBytes));
  auto* full = reinterpret_cast<std::uint64_t*>(scale_ring + kStages * kScales);
  std::uint64_t* empty = full + kStages;
  namespace cg = cooperative_groups;
  cg::cluster_group cluster_group = cg::this_cluster();
  const unsigned rank = blockIdx.y;
  const int cluster = blockIdx.x, clusters = gridDim.x;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(&full[s], 1);                     // the producer's expect-bytes
      mbarrier_init(&empty[s], empty_arrivals);
    }
    fence_barrier_init();
  }
  // Both blocks' barriers exist before either copies into or arrives on the other's.
  cluster_group.sync();
  if (threadIdx.x < 128) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(
        kProducerRegisters<kWideProducer>));
    if (threadIdx.x == 0) {
      prefetch_tensor_map(a_map);
      prefetch_tensor_map(b_map);
      produce(rank, cluster, clusters, a_ring, b_ring, scale_ring, full, empty);
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(
        kConsumerRegisters<kWideProducer>));
    consume(rank, cluster, clusters,
            ConsumerRing{a_ring, b_ring, out_tile, scale_ring, full, empty});
  }
  // Neither block leaves while the other may still arrive on its barriers.
  cluster_group.sync();
}

}  // namespace lowbit::cuda::own_prefill
