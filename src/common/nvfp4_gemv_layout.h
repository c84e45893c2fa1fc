// Where each NVFP4 code, 2:4 index and block scale of one expert's [N, K] weight lives in the
// GEMV kernels' layout (docs/nvfp4.md, "GEMV layouts"). Host code; the kernels walk the same
// layout implicitly, one 64-wide K chunk of a 16-row tile per warp step.
//
// Tile = 16 rows, chunk = 64 K values. In a chunk, lane = 4 * (row % 8) + (k % 64) / 16 owns rows
// row % 8 and row % 8 + 8 ("half" 0 and 1) over 16 consecutive K values, which are the
// tensor-core k-steps j = (k % 16) / 4 with position i = k % 4 inside them.
#pragma once

#include <cstdint>

namespace lowbit::detail {

struct Nvfp4GemvCoordinates {
  std::int64_t chunk_index;  // (row / 16) * (K / 64) + k / 64
  int lane;                  // 0..31
  int half;                  // 0: row % 16 < 8, 1: otherwise
  int step;                  // j: 0..3
  int position;              // i: 0..3
};

inline Nvfp4GemvCoordinates nvfp4_gemv_coordinates(std::int64_t row, std::int64_t k,
                                                   std::int64_t cols) {
  const int in_tile = static_cast<int>(row % 16);
  const int in_chunk = static_cast<int>(k % 64);
  return {(row / 16) * (cols / 64) + k / 64, 4 * (in_tile % 8) + in_chunk / 16, in_tile / 8,
          (in_chunk % 16) / 4, in_chunk % 4};
}

// Nibble address: byte offset * 2 + (1 for the high nibble).
// Dense: 512 bytes per chunk, 16 per lane, one 32-bit word per step; in a word the pair
// p = 2 * (i / 2) + half sits at nibbles p (i even) and p + 4 (i odd).
inline std::int64_t nvfp4_gemv_dense_nibble(std::int64_t row, std::int64_t k, std::int64_t cols) {
  const Nvfp4GemvCoordinates c = nvfp4_gemv_coordinates(row, k, cols);
  const int nibble = 2 * (c.position / 2) + c.half + 4 * (c.position % 2);
  return (c.chunk_index * 512 + c.lane * 16 + c.step * 4) * 2 + nibble;
}

// Block scales: 64 bytes per chunk, 2 per lane (half 0, half 1).
inline std::int64_t nvfp4_gemv_scale_byte(std::int64_t row, std::int64_t k, std::int64_t cols) {
  const Nvfp4GemvCoordinates c = nvfp4_gemv_coordinates(row, k, cols);
  return c.chunk_index * 64 + c.lane * 2 + c.half;
}

// 2:4 layout: the sparse tensor cores (mma.sp m16n8k32) take a chunk in two 32-deep steps s.
// The chunk's 16 groups of 4 K values, a = (k % 64) / 4, are mma group i = 2 * (a % 4) + a / 8 of
// step s = (a % 8) / 4; lane 4 * (row % 8) + t holds the kept pairs of mma groups t (slot 0) and
// t + 4 (slot 1) for both halves. (The activations follow: mma.sp's 4-wide groups span two
// lanes' B fragments, so each lane loads half of each of its actual groups.)
struct Nvfp4GemvSparseCoordinates {
  std::int64_t chunk_index;
  int g;        // row % 8
  int half;     // 0: row % 16 < 8, 1: otherwise
  int step;     // s: 0..1
  int group;    // mma group i: 0..7
};

inline Nvfp4GemvSparseCoordinates nvfp4_gemv_sparse_coordinates(std::int64_t row,
                                                                std::int64_t group,
                                                                std::int64_t cols) {
  const int in_tile = static_cast<int>(row % 16);
  const int a = static_cast<int>(group % 16);
  return {(row / 16) * (cols / 64) + group / 16, in_tile % 8, in_tile / 8, (a % 8) / 4,
          2 * (a % 4) + a / 8};
}

// 2:4 values: 256 bytes per chunk, 8 per lane, one 32-bit word per step; the kept pair of
// (slot, half) sits at nibbles 2 * slot + half (lower kept position) and that + 4.
// `kept` is 0 for the lower kept position of the group, 1 for the higher.
inline std::int64_t nvfp4_gemv_sparse_value_nibble(std::int64_t row, std::int64_t group,
                                                   int kept, std::int64_t cols) {
  const Nvfp4GemvSparseCoordinates c = nvfp4_gemv_sparse_coordinates(row, group, cols);
  const int lane = 4 * c.g + c.group % 4;
  const int nibble = 2 * (c.group / 4) + c.half + 4 * kept;
  return (c.chunk_index * 256 + lane * 8 + c.step * 4) * 2 + nibble;
}

// 2:4 indices, as mma.sp metadata: 128 bytes per chunk, 4 per lane; lane 4g + 2s + h holds the
// metadata word of step s, the code (i0 | i1 << 2) of row g, mma group 4h + q at nibble q and
// of row g + 8 at nibble 4 + q.
inline std::int64_t nvfp4_gemv_sparse_index_nibble(std::int64_t row, std::int64_t group,
                                                   std::int64_t cols) {
  const Nvfp4GemvSparseCoordinates c = nvfp4_gemv_sparse_coordinates(row, group, cols);
  const int lane = 4 * c.g + 2 * c.step + c.group / 4;
  return (c.chunk_index * 128 + lane * 4) * 2 + 4 * c.half + c.group % 4;
}

// 2:4 block scales: 64 bytes per chunk, 8 per row pair g; the scale of 16-K block b of the
// chunk at byte 2b + half, so lane 4g + t reads blocks 2 * (t % 2) and + 1 as one 32-bit word
// (the block of its step s at bytes 2s, 2s + 1).
inline std::int64_t nvfp4_gemv_sparse_scale_byte(std::int64_t row, std::int64_t k,
                                                 std::int64_t cols) {
  const int in_tile = static_cast<int>(row % 16);
  const std::int64_t chunk_index = (row / 16) * (cols / 64) + k / 64;
  const int block = static_cast<int>(k % 64) / 16;
  return chunk_index * 64 + (in_tile % 8) * 8 + 2 * block + in_tile / 8;
}

}  // namespace lowbit::detail
