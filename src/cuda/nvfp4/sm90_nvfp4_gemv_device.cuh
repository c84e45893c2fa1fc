// Device pieces shared by the NVFP4 GEMV kernels (sm90_nvfp4_gemv.cu, docs/nvfp4.md): the
// tensor-core wrappers, the scale table, one chunk's loads and decode, activations and stores.
// Included by that one translation unit only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../../common/nvfp4_gemv_layout.h"
#include "lowbit/formats.h"
#include "nvfp4_gemv_config.h"
#include "nvfp4_launch.h"

namespace lowbit::cuda::nvfp4_gemv {

constexpr int kThreads = kGemvWarpsPerBlock * 32;

// float -> bf16 bits, round-to-nearest-even, NaN -> 0x7FFF: formats.h's float_to_bf16 in one
// conversion instruction (equal for every float32: FormatsGpu.EncodersMatchCudaForEveryFloat32).
__device__ __forceinline__ std::uint16_t bf16_bits(float value) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

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

// The hardware conversions (e4m3 -> f16 -> f32, f32 -> bf16 round-to-nearest-even, NaN ->
// 0x7FFF) give the bits formats.h's float_to_bf16(fp8_e4m3_to_float(code) * 2^118) does
// (FormatsGpu.DecodersMatchCudaForEveryCode and EncodersMatchCudaForEveryFloat32), in a few
// instructions instead of ~70 per entry before the first weights are requested.
__device__ void fill_tables(Tables& tables) {
  const float k2Pow118 = __uint_as_float((118u + 127u) << 23);
  for (int code = threadIdx.x; code < 256; code += blockDim.x) {
    const __half_raw half =
        __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), __NV_E4M3);
    const std::uint32_t bits = bf16_bits(__half2float(__half(half)) * k2Pow118);
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
  std::uint32_t scales;    // low byte: row r, next byte: row r + 8 (both sparse steps)
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
    w.scales = __ldcs(reinterpret_cast<const unsigned short*>(at.scales + chunk * 64));
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
  const std::uint32_t scale_row = scale_entry<0>(tables, w.scales);  // one 16-K block a lane
  const std::uint32_t scale_row8 = scale_entry<1>(tables, w.scales);
  const std::uint32_t q = kStep == 0 ? w.values.x : w.values.y;
  a[0] = mul_bf16x2(detail::gemv_pair_bits<0>(q), scale_row);   // row r,     group lane % 4
  a[1] = mul_bf16x2(detail::gemv_pair_bits<1>(q), scale_row8);  // row r + 8, group lane % 4
  a[2] = mul_bf16x2(detail::gemv_pair_bits<2>(q), scale_row);   // row r,     group lane % 4 + 4
  a[3] = mul_bf16x2(detail::gemv_pair_bits<3>(q), scale_row8);  // row r + 8, group lane % 4 + 4
}

