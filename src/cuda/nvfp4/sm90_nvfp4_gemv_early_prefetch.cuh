// Under programmatic dependent launch the balanced NVFP4 GEMV kernel's blocks become resident
// while the previous kernel's last blocks run, when the DRAM has bandwidth to spare, and then
// wait (griddepcontrol.wait) for the routing. Before the wait each warp asks L2 for the first
// round of its share (one bulk prefetch per array, from lane 0), guessing its expert from a
// routing read that the previous kernel may still be writing: a prefetch is only a hint, so a
// wrong guess costs bandwidth, never a result. Included by sm90_nvfp4_gemv_balanced.cuh only.
//
// NVIDIA H200, forty-seventh session, DeepSeek-V3 at M = 1 under graph + PDL, three processes
// (docs/perf/nvfp4_gemv.md, "The first round asked of L2 before the PDL wait"): down dense
// 19.69-19.88 -> 19.50-19.74 us, down 2:4 16.74-16.85 -> 16.34-16.44, gate_up 2:4 (wide)
// 28.86-28.96 -> 28.01-28.11. Half a round or two rounds gained less, and three rounds with a
// partner block's lost 12-14% (down dense): the prefetches then compete with the previous
// kernel's tail and with the kernel's own first loads. Asking again right after the wait (the
// share's next 4-16 chunks) was 0.4-7.5% slower (forty-eighth session, "L2 asked again after
// the PDL wait").

#pragma once

#include <cstdint>

#include "sm90_nvfp4_gemv_balanced_start.cuh"
#include "sm90_nvfp4_gemv_device.cuh"

namespace lowbit::cuda::nvfp4_gemv {

// The bulk prefetch wants a 16-byte aligned address and a multiple of 16 bytes; the op lets
// block scales start at any 4-byte boundary, so the range is widened to the 16-byte blocks it
// touches (never past a page it does not touch).
__device__ __forceinline__ void prefetch_l2(const std::uint8_t* at, std::int64_t bytes) {
  const auto first = reinterpret_cast<std::uintptr_t>(at);
  const std::uintptr_t begin = first & ~std::uintptr_t{15};
  const std::uintptr_t end = (first + static_cast<std::uintptr_t>(bytes) + 15) & ~std::uintptr_t{15};
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(begin),
               "r"(static_cast<unsigned>(end - begin))
               : "memory");
}

// The warp's first round (at most kUnroll chunks, within its first unit's expert) where every
// slot of the block has one pass (decode); `b` from block_items. Lane 0 only.
template <bool kSparse, int kUnroll>
__device__ __forceinline__ void prefetch_first_round(const Nvfp4GemvParams& p, const BlockItems& b) {
  if (threadIdx.x % 32 != 0 || b.guess_begin >= b.guess_end || b.guess_slot >= p.slots) return;
  int expert = 0;
  if (p.expert_ids != nullptr) {
    // Through L2 only: no L1 line of a list still being written outlives the wait.
    asm volatile("ld.global.cg.s32 %0, [%1];" : "=r"(expert) : "l"(p.expert_ids + b.guess_slot));
  }
  if (expert < 0 || expert >= p.experts) return;
  const int chunks_per_tile = static_cast<int>(p.cols / 64);
  const int tile = b.item_begin + b.guess_unit - b.guess_slot * b.tiles;
  const int k = b.guess_begin - b.guess_unit * b.rounds_per_unit;
  const std::int64_t first = std::int64_t{tile} * chunks_per_tile + k * kUnroll;
  const std::int64_t chunks =
      min(std::int64_t{b.tiles} * chunks_per_tile - first, std::int64_t{kUnroll});
  if (chunks <= 0) return;
  const std::int64_t codes = p.rows * p.cols;  // per expert
  prefetch_l2(p.block_scales + expert * (codes / 16) + first * 64, chunks * 64);
  if constexpr (kSparse) {
    prefetch_l2(p.weights + expert * (codes / 4) + first * 256, chunks * 256);
    prefetch_l2(p.indices + expert * (codes / 8) + first * 128, chunks * 128);
  } else {
    prefetch_l2(p.weights + expert * (codes / 2) + first * 512, chunks * 512);
  }
}

}  // namespace lowbit::cuda::nvfp4_gemv
