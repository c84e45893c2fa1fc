// Writing an output tile through shared memory (sm_90): fragments go to a staging buffer with
// stmatrix in the 128-byte swizzle that TMA expects, and leave in TMA stores that run in the
// background while the block goes on.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace lowbit::cuda::tile_store {

// Two 8 x 8 bf16 matrices from a warp's wgmma-layout fragments: `first` is this lane's pair of
// the first matrix (row lane / 4, columns 2 (lane % 4) and + 1), `second` of the second. Lanes
// 0-7 give the first matrix's row addresses, lanes 8-15 the second's.
__device__ __forceinline__ void stmatrix_x2(std::uint32_t row_address, std::uint32_t first,
                                            std::uint32_t second) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};\n" ::"r"(row_address),
               "r"(first), "r"(second)
               : "memory");
}

__device__ __forceinline__ std::uint32_t pack_bf16x2(float low, float high) {
  std::uint32_t packed;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(high), "f"(low));
  return packed;
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled box of 128-byte rows (the box
// 1024-byte aligned): TMA's 128-byte swizzle XORs the chunk with the row's place in its 8-row
// group.
__device__ __forceinline__ std::uint32_t swizzled_offset(int row, int chunk) {
  return static_cast<std::uint32_t>(row * 128 + ((chunk ^ (row % 8)) * 16));
}

// Synchronizes `threads` threads (whole warps) on named barrier `id` (0 is __syncthreads').
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Box (col0, row0) of `map` from shared memory at `source`, in this thread's bulk group.
__device__ __forceinline__ void store_box(const CUtensorMap& map, std::uint32_t source, int col0,
                                          int row0) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
          reinterpret_cast<std::uint64_t>(&map)),
      "r"(col0), "r"(row0), "r"(source)
      : "memory");
}
__device__ __forceinline__ void commit_stores() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until this thread's committed stores have read their shared memory.
__device__ __forceinline__ void wait_stores_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// Waits until this thread's committed stores are complete (before the block exits).
__device__ __forceinline__ void wait_stores_done() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

}  // namespace lowbit::cuda::tile_store
