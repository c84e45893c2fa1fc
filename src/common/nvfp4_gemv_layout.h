// Where each NVFP4 code, 2:4 index and block scale of one expert's [N, K] weight lives in the
// GEMV kernels' layout (docs/nvfp4.md, "GEMV layouts"). The addresses are host code; the kernels
// walk the same layout implicitly, one 64-wide K chunk of a 16-row tile per warp step. The bit
// placement of codes inside a word (and its decode) is shared by both.
//
// Tile = 16 rows, chunk = 64 K values. In a chunk, lane = 4 * (row % 8) + (k % 64) / 16 owns rows
// row % 8 and row % 8 + 8 ("half" 0 and 1) over 16 consecutive K values, which are the
// tensor-core k-steps j = (k % 16) / 4 with position i = k % 4 inside them.
#pragma once

#include <cstdint>

#include "lowbit/formats.h"

namespace lowbit::detail {

// Codes in a GEMV word. A 32-bit word holds the 8 codes of one tensor-core step: slot p + 4h is
// half h (the lower K of the pair: h = 0) of A-fragment register a_p. Slots are numbered like
// nibbles (slot address = 2 * byte + 1 for a high nibble), but a code is not stored as a nibble.
// The kernels build a_p as bf16x2 with code bit b (m, e0, e1, sign) at bit kGemvCodeTarget[b] +
// 16h (the e2m1 value times 2^-126), each bit taken from the word rotated left by
// kGemvRotation[p][b] and masked, so code bit b of slot p + 4h is stored at bit
// (kGemvCodeTarget[b] + 16h - kGemvRotation[p][b]) mod 32. a_0 is a mask, a_1 and a_2 a shift (a
// rotation) and a mask, a_3 two of each: 9 operations per word. Positions that keep each code's
// 3 magnitude bits together took 11 at best (docs/nvfp4.md, "GEMV layouts").
inline constexpr int kGemvCodeTarget[4] = {6, 7, 8, 15};
inline constexpr int kGemvRotation[4][4] = {
    {0, 0, 0, 0}, {4, 4, 4, 4}, {10, 10, 10, 10}, {6, 14, 14, 14}};

LOWBIT_HOST_DEVICE constexpr std::uint32_t rotate_left(std::uint32_t q, int bits) {
  return bits == 0 ? q : (q << bits) | (q >> (32 - bits));
}

// The bits of a_p (both halves) that come from the word rotated left by `rotation`.
template <int kPair>
LOWBIT_HOST_DEVICE constexpr std::uint32_t gemv_rotation_mask(int rotation) {
  std::uint32_t mask = 0;
  for (int b = 0; b < 4; ++b) {
    if (kGemvRotation[kPair][b] == rotation) mask |= 0x00010001u << kGemvCodeTarget[b];
  }
  return mask;
}

// a_p of a word q: bf16x2 bits of its two codes' e2m1 values times 2^-126.
template <int kPair>
LOWBIT_HOST_DEVICE std::uint32_t gemv_pair_bits(std::uint32_t q) {
  constexpr int kFirst = kGemvRotation[kPair][0], kLast = kGemvRotation[kPair][3];
  constexpr std::uint32_t kFirstMask = gemv_rotation_mask<kPair>(kFirst);
  if constexpr (kFirst == kLast) {
    return rotate_left(q, kFirst) & kFirstMask;
  } else {  // two rotations (the table has at most two per pair: code bit 0's and the rest's)
    constexpr std::uint32_t kLastMask = gemv_rotation_mask<kPair>(kLast);
    static_assert((kFirstMask | kLastMask) == 0x81C081C0u, "two rotations cover a_p");
    return (rotate_left(q, kFirst) & kFirstMask) | (rotate_left(q, kLast) & kLastMask);
  }
}

// A GEMV code word (little-endian 32 bits), and where bit b of the code in slot `slot` (0..7)
// sits in it.
inline std::uint32_t gemv_word(const std::uint8_t* word) {
  return word[0] | word[1] << 8 | word[2] << 16 | static_cast<std::uint32_t>(word[3]) << 24;
}
constexpr int gemv_code_bit(int slot, int b) {
  return (kGemvCodeTarget[b] + 16 * (slot / 4) - kGemvRotation[slot % 4][b] + 32) % 32;
}

// Each code's bits in each slot, deposited in a word (host relayouts write a code with one mask
// and one or: a code's bits no longer sit side by side).
struct GemvCodeDeposits {
  std::uint32_t bits[8][16];  // [slot][code]
  std::uint32_t slot_mask[8];
};
constexpr GemvCodeDeposits gemv_code_deposits() {
  GemvCodeDeposits d{};
  for (int slot = 0; slot < 8; ++slot) {
    for (int code = 0; code < 16; ++code) {
      for (int b = 0; b < 4; ++b) {
        const std::uint32_t bit = std::uint32_t{1} << gemv_code_bit(slot, b);
        if (code >> b & 1) d.bits[slot][code] |= bit;
        d.slot_mask[slot] |= bit;
      }
    }
  }
  return d;
}
inline constexpr GemvCodeDeposits kGemvCodeDeposits = gemv_code_deposits();

// A source byte's two codes (low nibble first) deposited in code slots s and s + 4 of a word, for
// s = 0..3: a dense word holds 4 consecutive K codes of rows r and r + 8, a 2:4 word the kept
// pairs of two groups of those rows, each pair from one byte (host relayouts, a word at a time).
struct GemvByteDeposits {
  std::uint32_t bits[4][256];  // [s][byte]
};
constexpr GemvByteDeposits gemv_byte_deposits() {
  GemvByteDeposits d{};
  for (int s = 0; s < 4; ++s) {
    for (int byte = 0; byte < 256; ++byte) {
      d.bits[s][byte] = kGemvCodeDeposits.bits[s][byte & 15] | kGemvCodeDeposits.bits[s + 4][byte >> 4];
    }
  }
  return d;
}
inline constexpr GemvByteDeposits kGemvByteDeposits = gemv_byte_deposits();

inline void store_gemv_word(std::uint8_t* word, std::uint32_t q) {
  for (int b = 0; b < 4; ++b) word[b] = static_cast<std::uint8_t>(q >> (8 * b));
}

// The code at a slot address of a GEMV code buffer.
inline std::uint8_t read_gemv_code(const std::uint8_t* bytes, std::int64_t slot_address) {
  const std::uint32_t q = gemv_word(bytes + slot_address / 8 * 4);
  const int slot = static_cast<int>(slot_address % 8);
  std::uint32_t code = 0;
  for (int b = 0; b < 4; ++b) code |= (q >> gemv_code_bit(slot, b) & 1u) << b;
  return static_cast<std::uint8_t>(code);
}

inline void write_gemv_code(std::uint8_t* bytes, std::int64_t slot_address, std::uint8_t code) {
  std::uint8_t* word = bytes + slot_address / 8 * 4;
  const int slot = static_cast<int>(slot_address % 8);
  store_gemv_word(word, (gemv_word(word) & ~kGemvCodeDeposits.slot_mask[slot]) |
                            kGemvCodeDeposits.bits[slot][code & 15]);
}

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

// Slot address of a code (read_gemv_code, write_gemv_code).
// Dense: 512 bytes per chunk, 16 per lane, one 32-bit word per step; in a word the pair
// p = 2 * (i / 2) + half takes slots p (i even) and p + 4 (i odd).
inline std::int64_t nvfp4_gemv_dense_slot(std::int64_t row, std::int64_t k, std::int64_t cols) {
  const Nvfp4GemvCoordinates c = nvfp4_gemv_coordinates(row, k, cols);
  const int slot = 2 * (c.position / 2) + c.half + 4 * (c.position % 2);
  return (c.chunk_index * 512 + c.lane * 16 + c.step * 4) * 2 + slot;
}

// Block scales: 64 bytes per chunk, 2 per lane (half 0, half 1).
inline std::int64_t nvfp4_gemv_scale_byte(std::int64_t row, std::int64_t k, std::int64_t cols) {
  const Nvfp4GemvCoordinates c = nvfp4_gemv_coordinates(row, k, cols);
  return c.chunk_index * 64 + c.lane * 2 + c.half;
}

// 2:4 layout: the sparse tensor cores (mma.sp m16n8k32) take a chunk in two 32-deep steps s. The
// chunk's 16 groups of 4 K values, a = (k % 64) / 4, are mma group i = a / 4 + 4 * (a % 2) of step
// s = (a % 4) / 2; lane 4 * (row % 8) + t holds the kept pairs of mma groups t (slot 0) and t + 4
// (slot 1) for both halves, which are the groups 4t .. 4t + 3: one 16-K block, so one block scale
// per row a chunk. (The activations follow: mma.sp's 4-wide groups span two lanes' B fragments,
// so each lane loads half of each of its actual groups.)
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
  return {(row / 16) * (cols / 64) + group / 16, in_tile % 8, in_tile / 8, (a % 4) / 2,
          a / 4 + 4 * (a % 2)};
}

