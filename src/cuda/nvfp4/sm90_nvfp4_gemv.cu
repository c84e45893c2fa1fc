// Dense and 2:4-sparse NVFP4 GEMV for sm_90a (MoE decode, 1..16 tokens per expert), following
// docs/nvfp4.md. Hopper has no FP4 tensor cores, so weights are decoded in registers to bf16 and
// multiplied on the bf16 tensor cores (mma.sync m16n8k16, fp32 accumulation) with the weight
// tile as the 16-row A operand and up to 8 tokens as B ("swap AB"): one warp step consumes a
// 16-row x 64-K chunk, one 16-byte load per lane in the GEMV layout.
//
// Decoding: an e2m1 code placed in a bf16's sign and low exponent/mantissa bits is the code's
// value times 2^-126 (exact, subnormal for +-0.5); the GEMV layout stores each code's bits where
// few shifts put them there (detail::gemv_pair_bits); multiplying by a table entry
// e4m3 * 2^118 gives (e2m1 * s_b) * 2^-8 exactly, and the epilogue multiplies by global * 2^8.
// 2:4 weights run on the sparse tensor cores (mma.sp m16n8k32): only the kept pairs are
// decoded, the stored 2-bit indices are the instruction's metadata, and one 32-deep step covers
// 64 K of the chunk per two instructions, so the 2:4 kernel decodes and multiplies half as much
// as the dense one.
// Work items are (slot, 16-row tile) pairs, a slot being an expert and its token list; idle
// slots and out-of-range ids cost one early exit.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "../../common/nvfp4_gemv_layout.h"
#include "../common/check.cuh"
#include "../common/device_properties.cuh"
#include "lowbit/formats.h"
#include "nvfp4_gemv_config.h"
#include "nvfp4_launch.h"

namespace lowbit::cuda {

namespace {

constexpr int kThreads = kGemvWarpsPerBlock * 32;
constexpr char kDenseOp[] = "nvfp4_gemv";
constexpr char kSparseOp[] = "nvfp4_sparse24_gemv";

__device__ __forceinline__ std::uint32_t mul_bf16x2(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], std::uint32_t a0, std::uint32_t a1,
                                         std::uint32_t a2, std::uint32_t a3, std::uint32_t b0,
                                         std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Sparse A (16 x 32, 2:4, the kept pairs in a0..a3) times B (32 x 8). The metadata of
// selector kSelector comes from lanes 4g + 2 * kSelector + {0, 1}: nibble q < 4 holds the
// (i0 | i1 << 2) code of row g, group 4 * (lane & 1) + q; nibble q + 4 that of row g + 8
// (measured on H200 with a probe; docs/nvfp4.md, "GEMV layouts").
template <int kSelector>
__device__ __forceinline__ void mma_sp_bf16(float (&c)[4], const std::uint32_t (&a)[4],
                                            std::uint32_t b0, std::uint32_t b1, std::uint32_t b2,
                                            std::uint32_t b3, std::uint32_t metadata) {
  asm("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, %13;"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(b2), "r"(b3),
        "r"(metadata), "n"(kSelector));
}

// Shared table: e4m3 code -> bf16x2 (s_b * 2^118, both halves).
struct Tables {
  std::uint32_t scale[256];
};

__device__ void fill_tables(Tables& tables) {
  const float k2Pow118 = __uint_as_float((118u + 127u) << 23);
  for (int code = threadIdx.x; code < 256; code += blockDim.x) {
    const std::uint32_t bits =
        float_to_bf16(fp8_e4m3_to_float(static_cast<std::uint8_t>(code)) * k2Pow118);
    tables.scale[code] = bits | (bits << 16);
  }
}

// What one lane loads for one 64-wide K chunk of its tile.
template <bool kSparse>
struct ChunkWeights;
template <>
struct ChunkWeights<false> {
  uint4 codes;             // 4 steps x (2 rows x 4 codes)
  std::uint32_t scales;    // low byte: row r, next byte: row r + 8
};
template <>
struct ChunkWeights<true> {
  uint2 values;            // 2 sparse steps x (2 rows x 2 groups x 2 kept codes)
  std::uint32_t metadata;  // mma.sp metadata of step lane % 4 / 2
  std::uint32_t scales;    // byte 2s: row r, byte 2s + 1: row r + 8, of sparse step s
};

// The per-lane addresses of one chunk of an expert's tile (moved along the tile by advance, so
// that the loads of an unrolled loop take immediate offsets).
struct TileAddress {
  const std::uint8_t* weights;
  const std::uint8_t* indices;
  const std::uint8_t* scales;

