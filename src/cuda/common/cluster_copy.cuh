// Shared memory across a thread-block cluster (PTX ISA 7.8, sm_90): arriving on a barrier in
// another block of the cluster, and a TMA box copied into every block of a cluster mask. The
// prefill kernels of block_fp8_mm use them to share one tile load between a block pair; its
// split-K tile pushes partial sums into another block's shared memory with them.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "bulk_copy.cuh"

namespace lowbit::cuda {

// One arrival on the barrier at `barrier`'s offset in block `rank` of the cluster. (With
// .release.cluster ptxas put a MEMBAR.ALL.GPU before every arrival: the kernel ran at half speed.)
__device__ __forceinline__ void mbarrier_arrive_in(std::uint64_t* barrier, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(
          shared_address(barrier)),
      "r"(rank)
      : "memory");
}

// The address in block `rank` of the cluster of this block's shared address `local`.
__device__ __forceinline__ std::uint32_t cluster_address(std::uint32_t local, unsigned rank) {
  std::uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}

// Four floats into another block's shared memory at `remote` (from cluster_address).
__device__ __forceinline__ void store_in_cluster(std::uint32_t remote, float a, float b, float c,
                                                 float d) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(remote), "f"(a),
               "f"(b), "f"(c), "f"(d)
               : "memory");
}

// One arrival on the barrier at `barrier`'s offset in block `rank` that releases this thread's
// earlier stores to the cluster: a waiter with mbarrier_wait_acquire_cluster sees them.
__device__ __forceinline__ void mbarrier_arrive_release_in(std::uint64_t* barrier,
                                                           unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(
          shared_address(barrier)),
      "r"(rank)
      : "memory");
}

// Waits for phase `phase` of this block's `barrier`, acquiring what the arrivals released.
__device__ __forceinline__ void mbarrier_wait_acquire_cluster(std::uint64_t* barrier,
                                                              std::uint32_t phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_again:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_again;\n"
      "}\n" ::"r"(shared_address(barrier)),
      "r"(phase)
      : "memory");
}

// Sixteen bytes into another block's shared memory at `remote` that count, once written, as
// transaction bytes on that block's barrier at `remote_barrier` (both from cluster_address): the
// receiver waits for the data itself (mbarrier_wait_acquire_cluster), with no arrival or fence.
__device__ __forceinline__ void store_async_in_cluster(std::uint32_t remote, uint4 value,
                                                       std::uint32_t remote_barrier) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, "
      "[%5];\n" ::"r"(remote),
      "r"(value.x), "r"(value.y), "r"(value.z), "r"(value.w), "r"(remote_barrier)
      : "memory");
}

// Sixteen bytes from this block's shared memory at `local`.
__device__ __forceinline__ uint4 load_shared_uint4(std::uint32_t local) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(local)
               : "memory");
  return v;
}

// Four floats from this block's shared memory at `local`.
__device__ __forceinline__ float4 load_shared_float4(std::uint32_t local) {
  const uint4 v = load_shared_uint4(local);
  return make_float4(__uint_as_float(v.x), __uint_as_float(v.y), __uint_as_float(v.z),
                     __uint_as_float(v.w));
}

// The cluster barrier split in two: every thread of the cluster arrives (releasing its earlier
// writes, e.g. a barrier's initialization), and later waits for all arrivals (acquiring them).
// Arriving early and waiting late costs nothing where everyone arrived long before.
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// Box (k0, row0) of `map` into shared memory at `destination` in every block of `mask`, each
// completing on its barrier at `barrier`'s offset.
__device__ __forceinline__ void load_box_multicast(const CUtensorMap& map,
                                                   std::uint32_t destination,
                                                   std::uint64_t* barrier, int k0, int row0,
                                                   std::uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(destination),
      "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(k0), "r"(row0),
      "r"(shared_address(barrier)), "h"(mask)
      : "memory");
}

}  // namespace lowbit::cuda
