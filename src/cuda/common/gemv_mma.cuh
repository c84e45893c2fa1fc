// Tensor-core GEMV building blocks for decode (a few tokens against a K-major 8-bit weight), on
// mma.sync m16n8k32 (fp8 e4m3 -> fp32, or int8 -> int32). The weight rows are mma's M side and
// the tokens its N side, so one token costs an 8-wide tile instead of a 64- or 128-row one.
//
// One warp owns 32 weight rows (two m16 tiles) and 8 * kTokenTiles tokens and walks K in
// 128-deep steps. Per step each lane reads 16 contiguous bytes at k = 64 c + 16 t (chunk c = 0, 1;
// t = lane % 4) of its rows g, g + 8, g + 16, g + 24 (g = lane / 4) and of its tokens g + 8 j.
// mma's fragments want 4-byte pieces at k = 4 t instead; since both operands are permuted the same
// way inside each 64-deep chunk, the dot product is unchanged and every load is a full 16 bytes,
// so a row's 128 bytes per step arrive in two fully used 64-byte segments.
//
// fp8: sm_90 has no fp8 mma.sync; ptxas lowers the e4m3 m16n8k32 mma to F2FP conversions and
// fp16 HMMA, which caps the fp8 GEMV below the int8 one (measured in docs/perf/scaled_gemm.md).
// Converting the codes with integer bit moves instead, alone or for half of the rows, measured
// slower on an H200 and was not kept.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gemv_mma_plan.h"

namespace lowbit::cuda::gemv {

inline constexpr int kRowTiles = 2;
inline constexpr int kTokensPerTile = 8;    // mma's N

// Blocks of one kernel that an SM holds at a given warp count, from the occupancy calculator,
// asked once per warp count (a decode launch must not pay a driver query each time). One cache
// per kernel: declare it static beside the launch of that kernel instantiation, since kernels of
// one signature share a function pointer type and must not share answers.
template <int kMaxWarps>
class ResidencyCache {
 public:
  // 0 when the query fails. `warps` is at most kMaxWarps.
  template <typename Kernel>
  int blocks_per_sm(Kernel kernel, int warps, std::size_t shared_per_warp) {
    std::atomic<int>& slot = known_[warps];
    int value = slot.load(std::memory_order_relaxed);
    if (value == 0) {
      int blocks = 0;
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, warps * 32,
                                                        warps * shared_per_warp) != cudaSuccess) {
        blocks = 0;
      }
      value = blocks + 1;
      slot.store(value, std::memory_order_relaxed);
    }
    return value - 1;
  }

 private:
  std::atomic<int> known_[kMaxWarps + 1] = {};  // blocks per SM + 1; 0: not asked yet
};

// warps_for_one_wave (gemv_mma_plan.h) with this kernel's occupancy.
template <int kMaxWarps, typename Kernel>
int warps_for_one_wave(ResidencyCache<kMaxWarps>& residency, Kernel kernel, int warps,
                       std::int64_t blocks, int sm_count, std::size_t shared_per_warp) {
  return warps_for_one_wave(warps, blocks, sm_count, [&](int w) {
    return residency.blocks_per_sm(kernel, w, shared_per_warp);
  });
}