  template <bool kSparse>
  __device__ __forceinline__ void advance(int chunks) {
    weights += chunks * (kSparse ? 256 : 512);
    if constexpr (kSparse) indices += chunks * 128;
    scales += chunks * 64;
  }
};

template <bool kSparse>
__device__ __forceinline__ ChunkWeights<kSparse> load_chunk(const TileAddress& at, int chunk) {
  ChunkWeights<kSparse> w;
  if constexpr (kSparse) {
    w.scales = __ldcs(reinterpret_cast<const unsigned int*>(at.scales + chunk * 64));
    w.values = __ldcs(reinterpret_cast<const uint2*>(at.weights + chunk * 256));
    w.metadata = __ldcs(reinterpret_cast<const unsigned int*>(at.indices + chunk * 128));
  } else {
    w.scales = __ldcs(reinterpret_cast<const unsigned short*>(at.scales + chunk * 64));
    w.codes = __ldcs(reinterpret_cast<const uint4*>(at.weights + chunk * 512));
  }
  return w;
}

// The table entry of byte kByte of a scales word: the byte extracted by one permute, so that
// its address is one shift-add (the compiler's shift, mask and add took one more per lookup).
template <int kByte>
__device__ __forceinline__ std::uint32_t scale_entry(const Tables& tables, std::uint32_t scales) {
  std::uint32_t code;
  asm("prmt.b32 %0, %1, 0, %2;" : "=r"(code) : "r"(scales), "n"(0x4440 + kByte));
  return tables.scale[code];
}

// A fragments (rows r, r + 8) of tensor-core step j of a chunk.
template <int kStep>
__device__ __forceinline__ void step_fragments(const ChunkWeights<false>& w, const Tables& tables,
                                               std::uint32_t (&a)[4]) {
  const std::uint32_t scale_row = scale_entry<0>(tables, w.scales);
  const std::uint32_t scale_row8 = scale_entry<1>(tables, w.scales);
  const std::uint32_t q = kStep == 0 ? w.codes.x : kStep == 1 ? w.codes.y : kStep == 2 ? w.codes.z : w.codes.w;
  a[0] = mul_bf16x2(detail::gemv_pair_bits<0>(q), scale_row);   // row r,     k +0, +1
  a[1] = mul_bf16x2(detail::gemv_pair_bits<1>(q), scale_row8);  // row r + 8, k +0, +1
  a[2] = mul_bf16x2(detail::gemv_pair_bits<2>(q), scale_row);   // row r,     k +2, +3
  a[3] = mul_bf16x2(detail::gemv_pair_bits<3>(q), scale_row8);  // row r + 8, k +2, +3
}

// A fragments (rows r, r + 8; mma groups lane % 4 and + 4, kept pairs) of sparse step kStep.
template <int kStep>
__device__ __forceinline__ void step_fragments(const ChunkWeights<true>& w, const Tables& tables,
                                               std::uint32_t (&a)[4]) {
  const std::uint32_t scale_row = scale_entry<2 * kStep>(tables, w.scales);
  const std::uint32_t scale_row8 = scale_entry<2 * kStep + 1>(tables, w.scales);
  const std::uint32_t q = kStep == 0 ? w.values.x : w.values.y;
  a[0] = mul_bf16x2(detail::gemv_pair_bits<0>(q), scale_row);   // row r,     group lane % 4
  a[1] = mul_bf16x2(detail::gemv_pair_bits<1>(q), scale_row8);  // row r + 8, group lane % 4
  a[2] = mul_bf16x2(detail::gemv_pair_bits<2>(q), scale_row);   // row r,     group lane % 4 + 4
  a[3] = mul_bf16x2(detail::gemv_pair_bits<3>(q), scale_row8);  // row r + 8, group lane % 4 + 4
}

// One tensor-core step for every token group: a dense 16-deep step, or a sparse 32-deep one.
template <int kStep, bool kSparse, int kTokenGroups>
__device__ __forceinline__ void multiply_step(const ChunkWeights<kSparse>& w, const Tables& tables,
                                              const std::uint32_t (&x)[kTokenGroups][8],
                                              float (&acc)[kTokenGroups][4]) {
  std::uint32_t a[4];
  step_fragments<kStep>(w, tables, a);
#pragma unroll
  for (int n = 0; n < kTokenGroups; ++n) {
    if constexpr (kSparse) {
      mma_sp_bf16<kStep>(acc[n], a, x[n][4 * kStep], x[n][4 * kStep + 1], x[n][4 * kStep + 2],
                         x[n][4 * kStep + 3], w.metadata);
    } else {
      mma_bf16(acc[n], a[0], a[1], a[2], a[3], x[n][2 * kStep], x[n][2 * kStep + 1]);
    }
  }
}

struct SlotRows {
  int expert;      // valid: 0 <= expert < experts
  bool expert_ok;
  int first;       // output row of token 0 of this pass
  int count;       // tokens in this pass, 1..16
};

__device__ __forceinline__ int token_of(const Nvfp4GemvParams& p, int row) {
  return p.token_ids ? p.token_ids[row] : row;
}

// The lane's B fragments of one chunk. Dense: 16 consecutive K values of its token in each
// group. 2:4: word 4s + j of sparse step s holds K values 16s + 4j + {0, 1} past the lane's
// base (lane % 4 / 2 * 32 + lane % 2 * 2): half of an actual group of 4, whose other half sits
// in the neighbouring lane, as mma.sp's groups do. Absent tokens read token 0's row: an output
// column depends only on its own B column, and absent tokens' columns are not stored as sums.
template <bool kSparse, int kTokenGroups>
__device__ __forceinline__ void load_activations(const std::uint16_t* const (&x_row)[kTokenGroups],
                                                 int chunk, std::uint32_t (&x)[kTokenGroups][8]) {
#pragma unroll
  for (int n = 0; n < kTokenGroups; ++n) {
    if constexpr (kSparse) {
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        x[n][v] = __ldg(reinterpret_cast<const unsigned int*>(x_row[n] + chunk * 64 +
                                                               16 * (v / 4) + 4 * (v % 4)));
      }
    } else {
      const uint4 lo = __ldg(reinterpret_cast<const uint4*>(x_row[n] + chunk * 64));
      const uint4 hi = __ldg(reinterpret_cast<const uint4*>(x_row[n] + chunk * 64 + 8));
      x[n][0] = lo.x, x[n][1] = lo.y, x[n][2] = lo.z, x[n][3] = lo.w;
      x[n][4] = hi.x, x[n][5] = hi.y, x[n][6] = hi.z, x[n][7] = hi.w;
    }
  }
}

// One pass over a tile for up to 8 * kTokenGroups tokens, partial sums reduced over the warps
// that split K, stored by the first of them.
template <bool kSparse, int kWarpsPerTile, int kUnroll, int kTokenGroups>
__device__ __forceinline__ void tile_pass(const Nvfp4GemvParams& p, const Tables& tables,
                                          float (*partial)[8][32], const TileAddress& at,
                                          std::int64_t tile, bool tile_ok, const SlotRows& s) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4, quad = lane % 4;
  const int k_warp = warp % kWarpsPerTile;
  const std::uint16_t* x_row[kTokenGroups];
#pragma unroll
  for (int n = 0; n < kTokenGroups; ++n) {
    const int column = n * 8 + group;
    const int token = column < s.count ? token_of(p, s.first + column) : -1;
    const bool x_ok = token >= 0 && token < p.tokens;
    const int lane_offset = kSparse ? quad / 2 * 32 + quad % 2 * 2 : 16 * quad;
    x_row[n] = p.x + (x_ok ? token : 0) * p.x_row_stride + lane_offset;
  }
  float acc[kTokenGroups][4] = {};
  const int chunks = static_cast<int>(p.cols / 64);
  // This warp's chunks are k_warp, k_warp + kWarpsPerTile, ...
  const int my_chunks = (chunks - k_warp + kWarpsPerTile - 1) / kWarpsPerTile;
  // No tokens at all (every output NaN): x may hold no row 0 to read.
  if (tile_ok && s.expert_ok && my_chunks > 0 && p.tokens > 0) {
    // Rolling window: kUnroll chunks of weights in flight, so the stream does not drain while
    // the warp computes. The cursors sit at the chunk of window slot 0 of the current round.
    // NOTE: ptxas issues a round's refills together after the round's last mma and waits for
    // all of them when the next round starts (about a fifth of the stall samples); every way
    // around it measured (L2 prefetch, cp.async or bulk-copy rings in shared memory) cost more
    // issue slots than it saved (docs/perf/nvfp4_gemv.md).
    TileAddress cursor = at;
    cursor.advance<kSparse>(k_warp);
    const std::uint16_t* x_cursor[kTokenGroups];
#pragma unroll
    for (int n = 0; n < kTokenGroups; ++n) x_cursor[n] = x_row[n] + k_warp * 64;
    ChunkWeights<kSparse> w[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (u < my_chunks) w[u] = load_chunk<kSparse>(cursor, u * kWarpsPerTile);
    }
    // One token group loads its activations a chunk ahead (2 or 4 chunks measured at most 4%
    // faster on H200 before the decode cut, for 8 more registers each); two groups load them
    // in place (registers: the two-group path serves slots of 9..16 tokens).
    constexpr bool kAhead = kTokenGroups == 1;
    std::uint32_t x[kTokenGroups][8];
    if constexpr (kAhead) load_activations<kSparse>(x_cursor, 0, x);
    // Chunk i = first + u uses window slot u, then refills it with chunk i + kUnroll (x with
    // chunk i + 1): no register copies of the slots.
    auto chunk_step = [&](int u, int i, bool check_refills) {
      if constexpr (!kAhead) load_activations<kSparse>(x_cursor, u * kWarpsPerTile, x);
      multiply_step<0>(w[u], tables, x, acc);
      multiply_step<1>(w[u], tables, x, acc);
      if constexpr (!kSparse) {  // 2:4: two 32-deep sparse steps cover the chunk
        multiply_step<2>(w[u], tables, x, acc);
        multiply_step<3>(w[u], tables, x, acc);
      }
      if (!check_refills || i + kUnroll < my_chunks) {
        w[u] = load_chunk<kSparse>(cursor, (u + kUnroll) * kWarpsPerTile);
      }
      if (kAhead && (!check_refills || i + 1 < my_chunks)) {
        load_activations<kSparse>(x_cursor, (u + 1) * kWarpsPerTile, x);
      }
    };
    auto next_round = [&] {
      cursor.advance<kSparse>(kUnroll * kWarpsPerTile);
#pragma unroll
      for (int n = 0; n < kTokenGroups; ++n) x_cursor[n] += kUnroll * kWarpsPerTile * 64;
    };
    // Steady state: every refill is in range, so no per-chunk checks; then the last chunks.
    int first = 0;
    for (; first + 2 * kUnroll <= my_chunks; first += kUnroll) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) chunk_step(u, first + u, false);
      next_round();
    }
    for (; first < my_chunks; first += kUnroll) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (first + u >= my_chunks) break;
        chunk_step(u, first + u, true);
      }
      next_round();
    }
  }
  if constexpr (kWarpsPerTile > 1) {
#pragma unroll
    for (int n = 0; n < kTokenGroups; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) partial[warp][n * 4 + i][lane] = acc[n][i];
    }
    __syncthreads();
    if (k_warp == 0) {
      for (int other = 1; other < kWarpsPerTile; ++other) {
#pragma unroll
        for (int n = 0; n < kTokenGroups; ++n) {
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[n][i] += partial[warp + other][n * 4 + i][lane];
        }
      }
    }
    __syncthreads();  // the next pass reuses `partial`
  }
  if (k_warp != 0 || !tile_ok) return;
  const float global = s.expert_ok ? p.global_scales[s.expert] * 256.0f : 0.0f;