// 2:4 values: 256 bytes per chunk, 8 per lane, one 32-bit word per step; the kept pair of
// (group slot, half) takes code slots 2 * slot + half (lower kept position) and that + 4.
// `kept` is 0 for the lower kept position of the group, 1 for the higher.
inline std::int64_t nvfp4_gemv_sparse_value_slot(std::int64_t row, std::int64_t group,
                                                   int kept, std::int64_t cols) {
  const Nvfp4GemvSparseCoordinates c = nvfp4_gemv_sparse_coordinates(row, group, cols);
  const int lane = 4 * c.g + c.group % 4;
  const int slot = 2 * (c.group / 4) + c.half + 4 * kept;
  return (c.chunk_index * 256 + lane * 8 + c.step * 4) * 2 + slot;
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
// chunk at byte 2b + half, so lane 4g + t reads its block t (both halves) as one 16-bit word.
inline std::int64_t nvfp4_gemv_sparse_scale_byte(std::int64_t row, std::int64_t k,
                                                 std::int64_t cols) {
  const int in_tile = static_cast<int>(row % 16);
  const std::int64_t chunk_index = (row / 16) * (cols / 64) + k / 64;
  const int block = static_cast<int>(k % 64) / 16;
  return chunk_index * 64 + (in_tile % 8) * 8 + 2 * block + in_tile / 8;
}

}  // namespace lowbit::detail
