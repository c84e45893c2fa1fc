// Shared memory across a thread-block cluster (PTX ISA 7.8, sm_90): arriving on a barrier in
// another block of the cluster, and a TMA box copied into every block of a cluster mask. The
// prefill kernels of block_fp8_mm use them to share one tile load between a block pair.
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