// One tensor-core step for every token group from its decoded A fragments: a dense 16-deep
// step, or a sparse 32-deep one.
template <int kStep, bool kSparse, int kTokenGroups>
__device__ __forceinline__ void multiply_fragments(const std::uint32_t (&a)[4],
                                                   const ChunkWeights<kSparse>& w,
                                                   const std::uint32_t (&x)[kTokenGroups][8],
                                                   float (&acc)[kTokenGroups][4]) {
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

template <int kStep, bool kSparse, int kTokenGroups>
__device__ __forceinline__ void multiply_step(const ChunkWeights<kSparse>& w, const Tables& tables,
                                              const std::uint32_t (&x)[kTokenGroups][8],
                                              float (&acc)[kTokenGroups][4]) {
  std::uint32_t a[4];
  step_fragments<kStep>(w, tables, a);
  multiply_fragments<kStep>(a, w, x, acc);
}

// Every step of a chunk, the first from fragments `step0` already decoded.
template <bool kSparse, int kTokenGroups>
__device__ __forceinline__ void multiply_chunk(const std::uint32_t (&step0)[4],
                                               const ChunkWeights<kSparse>& w, const Tables& tables,
                                               const std::uint32_t (&x)[kTokenGroups][8],
                                               float (&acc)[kTokenGroups][4]) {
  multiply_fragments<0>(step0, w, x, acc);
  multiply_step<1>(w, tables, x, acc);
  if constexpr (!kSparse) {  // 2:4: two 32-deep sparse steps cover the chunk
    multiply_step<2>(w, tables, x, acc);
    multiply_step<3>(w, tables, x, acc);
  }
}

template <bool kSparse, int kTokenGroups>
__device__ __forceinline__ void multiply_chunk(const ChunkWeights<kSparse>& w, const Tables& tables,
                                               const std::uint32_t (&x)[kTokenGroups][8],
                                               float (&acc)[kTokenGroups][4]) {
  std::uint32_t step0[4];
  step_fragments<0>(w, tables, step0);
  multiply_chunk(step0, w, tables, x, acc);
}

// The window in two halves, computed in turn: a half starts by decoding its first fragments,
// which waits for the half's weights, and only then requests the other half's next chunks
// (`request`), fenced by warp barriers. ptxas keeps every weight load of the loop on one
// scoreboard and waits for all of it at the first use; requested before that use, the other
// half's loads would be waited for too, and left to ptxas, the requests sink to the loop's end
// (docs/perf/nvfp4_gemv.md, "Two window halves").
template <bool kSparse, typename Request>
__device__ __forceinline__ void start_half(const ChunkWeights<kSparse>& first, const Tables& tables,
                                           std::uint32_t (&step0)[4], Request request) {
  step_fragments<0>(first, tables, step0);
  __syncwarp();
  request();
  __syncwarp();
}

struct SlotRows {
  int expert;      // valid: 0 <= expert < experts
  bool expert_ok;
  int first;       // output row of token 0 of this pass
  int count;       // tokens in this pass, 1..16
};

// A slot's expert and token rows (an idle slot, expert < 0, reads no offsets).
struct SlotInfo {
  int expert;  // < 0: idle
  int begin, end;
  int passes;  // of 8 tokens
};

// The expert and the token offsets are read together, one memory round trip before the weights
// can be requested instead of two (an idle slot's offsets are read and ignored: the list has
// slots + 1 entries).
// Split in its reads (read_slot_info, passes left 0) and the arithmetic on them (with_passes)
// for the balanced kernel, whose start computes other things while the reads are in flight.
__device__ __forceinline__ SlotInfo read_slot_info(const Nvfp4GemvParams& p, std::int64_t slot) {
  return SlotInfo{p.expert_ids ? p.expert_ids[slot] : 0, p.slot_offsets ? p.slot_offsets[slot] : 0,
                  p.slot_offsets ? p.slot_offsets[slot + 1] : static_cast<int>(p.tokens), 0};
}

__device__ __forceinline__ SlotInfo with_passes(const SlotInfo& read) {
  if (read.expert < 0) return SlotInfo{read.expert, 0, 0, 0};
  return SlotInfo{read.expert, read.begin, read.end, (max(read.end - read.begin, 0) + 7) / 8};
}

__device__ __forceinline__ SlotInfo slot_info(const Nvfp4GemvParams& p, std::int64_t slot) {
  return with_passes(read_slot_info(p, slot));
}

__device__ __forceinline__ int token_of(const Nvfp4GemvParams& p, int row) {
  return p.token_ids ? p.token_ids[row] : row;
}

// The lane's B fragments of one chunk. Dense: 16 consecutive K values of its token in each
// group. 2:4: word 4s + j of sparse step s holds K values 32 * (j % 2) + 8s + 4 * (j / 2) +
// {0, 1} past the lane's base (lane % 4 / 2 * 16 + lane % 2 * 2), of group 4 * (lane % 4 / 2) +
// 8 * (j % 2) + 2s + j / 2 (mma group lane % 4 / 2 + 2j of step s, nvfp4_gemv_layout.h): half of
// an actual group of 4, whose other half sits in the neighbouring lane, as mma.sp's groups do.
// Absent tokens read token 0's row: an output column depends only on its own B column, and absent
// tokens' columns are not stored as sums.
// kQuadX (2:4; x_row_of with the same flag): the same words from two 16-byte loads a chunk, K
// values 8 * (lane % 4) .. + 7 and 32 more, and two word swaps with the neighbouring lane, which
// holds the other halves of the same groups. Eight 4-byte loads of a warp touch as many rows as
// the pass has tokens each, and at 8 tokens on one expert they bound the kernel (NVIDIA H200,
// fifty-third session: 2:4 2.6x its one-token time); at one token all lanes read one row, and the
// eight loads issue fewer instructions than this.
template <bool kSparse, bool kQuadX = false, int kTokenGroups>
__device__ __forceinline__ void load_activations(const std::uint16_t* const (&x_row)[kTokenGroups],
                                                 int chunk, std::uint32_t (&x)[kTokenGroups][8]) {
#pragma unroll
  for (int n = 0; n < kTokenGroups; ++n) {
    if constexpr (kSparse && kQuadX) {
      // The even lane of a pair keeps words 0 and 2 of each load (K 16p + {0, 4}) and takes the
      // odd lane's 0 and 2 (16p + {8, 12}); the odd lane keeps 1 and 3 (16p + {10, 14}) and
      // takes the even lane's 1 and 3 (16p + {2, 6}).
      const bool odd = threadIdx.x & 1;
      const uint4 lo = __ldg(reinterpret_cast<const uint4*>(x_row[n] + chunk * 64));
      const uint4 hi = __ldg(reinterpret_cast<const uint4*>(x_row[n] + chunk * 64 + 32));
      auto spread = [&](const uint4& q, int first_word) {
        const std::uint32_t got0 = __shfl_xor_sync(0xffffffffu, odd ? q.x : q.y, 1);
        const std::uint32_t got1 = __shfl_xor_sync(0xffffffffu, odd ? q.z : q.w, 1);
        x[n][first_word + 0] = odd ? got0 : q.x;
        x[n][first_word + 2] = odd ? got1 : q.z;
        x[n][first_word + 4] = odd ? q.y : got0;
        x[n][first_word + 6] = odd ? q.w : got1;
      };
      spread(lo, 0);
      spread(hi, 1);
    } else if constexpr (kSparse) {
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        x[n][v] = __ldg(reinterpret_cast<const unsigned int*>(
            x_row[n] + chunk * 64 + 32 * (v % 2) + 8 * (v / 4) + 4 * (v % 4 / 2)));
      }
    } else {
      const uint4 lo = __ldg(reinterpret_cast<const uint4*>(x_row[n] + chunk * 64));
      const uint4 hi = __ldg(reinterpret_cast<const uint4*>(x_row[n] + chunk * 64 + 8));
      x[n][0] = lo.x, x[n][1] = lo.y, x[n][2] = lo.z, x[n][3] = lo.w;
      x[n][4] = hi.x, x[n][5] = hi.y, x[n][6] = hi.z, x[n][7] = hi.w;
    }
  }
}