#pragma unroll
  for (int n = 0; n < kTokenGroups; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int column = n * 8 + 2 * quad + (i & 1);
      if (column >= s.count) continue;
      const int token = token_of(p, s.first + column);
      const bool ok = s.expert_ok && token >= 0 && token < p.tokens;
      const std::int64_t row = tile * 16 + group + (i >= 2 ? 8 : 0);
      p.output[static_cast<std::int64_t>(s.first + column) * p.output_row_stride + row] =
          ok ? float_to_bf16(acc[n][i] * global) : std::uint16_t{0x7FC0};
    }
  }
}

// One (slot, tile) work item: every pass over the slot's tokens. With K split over warps, the
// warps of a block share the item (the passes synchronize the block).
template <bool kSparse, int kWarpsPerTile, int kUnroll>
__device__ __forceinline__ void slot_tile(const Nvfp4GemvParams& p, const Tables& tables,
                                          float (*partial)[8][32], std::int64_t slot,
                                          std::int64_t tile) {
  const int expert = p.expert_ids ? p.expert_ids[slot] : 0;
  if (expert < 0) return;  // idle slot (uniform over a K-split block)
  const int begin = p.slot_offsets ? p.slot_offsets[slot] : 0;
  const int end = p.slot_offsets ? p.slot_offsets[slot + 1] : static_cast<int>(p.tokens);
  const int lane = threadIdx.x % 32;
  const bool tile_ok = tile < p.rows / 16;
  const bool expert_ok = expert < p.experts;
  const std::int64_t weight_codes = p.rows * p.cols;  // per expert
  const std::int64_t first_chunk = tile * (p.cols / 64);
  const std::int64_t e = expert_ok ? expert : 0;
  TileAddress at;
  if constexpr (kSparse) {
    at.scales = p.block_scales + e * (weight_codes / 16) + first_chunk * 64 + (lane / 4) * 8 +
                (lane % 2) * 4;
    at.weights = p.weights + e * (weight_codes / 4) + first_chunk * 256 + lane * 8;
    at.indices = p.indices + e * (weight_codes / 8) + first_chunk * 128 + lane * 4;
  } else {
    at.scales = p.block_scales + e * (weight_codes / 16) + first_chunk * 64 + lane * 2;
    at.weights = p.weights + e * (weight_codes / 2) + first_chunk * 512 + lane * 16;
    at.indices = nullptr;
  }
  for (int first = begin; first < end; first += 16) {
    const SlotRows s{expert, expert_ok, first, min(16, end - first)};
    if (s.count > 8) {
      tile_pass<kSparse, kWarpsPerTile, 4, 2>(p, tables, partial, at, tile, tile_ok, s);
    } else {
      tile_pass<kSparse, kWarpsPerTile, kUnroll, 1>(p, tables, partial, at, tile, tile_ok, s);
    }
  }
}

