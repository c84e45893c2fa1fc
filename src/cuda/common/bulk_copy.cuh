// Hopper bulk asynchronous copies (global -> shared, the TMA engine without a tensor map) that
// complete on an mbarrier, and the mbarrier operations around them (PTX ISA 8.0, sm_90).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace lowbit::cuda {

__device__ __forceinline__ std::uint32_t shared_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void mbarrier_init(std::uint64_t* barrier, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(barrier)),
               "r"(arrivals));
}

// Makes this thread's shared-memory stores visible to async-proxy readers of shared memory
// (wgmma operands, TMA stores).
__device__ __forceinline__ void fence_shared_for_async_proxy() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Fetches a tensor map (a kernel parameter) into the TMA unit's cache ahead of its first use.
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap& map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(&map))
               : "memory");
}

// Makes initialized barriers visible to the async proxy (the copy engine).
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival that also tells the barrier to expect `bytes` from copies before it completes.
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(std::uint64_t* barrier,
                                                             std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                   shared_address(barrier)),
               "r"(bytes)
               : "memory");
}

// One arrival on `barrier`.
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(barrier))
               : "memory");
}

// An arrival on `barrier` when this thread's earlier cp.async copies complete; the barrier's
// expected count includes it (noinc).
__device__ __forceinline__ void mbarrier_arrive_on_async_copies(std::uint64_t* barrier) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(
                   shared_address(barrier))
               : "memory");
}

__device__ __forceinline__ void mbarrier_wait(std::uint64_t* barrier, std::uint32_t phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_again:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_again;\n"
      "}\n" ::"r"(shared_address(barrier)),
      "r"(phase)
      : "memory");
}

// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared
// memory; completion is signalled on `barrier` as transaction bytes.
__device__ __forceinline__ void bulk_copy_to_shared(void* destination, const void* source,
                                                    std::uint32_t bytes, std::uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(shared_address(destination)),
      "l"(source), "r"(bytes), "r"(shared_address(barrier))
      : "memory");
}

}  // namespace lowbit::cuda
