// Activations staged in shared memory for the balanced 2:4 GEMV kernel (window of 8, few
// tokens), read by `ldmatrix`. Included by sm90_nvfp4_gemv_balanced.cuh only.
//
// A 2:4 lane's B fragments are eight 4-byte words a chunk, each half of a group of 4 K values
// whose other half sits in the neighbouring lane (load_activations), so from global memory they
// cost eight loads a chunk, which kept the 2:4 kernel's load pipe ~46% busy (ncu, twenty-first
// session; docs/perf/nvfp4_gemv.md). Staged in the order below, one `ldmatrix.x4` gives a lane
// the four words of a sparse step: two instructions a chunk instead of eight.
//
// Rows: a block stages only the rows of x its slots read (staged_rows): with a row of x per
// routed pair (a MoE down projection's input) one or two rows a block at decode, where every
// block copying every row cost more than staging saved.
//
// Order: per token row, per 64-K chunk, eight 16-byte segments; segment 4s + m holds the chunk's
// 8-byte runs (groups of 4 K values) a and a + 4, a = 8 * (m % 2) + 2s + m / 2. Matrix m of the
// chunk's ldmatrix s reads segment 4s + m of the row of its token column (lane % 8 supplies it),
// and lane t of a quad receives the segment's word t: K 4a + 2t (t < 2) or 4(a + 4) + 2(t - 2),
// the word load_activations reads from global memory for word 4s + m. Rows are padded by 16
// bytes so that eight token rows fall in different banks.
//
// The same for the dense kernel (its words transposed, 4-byte copies) measured 5% slower on
// DeepSeek-V3 down at M = 1 (NVIDIA H200, forty-third session), so only 2:4 stages.
#pragma once

#include <climits>
#include <cstdint>

#include "../common/bulk_copy.cuh"
#include "sm90_nvfp4_gemv_balanced_start.cuh"
#include "sm90_nvfp4_gemv_device.cuh"

namespace lowbit::cuda::nvfp4_gemv {

// Rows first .. first + count - 1 of x, staged as rows 0 .. count - 1.
struct StagedRows {
  int first, count;
};

// The rows of x the block's slots (b.slot_lo .. b.slot_hi) read: the least and greatest token of
// their routed rows, from the lanes' slot table and token list (launches of at most 32 slots and
// 32 routed rows; otherwise every row). Tokens outside x are left out (their columns read row 0
// of the window, as x_row_of_token reads row 0), so the window never exceeds the x rows the
// launch sized the buffer for, whatever the lists hold.
__device__ __forceinline__ StagedRows staged_rows(const Nvfp4GemvParams& p, const BlockItems& b,
                                                  const SlotInfo& table_info,
                                                  const RowTokens& row_tokens) {
  if (p.slots > 32 || p.output_rows > 32) return {0, static_cast<int>(p.tokens)};
  const int lane = threadIdx.x % 32;
  const int pair_begin = __shfl_sync(0xffffffffu, table_info.begin, b.slot_lo & 31);
  const int pair_end = __shfl_sync(0xffffffffu, table_info.end, b.slot_hi & 31);
  const int token = row_tokens.lane_token;
  const bool read = lane >= pair_begin && lane < pair_end && token >= 0 && token < p.tokens;
  const int lo = __reduce_min_sync(0xffffffffu, read ? token : INT_MAX);
  const int hi = __reduce_max_sync(0xffffffffu, read ? token : -1);
  return hi < lo ? StagedRows{0, 1} : StagedRows{lo, hi - lo + 1};
}

// Every thread of the block copies its share of the rows, an 8-byte run a copy, in the staged
// order; the caller waits (wait_staged_x) and takes a block barrier before reading them.
__device__ __forceinline__ void stage_x(const Nvfp4GemvParams& p, std::uint8_t* staged,
                                        const StagedRows& rows) {
  const int runs_per_row = static_cast<int>(p.cols / 4);
  const int row_bytes = static_cast<int>(staged_x_row_bytes(p.cols));
  const int runs = rows.count * runs_per_row;
  for (int r = threadIdx.x; r < runs; r += blockDim.x) {
    const int row = r / runs_per_row, run = r - row * runs_per_row;
    const int token = rows.first + row;
    // A run is a group of 4 K values, g; its segment 4s + m (the order above) has bits g1 g0 g3
    // and its half is g2, so its byte in the chunk has bits g1 g0 g3 g2 from bit 6 down to bit 3.
    // Bit arithmetic: with divisions and modulos by 8, 4 and 2 the loop took 63 instructions a
    // run, 41 so (46 in the earlier order).
    const unsigned chunk = static_cast<unsigned>(run) / 16, group = static_cast<unsigned>(run) % 16;
    const unsigned in_chunk = (group & 3u) << 5 | (group & 12u) << 1;
    const std::uint16_t* from = p.x + token * p.x_row_stride + run * 4;
    const unsigned to = shared_address(staged + row * row_bytes) + chunk * 128 + in_chunk;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(to), "l"(from) : "memory");
  }
}

__device__ __forceinline__ void wait_staged_x() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// The lane's ldmatrix address at chunk 0 of token `token`'s staged row (absent tokens and tokens
// outside the rows: the first staged row), for the lane's matrix (lane / 8).
__device__ __forceinline__ unsigned staged_x_row(const Nvfp4GemvParams& p, const std::uint8_t* staged,
                                                 const StagedRows& rows, int token) {
  const int lane = threadIdx.x % 32;
  const int row = token - rows.first;
  const bool x_ok = row >= 0 && row < rows.count;
  return shared_address(staged) +
         static_cast<unsigned>((x_ok ? row : 0) * staged_x_row_bytes(p.cols) + (lane / 8) * 16);
}

// The lane's B fragments of chunk `chunk` (load_activations' words, from the staged rows).
__device__ __forceinline__ void load_staged_activations(unsigned row, int chunk,
                                                        std::uint32_t (&x)[1][8]) {
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(x[0][4 * s]), "=r"(x[0][4 * s + 1]), "=r"(x[0][4 * s + 2]),
                   "=r"(x[0][4 * s + 3])
                 : "r"(row + chunk * 128 + s * 64));
  }
}

}  // namespace lowbit::cuda::nvfp4_gemv