// NOTE: the register cap sets how many warps are in flight per SM. A window of 8 chunks fits 128
// registers (4 blocks, 16 warps); a window of 4 fits 80 (6 blocks, 24 warps; no spills, and 6
// measured up to 27% faster than 4 on launches of many experts); the K-split variants hold
// partial sums too and get 3 blocks.
template <int kWarpsPerTile, int kUnroll>
inline constexpr int kBlocksPerSm = kWarpsPerTile > 1 ? 3 : kUnroll == 8 ? 4 : 6;

// One warp per tile: warp w of a grid of W warps takes the (slot, tile) items w, w + W, ...;
// with only the resident blocks in the grid (short items) there is no second wave and no block
// start per tile. K split over warps: one block per (tile group, slot), grid.y the slots.
template <bool kSparse, int kWarpsPerTile, int kUnroll>
__global__ void __launch_bounds__(kThreads, (kBlocksPerSm<kWarpsPerTile, kUnroll>))
    nvfp4_gemv_kernel(Nvfp4GemvParams p) {
  constexpr int kTilesPerBlock = kGemvWarpsPerBlock / kWarpsPerTile;
  __shared__ Tables tables;
  __shared__ float partial[kWarpsPerTile > 1 ? kGemvWarpsPerBlock : 1][8][32];
  fill_tables(tables);
  __syncthreads();
  const int warp = threadIdx.x / 32;
  if constexpr (kWarpsPerTile == 1) {
    const std::int64_t tiles = p.rows / 16, items = tiles * p.slots;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kGemvWarpsPerBlock;
    for (std::int64_t item = static_cast<std::int64_t>(blockIdx.x) * kGemvWarpsPerBlock + warp;
         item < items; item += stride) {
      slot_tile<kSparse, kWarpsPerTile, kUnroll>(p, tables, partial, item / tiles, item % tiles);
    }
  } else {
    slot_tile<kSparse, kWarpsPerTile, kUnroll>(
        p, tables, partial, blockIdx.y,
        static_cast<std::int64_t>(blockIdx.x) * kTilesPerBlock + warp / kWarpsPerTile);
  }
}