// The lane's activation row for token `token` (absent or out-of-range tokens: token 0's row),
// for load_activations with the same kQuadX.
template <bool kSparse, bool kQuadX = false>
__device__ __forceinline__ const std::uint16_t* x_row_of_token(const Nvfp4GemvParams& p,
                                                               int token) {
  const int quad = threadIdx.x % 4;
  const bool x_ok = token >= 0 && token < p.tokens;
  const int lane_offset = kSparse && kQuadX ? 8 * quad
                          : kSparse         ? quad / 2 * 16 + quad % 2 * 2
                                            : 16 * quad;
  return p.x + (x_ok ? token : 0) * p.x_row_stride + lane_offset;
}

// The lane's activation row for output column `column` of a pass.
template <bool kSparse, bool kQuadX = false>
__device__ __forceinline__ const std::uint16_t* x_row_of(const Nvfp4GemvParams& p,
                                                         const SlotRows& s, int column) {
  return x_row_of_token<kSparse, kQuadX>(p, column < s.count ? token_of(p, s.first + column) : -1);
}

// One output of a tile: bf16 of sum * global (the expert's global scale * 2^8), NaN for
// out-of-range experts or tokens.
__device__ __forceinline__ void store_output(const Nvfp4GemvParams& p, float sum, float global,
                                             const SlotRows& s, std::int64_t row, int column,
                                             int token) {
  const bool ok = s.expert_ok && token >= 0 && token < p.tokens;
  p.output[static_cast<std::int64_t>(s.first + column) * p.output_row_stride + row] =
      ok ? bf16_bits(sum * global) : std::uint16_t{0x7FC0};
}

__device__ __forceinline__ float output_scale(const Nvfp4GemvParams& p, const SlotRows& s) {
  return s.expert_ok ? p.global_scales[s.expert] * 256.0f : 0.0f;
}

// Stores one token group's sums of a tile (columns column_base..+7), the tokens read from the
// launch's token list.
__device__ __forceinline__ void store_outputs(const Nvfp4GemvParams& p, const float (&acc)[4],
                                              const SlotRows& s, std::int64_t tile,
                                              int column_base) {
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
  const float global = output_scale(p, s);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int column = column_base + 2 * quad + (i & 1);
    if (column >= s.count) continue;
    store_output(p, acc[i], global, s, tile * 16 + group + (i >= 2 ? 8 : 0), column,
                 token_of(p, s.first + column));
  }
}

// The lane's addresses of chunk 0 of expert e's 16-row tile `tile`.
template <bool kSparse>
__device__ __forceinline__ TileAddress tile_address(const Nvfp4GemvParams& p, std::int64_t e,
                                                    std::int64_t tile) {
  const int lane = threadIdx.x % 32;
  const std::int64_t weight_codes = p.rows * p.cols;  // per expert
  const std::int64_t first_chunk = tile * (p.cols / 64);
  TileAddress at;
  if constexpr (kSparse) {
    at.scales = p.block_scales + e * (weight_codes / 16) + first_chunk * 64 + (lane / 4) * 8 +
                (lane % 4) * 2;
    at.weights = p.weights + e * (weight_codes / 4) + first_chunk * 256 + lane * 8;
    at.indices = p.indices + e * (weight_codes / 8) + first_chunk * 128 + lane * 4;
  } else {
    at.scales = p.block_scales + e * (weight_codes / 16) + first_chunk * 64 + lane * 2;
    at.weights = p.weights + e * (weight_codes / 2) + first_chunk * 512 + lane * 16;
    at.indices = nullptr;
  }
  return at;
}

}  // namespace lowbit::cuda::nvfp4_gemv