// D += A * B on one m16n8k32 tile. fp32 accumulators take e4m3 operands, int32 ones int8.
__device__ __forceinline__ void mma_m16n8k32(float (&d)[4], std::uint32_t a0, std::uint32_t a1,
                                             std::uint32_t a2, std::uint32_t a3, std::uint32_t b0,
                                             std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_m16n8k32(int (&d)[4], std::uint32_t a0, std::uint32_t a1,
                                             std::uint32_t a2, std::uint32_t a3, std::uint32_t b0,
                                             std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Where a lane's accumulator element i of tile (row tile r, token tile j) sits: mma's C fragment
// holds rows g and g + 8, columns 2t and 2t + 1.
__device__ __forceinline__ int fragment_row(int lane, int row_tile, int i) {
  return row_tile * 16 + lane / 4 + 8 * (i / 2);
}
__device__ __forceinline__ int fragment_token(int lane, int token_tile, int i) {
  return token_tile * kTokensPerTile + 2 * (lane % 4) + (i % 2);
}

__device__ __forceinline__ uint4 load_16b_or_zero_streaming(const std::uint8_t* p, bool valid) {
  return valid ? __ldcs(reinterpret_cast<const uint4*>(p)) : make_uint4(0, 0, 0, 0);
}
__device__ __forceinline__ uint4 load_16b_or_zero_cached(const std::uint8_t* p, bool valid) {
  return valid ? __ldg(reinterpret_cast<const uint4*>(p)) : make_uint4(0, 0, 0, 0);
}

// A lane's view of the operands: the first byte it reads in each of its rows and tokens (at
// k = 16 t), and which of them exist. Rows or tokens past the end read as zeros.
template <int kTokenTiles>
struct LaneOperands {
  const std::uint8_t* rows[2 * kRowTiles];  // rows g, g + 8, g + 16, g + 24 of the warp's 32
  bool row_valid[2 * kRowTiles];
  const std::uint8_t* tokens[kTokenTiles];  // tokens g + 8 j
  bool token_valid[kTokenTiles];
  int k_lane;  // 16 t

  __device__ LaneOperands(const std::uint8_t* weight, std::int64_t ldw, std::int64_t n,
                          std::int64_t row0, const std::uint8_t* act, std::int64_t lda,
                          std::int64_t m, int lane) {
    k_lane = 16 * (lane % 4);
#pragma unroll
    for (int r = 0; r < 2 * kRowTiles; ++r) {
      const std::int64_t row = row0 + lane / 4 + 8 * r;
      row_valid[r] = row < n;
      rows[r] = weight + (row_valid[r] ? row : 0) * ldw + k_lane;
    }
#pragma unroll
    for (int j = 0; j < kTokenTiles; ++j) {
      const std::int64_t token = lane / 4 + kTokensPerTile * j;
      token_valid[j] = token < m;
      tokens[j] = act + (token_valid[j] ? token : 0) * lda + k_lane;
    }
  }
};

// One step's operand bytes in registers: [row or token][chunk].
template <int kTokenTiles>
struct StepFragments {
  uint4 w[2 * kRowTiles][2];
  uint4 x[kTokenTiles][2];
};

// Issues the loads of the step starting at k0; pieces at or past k_end (a multiple of 16) read
// as zeros. Weights are streamed past L1; the activations are re-read by every warp, so cached.
template <int kTokenTiles>
__device__ __forceinline__ void load_step(const LaneOperands<kTokenTiles>& lane, std::int64_t k0,
                                          std::int64_t k_end, StepFragments<kTokenTiles>& f) {
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const std::int64_t k = k0 + 64 * c;
    const bool in_k = k + lane.k_lane < k_end;
#pragma unroll
    for (int r = 0; r < 2 * kRowTiles; ++r) {
      f.w[r][c] = load_16b_or_zero_streaming(lane.rows[r] + k, in_k && lane.row_valid[r]);
    }
#pragma unroll
    for (int j = 0; j < kTokenTiles; ++j) {
      f.x[j][c] = load_16b_or_zero_cached(lane.tokens[j] + k, in_k && lane.token_valid[j]);
    }
  }
}

// acc[r][j] += the step's product for row tile r and token tile j (4 mma per tile).
template <typename Acc, int kTokenTiles>
__device__ __forceinline__ void multiply_step(const StepFragments<kTokenTiles>& f,
                                              Acc (&acc)[kRowTiles][kTokenTiles][4]) {
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r) {
    const uint4(&lo)[2] = f.w[2 * r];      // row g of tile r
    const uint4(&hi)[2] = f.w[2 * r + 1];  // row g + 8
#pragma unroll
    for (int j = 0; j < kTokenTiles; ++j) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        mma_m16n8k32(acc[r][j], lo[c].x, hi[c].x, lo[c].y, hi[c].y, f.x[j][c].x, f.x[j][c].y);
        mma_m16n8k32(acc[r][j], lo[c].z, hi[c].z, lo[c].w, hi[c].w, f.x[j][c].z, f.x[j][c].w);
      }
    }
  }
}

template <typename Acc, int kTokenTiles>
__device__ __forceinline__ void zero(Acc (&acc)[kRowTiles][kTokenTiles][4]) {
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
    for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][j][i] = Acc{0};
}

// Number of accumulator values per lane, and their flat index, for the cross-warp reduction.
template <int kTokenTiles>
inline constexpr int kLaneValues = kRowTiles * kTokenTiles * 4;

// The block's warps split K; each stores its accumulators in shared memory as [warp][value][lane]
// (conflict-free), then warp w sums values v = w, w + warps, ... over the warps in warp order,
// so the result does not depend on timing. `finish(value index, sum)` runs once per value.
template <typename Acc, int kTokenTiles, typename Finish>
__device__ __forceinline__ void reduce_over_warps(const Acc (&acc)[kRowTiles][kTokenTiles][4],
                                                  Acc* shared, Finish finish) {
  constexpr int kValues = kLaneValues<kTokenTiles>;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
    for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int v = (r * kTokenTiles + j) * 4 + i;
        shared[(warp * kValues + v) * 32 + lane] = acc[r][j][i];
      }
  __syncthreads();
  for (int v = warp; v < kValues; v += warps) {
    Acc sum = shared[v * 32 + lane];
    for (int w = 1; w < warps; ++w) sum += shared[(w * kValues + v) * 32 + lane];
    finish(v, sum);
  }
}

// Row tile, token tile and element of flat value index v.
struct ValueCoordinates {
  int row_tile, token_tile, i;
};
template <int kTokenTiles>
__device__ __forceinline__ ValueCoordinates coordinates_of(int v) {
  return {v / (kTokenTiles * 4), (v / 4) % kTokenTiles, v % 4};
}

}  // namespace lowbit::cuda::gemv