template <bool kSparse>
void launch(const Nvfp4GemvParams& p, const Nvfp4GemvConfig& config, cudaStream_t stream) {
  const char* op = kSparse ? kSparseOp : kDenseOp;
  const std::int64_t tiles = p.rows / 16;
  auto run = [&](auto kernel, int warps_per_tile, int blocks_per_sm) {
    dim3 grid;
    if (warps_per_tile == 1) {
      // Items of up to 32 chunks: only the resident blocks, each warp looping over items
      // (measured 1-9% faster over many experts). Longer items: a block per 4 items, which the
      // hardware hands out as blocks finish (a static share of 2.5 items per warp of
      // 112-chunk items was 6% slower on DeepSeek gate_up at M = 4).
      const std::int64_t items = tiles * p.slots;
      const std::int64_t blocks = (items + kGemvWarpsPerBlock - 1) / kGemvWarpsPerBlock;
      const std::int64_t resident =
          static_cast<std::int64_t>(blocks_per_sm) * current_device_sm_count(op);
      grid = dim3(static_cast<unsigned>(p.cols / 64 <= 32 ? std::min(blocks, resident) : blocks));
    } else {
      const int tiles_per_block = kGemvWarpsPerBlock / warps_per_tile;
      grid = dim3(static_cast<unsigned>((tiles + tiles_per_block - 1) / tiles_per_block),
                  static_cast<unsigned>(p.slots));
    }
    kernel<<<grid, kThreads, 0, stream>>>(p);
  };
  const int key = config.warps_per_tile * 10 + config.unroll;
  switch (key) {
    case 14: run(nvfp4_gemv_kernel<kSparse, 1, 4>, 1, kBlocksPerSm<1, 4>); break;
    case 18: run(nvfp4_gemv_kernel<kSparse, 1, 8>, 1, kBlocksPerSm<1, 8>); break;
    case 24: run(nvfp4_gemv_kernel<kSparse, 2, 4>, 2, kBlocksPerSm<2, 4>); break;
    case 44: run(nvfp4_gemv_kernel<kSparse, 4, 4>, 4, kBlocksPerSm<4, 4>); break;
    default: throw Error(op, "config", "(1, 4), (1, 8), (2, 4) or (4, 4)", std::to_string(key));
  }
  check_launch(op);
}

}  // namespace

void launch_nvfp4_gemv(const Nvfp4GemvParams& p, cudaStream_t stream) {
  const bool sparse = p.indices != nullptr;
  const char* op = sparse ? kSparseOp : kDenseOp;
  if (p.slots > 65535) {
    throw Error(op, "routing.expert_ids", "at most 65535 slots (grid.y)", std::to_string(p.slots));
  }
  if (p.slots == 0 || p.rows == 0) return;
  const Nvfp4GemvConfig config =
      choose_nvfp4_gemv_config(p.rows, p.cols, p.slots, p.output_rows, sparse);
  if (sparse) {
    launch<true>(p, config, stream);
  } else {
    launch<false>(p, config, stream);
  }
}

}  // namespace lowbit::cuda
