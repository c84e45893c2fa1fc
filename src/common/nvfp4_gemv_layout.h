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

// 2:4 values: 256 bytes per chunk, 8 per lane; word w = j / 2 holds steps 2w and 2w + 1, the
// kept pair of (step j, half) at nibbles p = 2 * (j % 2) + half (lower position) and p + 4.
// `kept` is 0 for the lower kept position of the group, 1 for the higher.
inline std::int64_t nvfp4_gemv_sparse_value_nibble(std::int64_t row, std::int64_t group,
                                                   int kept, std::int64_t cols) {
  const Nvfp4GemvCoordinates c = nvfp4_gemv_coordinates(row, group * 4, cols);
  const int nibble = 2 * (c.step % 2) + c.half + 4 * kept;
  return (c.chunk_index * 256 + c.lane * 8 + (c.step / 2) * 4) * 2 + nibble;
}

// 2:4 indices: 128 bytes per chunk, 4 per lane; the 4-bit code (i0 | i1 << 2) of (step j, half)
// at nibble 2 * j + half of the lane's word.
inline std::int64_t nvfp4_gemv_sparse_index_nibble(std::int64_t row, std::int64_t group,
                                                   std::int64_t cols) {
  const Nvfp4GemvCoordinates c = nvfp4_gemv_coordinates(row, group * 4, cols);
  return (c.chunk_index * 128 + c.lane * 4) * 2 + 2 * c.step + c.half;
}

}  // namespace lowbit::detail
