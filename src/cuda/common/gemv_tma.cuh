// Decode GEMV on wgmma fed by the Tensor Memory Accelerator (sm_90a) for 8-bit weights: a few
// tokens (M <= 64) against a K-major fp8 e4m3 or int8 weight [N, K], both operands of wgmma in
// shared memory.
//
// Why: common/gemv_wgmma.cuh fed the weights to wgmma from registers, and ptxas assembled the
// register quads with moves that waited on a scoreboard shared by every load in flight, so about
// one step of weights was in flight per warpgroup. Here the copy engine writes each 128-deep
// step of 64 weight rows (8 KB) and of the tokens (1 KB per 8) into a ring of stages that
// complete on mbarriers; no register holds a weight and nothing waits for a load but the wgmma
// that reads it. TMA's 128-byte swizzle is wgmma's K-major shared layout, and TMA writes zeros
// past the matrix's edges (K's tail, rows >= N, tokens >= M), so nothing is masked.
//
// Roles: a block is one warpgroup (128 threads) owning 64 weight rows; thread 0 also issues the
// copies. K is split over the blocks of a cluster (split p takes the p-th contiguous range of
// steps); the other blocks push their sums into the leader's shared memory (a receive area, or
// its ring once consumed; where neither fits, the leader reads theirs between two cluster
// barriers) and it adds them in rank order, so the result does not depend on timing and there
// is no workspace. The split is the smallest that gives enough blocks to keep HBM busy, all
// resident at once (choose_plan).
//
// fp8: each step's tensor-core sum (accumulated by wgmma from zero) is added to fp32 registers,
// optionally times a per-step scale (DeepSeek-V3 block scaling); int8 accumulates in the
// tensor core's int32 directly (exact). The Policy interface is described at run().
#pragma once

#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "bulk_copy.cuh"
#include "cluster_copy.cuh"
#include "gemv_tma_plan.h"
#include "gemv_wgmma.cuh"
#include "kernel_launch.cuh"
#include "tensor_map.cuh"

namespace lowbit::cuda::gemv_tma {

// ---- the copy engine and wgmma on shared operands (PTX ISA 8.0) ----

// Box (k0, row0) of `map` into shared memory at `destination`, completing on `barrier`.
__device__ __forceinline__ void load_box(const CUtensorMap& map, std::uint32_t destination,
                                         std::uint64_t* barrier, int k0, int row0) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(destination),
      "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(k0), "r"(row0),
      "r"(shared_address(barrier))
      : "memory");
}

// load_box with an L2 cache policy (createpolicy) for the copy's bytes.
__device__ __forceinline__ void load_box_with_policy(const CUtensorMap& map,
                                                     std::uint32_t destination,
                                                     std::uint64_t* barrier, int k0, int row0,
                                                     std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(destination),
      "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(k0), "r"(row0),
      "r"(shared_address(barrier)), "l"(policy)
      : "memory");
}

// An L2 policy that evicts the lines it covers first (for bytes read once).
__device__ __forceinline__ std::uint64_t evict_first_policy() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// Descriptor of a K-major operand written by TMA with the 128-byte swizzle: rows of 128 bytes,
// groups of 8 rows 1024 bytes apart (stride byte offset); the leading offset is unused for this
// layout. A 32-deep sub-step starts 32 bytes further into the same rows.
__device__ __forceinline__ std::uint64_t swizzled_descriptor(std::uint32_t shared_address) {
  constexpr std::uint64_t kStride = 1024 >> 4, kSwizzle128B = 1;
  return static_cast<std::uint64_t>((shared_address & 0x3FFFF) >> 4) | (std::uint64_t{1} << 16) |
         (kStride << 32) | (kSwizzle128B << 62);
}

// D (64 x 8 T) = A (64 x 32, shared) * B (32 x 8 T, shared) + (accumulate ? D : 0).
template <int kTiles>
__device__ __forceinline__ void wgmma_ss(float (&d)[4 * kTiles], std::uint64_t a, std::uint64_t b,
                                         bool accumulate);
template <int kTiles>
__device__ __forceinline__ void wgmma_ss(int (&d)[4 * kTiles], std::uint64_t a, std::uint64_t b,
                                         bool accumulate);

#define LOWBIT_WGMMA_SS(PREDICATE, SHAPE_TYPES)                           \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" PREDICATE ", 0;\n"                 \
  "wgmma.mma_async.sync.aligned." SHAPE_TYPES " "

template <>
__device__ __forceinline__ void wgmma_ss<1>(float (&d)[4], std::uint64_t a,
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_SS("6", "m64n8k32.f32.e4m3.e4m3")
               "{%0,%1,%2,%3}, %4, %5, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "l"(a), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_ss<2>(float (&d)[8], std::uint64_t a,
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_SS("10", "m64n16k32.f32.e4m3.e4m3")
               "{%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                 "+f"(d[6]), "+f"(d[7])
               : "l"(a), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_ss<4>(float (&d)[16], std::uint64_t a,
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_SS("18", "m64n32k32.f32.e4m3.e4m3")
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                 "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                 "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(a), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_ss<8>(float (&d)[32], std::uint64_t a,
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_SS("34", "m64n64k32.f32.e4m3.e4m3")
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
               "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
               "%32, %33, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                 "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                 "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                 "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                 "+f"(d[30]), "+f"(d[31])
               : "l"(a), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_ss<1>(int (&d)[4], std::uint64_t a,
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_SS("6", "m64n8k32.s32.s8.s8")
               "{%0,%1,%2,%3}, %4, %5, p;\n}\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "l"(a), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_ss<2>(int (&d)[8], std::uint64_t a,
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_SS("10", "m64n16k32.s32.s8.s8")
               "{%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p;\n}\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                 "+r"(d[6]), "+r"(d[7])
               : "l"(a), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_ss<4>(int (&d)[16], std::uint64_t a,
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_SS("18", "m64n32k32.s32.s8.s8")
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p;\n}\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                 "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
                 "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
               : "l"(a), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_ss<8>(int (&d)[32], std::uint64_t a,
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_SS("34", "m64n64k32.s32.s8.s8")
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
               "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
               "%32, %33, p;\n}\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                 "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
                 "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
                 "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
                 "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
                 "+r"(d[30]), "+r"(d[31])
               : "l"(a), "l"(b), "r"(int{accumulate}));
}
#undef LOWBIT_WGMMA_SS

// ---- the kernel body ----

// A partial sum's 32 bits, and back (fp32 sums of fp8, int32 sums of int8).
__device__ __forceinline__ std::uint32_t as_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ std::uint32_t as_bits(int v) { return static_cast<std::uint32_t>(v); }
template <typename Acc>
__device__ __forceinline__ Acc from_bits(std::uint32_t bits) {
  if constexpr (std::is_same_v<Acc, float>) {
    return __uint_as_float(bits);
  } else {
    return static_cast<int>(bits);
  }
}

struct Maps {
  CUtensorMap weights;  // [N, K] bytes, boxes of 128 x 64 rows
  CUtensorMap tokens;   // [M, K] bytes, boxes of 128 x 8 T tokens
};

// Host: the tensor maps of the weight [N, K] (row stride ldw) and the tokens [M, K] (row stride
// ldt) for `token_tiles` tiles of 8 tokens, the weights' unwidened where the plan reads them
// once; false when the driver refuses them.
inline bool encode_maps(Maps& maps, const void* weight, std::int64_t n, std::int64_t ldw,
                        const void* tokens, std::int64_t m, std::int64_t ldt, std::int64_t k,
                        int token_tiles, const Plan& plan) {
  return encode_byte_matrix_map(&maps.weights, weight, n, k, ldw, kRows,
                                plan.weights_read_once ? CU_TENSOR_MAP_L2_PROMOTION_NONE
                                                       : CU_TENSOR_MAP_L2_PROMOTION_L2_256B) &&
         encode_byte_matrix_map(&maps.tokens, tokens, m, k, ldt,
                                static_cast<std::uint32_t>(8 * token_tiles));
}

// A thread's epilogue terms: those of its 2 rows and 2 T tokens, each loaded once (indices
// clamped into range; outputs out of range are not stored). Loading them per output cost
// scaled_mm up to 5 loads per value.
template <typename Policy, int kValues>
struct FragmentTerms {
  typename Policy::RowTerms rows[2];
  typename Policy::TokenTerms tokens[kValues / 2];

  __device__ __forceinline__ FragmentTerms(const Policy& policy, std::int64_t row0,
                                           std::int64_t n, std::int64_t m) {
    const int thread = threadIdx.x;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::int64_t row = row0 + gemv_wgmma::fragment_row(thread, 2 * r);
      rows[r] = policy.row_terms(row < n ? row : n - 1);
    }
#pragma unroll
    for (int t = 0; t < kValues / 2; ++t) {
      const std::int64_t token = gemv_wgmma::fragment_token(thread, 4 * (t / 2) + t % 2);
      tokens[t] = policy.token_terms(token < m ? token : m - 1);
    }
  }
  // The output of fragment value v.
  __device__ __forceinline__ typename Policy::Out value(const Policy& policy, int v,
                                                        typename Policy::Acc total) const {
    return policy.value(rows[(v / 2) % 2], tokens[2 * (v / 4) + v % 2], total);
  }
};

// Writes the block's outputs (rows row0.. of tokens 0..m-1) through shared memory: the
// fragment layout scatters each warp's stores over 4 tokens, 16 bytes each; staged, each
// token's 64 outputs leave as 16-byte vectors. Measured on an H200 against the scattered
// stores: block_fp8_mm 2-15% faster at M = 64 and 0-4% at M = 32; scaled_mm unchanged (its
// per-element scale loads were what its epilogue cost: FragmentTerms). `tile_memory` is the
// consumed ring: 1 KB aligned, at least one stage, enough for 8 T rows of kStride outputs.
template <typename Policy, int kValues>
__device__ __forceinline__ void store_tile(const Policy& policy,
                                           const FragmentTerms<Policy, kValues>& terms,
                                           const typename Policy::Acc (&acc)[kValues],
                                           std::int64_t row0, std::int64_t n, std::int64_t m,
                                           unsigned char* tile_memory) {
  using Out = typename Policy::Out;
  // Rows of 2-byte outputs 144 bytes apart put a warp's 4 tokens in different banks; fp32
  // (a checking output) keeps 256 so that 64 tokens fit the smallest ring.
  constexpr int kStride = sizeof(Out) == 2 ? kRows + 8 : kRows;
  constexpr int kVector = 16 / sizeof(Out), kVectorsPerToken = kRows / kVector;
  constexpr int kTokens = kValues * 2;  // 4 T values per thread cover 8 T tokens
  static_assert(kTokens * kStride * sizeof(Out) <= stage_bytes(kValues / 4),
                "the output tile must fit one stage");
  const int thread = threadIdx.x;
  Out* tile = reinterpret_cast<Out*>(tile_memory);
  __syncthreads();  // every warp's last wgmma has read the ring
#pragma unroll
  for (int v = 0; v < kValues; ++v) {
    const int row = gemv_wgmma::fragment_row(thread, v);
    const int token = gemv_wgmma::fragment_token(thread, v);
    if (row0 + row < n && token < m) {
      tile[token * kStride + row] = terms.value(policy, v, acc[v]);
    }
  }
  __syncthreads();
  for (int i = thread; i < kTokens * kVectorsPerToken; i += 128) {
    const int token = i / kVectorsPerToken, first = (i % kVectorsPerToken) * kVector;
    if (token >= m) break;
    const Out* source = tile + token * kStride + first;
    Out* target = policy.output_row(token) + row0 + first;
    if (row0 + first + kVector <= n && reinterpret_cast<std::uintptr_t>(target) % 16 == 0) {
      *reinterpret_cast<uint4*>(target) = *reinterpret_cast<const uint4*>(source);
    } else {
      for (int e = 0; e < kVector && row0 + first + e < n; ++e) target[e] = source[e];
    }
  }
}

// Policy supplies: Acc (float for fp8, int for int8); kPromote (fp8: each step's sum is added to
// the registers); kStepScales, and with it token_scale(step, token) and step_scale(step) (the
// addresses of two fp32 factors of each step's sum, e.g. As and Bs of DeepSeek-V3 block
// scaling); RowTerms row_terms(row) and TokenTerms token_terms(token), the epilogue factors of
// a row and of a token; value(row_terms, token_terms, total), the output; output_row(token).
template <typename Policy, int kTiles>
__device__ __forceinline__ void run(const Maps& maps, std::int64_t n, std::int64_t m,
                                    std::int64_t k, const Plan& plan, const Policy& policy,
                                    unsigned char* shared) {
  using Acc = typename Policy::Acc;
  constexpr int kValues = 4 * kTiles;
  constexpr int kStageBytes = stage_bytes(kTiles);
  const int thread = threadIdx.x;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRows;
  const int split = blockIdx.y, splits = gridDim.y, stages = plan.stages;
  const int steps = static_cast<int>((k + kStepK - 1) / kStepK);
  // This block's steps: first, first + 1, ... (a contiguous range reads each row in order).
  const int per_split = (steps + splits - 1) / splits;
  const int first = split * per_split;
  const int mine = std::clamp(steps - first, 0, per_split);

  // Stages aligned to 1 KB (the swizzle pattern repeats every 8 rows of 128 bytes).
  const std::uint32_t raw = shared_address(shared);
  const std::uint32_t ring = (raw + 1023) & ~1023u;
  unsigned char* ring_pointer = shared + (ring - raw);
  auto* full = reinterpret_cast<std::uint64_t*>(ring_pointer + stages * kStageBytes);
  // Step scales: a slot holds a step's token scales and then its weight scale. Staged (the
  // plan's scale_steps), slot i holds the block's step i, all copied before the loop; otherwise
  // slot i % stages travels with the stage's operands, copied asynchronously and completing on
  // the stage's barrier. (Loaded into registers one step ahead they cost a memory latency per
  // step, measured on o_proj at M = 16; copied per stage they cost it 9-14%.)
  constexpr int kTokens = 8 * kTiles;
  constexpr int kScaleSlot = kTokens + 1;
  std::uint64_t* scales_staged = full + kMaxStages;  // all threads' staged copies landed
  std::uint64_t* sums_arrived = full + kMaxStages + 1;  // the leader: the others' partial sums
  std::uint64_t* ring_consumed = full + kMaxStages + 2;  // the others: the leader's ring is free
  float* step_scales = reinterpret_cast<float*>(full + kMaxStages + 3);
  const bool staged = Policy::kStepScales && plan.scale_steps > 0;
  // The leader's receive area: the partial sums of ranks 1..splits - 1, 16 bytes aligned.
  const int scale_slots = stages > plan.scale_steps ? stages : plan.scale_steps;
  const std::uint32_t received =
      (shared_address(step_scales + scale_slots * (8 * kTiles + 1)) + 15) & ~15u;
  const bool into_ring = splits > 1 && plan.push_into_ring;
  const bool sums_pushed = splits > 1 && (plan.push_sums || into_ring);
  const std::uint32_t receive_area = into_ring ? ring : received;
  // Copies scale `slot_thread` of step `i` into `slot` (zeros for tokens >= M).
  auto copy_scale = [&](float* slot, int i, int slot_thread) {
    if constexpr (Policy::kStepScales) {
      const int step = first + i;
      const bool token_scale = slot_thread < kTokens;
      const bool valid = !token_scale || slot_thread < m;
      const float* source = token_scale ? policy.token_scale(step, valid ? slot_thread : 0)
                                        : policy.step_scale(step);
      gemv_wgmma::copy_word_async(shared_address(slot + slot_thread), source, valid ? 4 : 0);
    }
  };
  // Step i's scales into slot s = i % stages (threads < kScaleSlot).
  auto fetch_scales = [&](int i, int s) {
    if constexpr (Policy::kStepScales) {
      if (!staged && thread < kScaleSlot) {
        copy_scale(step_scales + s * kScaleSlot, i, thread);
        mbarrier_arrive_on_async_copies(&full[s]);
      }
    }
  };

  // When the next kernel (if launched with PDL) may start on the SMs this grid frees: the plan
  // says (releases_at_start).
  if (plan.early_release) allow_dependent_launch();
  if (thread == 0) {
    prefetch_tensor_map(maps.weights);
    // Thread 0's expected bytes, plus one arrival per scale copy.
    const int arrivals = Policy::kStepScales && !staged ? 1 + kScaleSlot : 1;
    for (int s = 0; s < stages; ++s) mbarrier_init(&full[s], arrivals);
    if (staged) mbarrier_init(scales_staged, 128);
    if (sums_pushed && split == 0) {  // one arrival (here) and the others' bytes
      mbarrier_init(sums_arrived, 1);
      mbarrier_arrive_expect_bytes(sums_arrived, static_cast<std::uint32_t>(
                                                     (splits - 1) * partial_sum_bytes(kTiles)));
    }
    if (into_ring && split != 0) mbarrier_init(ring_consumed, 1);  // the leader's arrival
    fence_barrier_init();
  }
  __syncthreads();
  // Nobody may push into the leader before its barrier exists: arrive now, wait after the loop.
  if (sums_pushed) cluster_arrive_release();
  // Step i of this block into stage s = i % stages (thread 0): its weights, then its tokens. The
  // callers pass s: computed here, it put an integer division (~25 SASS instructions) on thread
  // 0's way to every refill.
  const bool evict_first = plan.weights_read_once;
  const std::uint64_t weight_policy = evict_first ? evict_first_policy() : 0;
  auto request_weights = [&](int i, int s) {
    mbarrier_arrive_expect_bytes(&full[s], kStageBytes);
    if (evict_first) {
      load_box_with_policy(maps.weights, ring + s * kStageBytes, &full[s], (first + i) * kStepK,
                           static_cast<int>(row0), weight_policy);
    } else {
      load_box(maps.weights, ring + s * kStageBytes, &full[s], (first + i) * kStepK,
               static_cast<int>(row0));
    }
  };
  auto request_tokens = [&](int i, int s) {
    load_box(maps.tokens, ring + s * kStageBytes + kWeightStageBytes, &full[s],
             (first + i) * kStepK, 0);
  };
  // The first stages' weights depend on no earlier kernel: under programmatic dependent launch
  // they stream while the previous kernel finishes. Tokens, scales and every store wait for it.
  const int prologue = std::min(stages, mine);
  if (thread == 0) {
    for (int i = 0; i < prologue; ++i) request_weights(i, i);
  }
  wait_for_prerequisite_grids();
  for (int i = 0; i < prologue; ++i) {
    if (thread == 0) request_tokens(i, i);
    fetch_scales(i, i);
  }
  // The epilogue's factors (scales, bias, zero points) are loaded now, behind the ring's first
  // copies, so that their round trip overlaps the stream instead of following the last step.
  // (They may come from the previous kernel, hence after the wait.)
  const FragmentTerms<Policy, kValues> terms(policy, row0, n, m);
  if constexpr (Policy::kStepScales) {
    if (staged) {  // every step's scales at once; the first promotion waits for them
      for (int e = thread; e < mine * kScaleSlot; e += 128) {
        copy_scale(step_scales + (e / kScaleSlot) * kScaleSlot, e / kScaleSlot, e % kScaleSlot);
      }
      mbarrier_arrive_on_async_copies(scales_staged);
    }
  }

  // Each step: wait for its stage, run its wgmma to completion, refill the stage at once, then
  // promote. The order before (step i + 1's wgmma issued before step i's promotion and refill)
  // kept the tensor core busy but refilled a stage only once the next one had landed: one stage
  // fewer in flight. Measured on an H100 (docs/perf/scaled_gemm.md, "Refill first"): with 3
  // stages the old order ran 14336 x 4096 in 26.6 us and this one in 24.6; at the plan's 4
  // stages this one is 1-2% faster on the small weights on a stream (7-8% under graph + PDL),
  // 1-8% on block_fp8_mm's decode weights, but 3% slower on 18432 x 7168 (all before the
  // refill's stage was passed in, which gained another 1-5% on an H200 on a stream).
  Acc acc[kValues];
  Acc sum[kValues];
#pragma unroll
  for (int v = 0; v < kValues; ++v) acc[v] = Acc{0};
  int s = 0;
  std::uint32_t phase = 0;
  for (int i = 0; i < mine; ++i) {
    const std::uint32_t stage = ring + s * kStageBytes;
    mbarrier_wait(&full[s], phase);
    Acc(&target)[kValues] = Policy::kPromote ? sum : acc;
#pragma unroll
    for (int v = 0; v < kValues; ++v) gemv_wgmma::fence_operand(target[v]);
    gemv_wgmma::wgmma_fence();
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      wgmma_ss<kTiles>(target, swizzled_descriptor(stage + 32 * q),
                       swizzled_descriptor(stage + kWeightStageBytes + 32 * q),
                       !Policy::kPromote || q > 0);
    }
    gemv_wgmma::wgmma_commit();
    // The step's scale factors leave the slot before the refill may overwrite it.
    float scale[kValues];
    if constexpr (Policy::kPromote) {
      if (staged && i == 0) mbarrier_wait(scales_staged, 0);
      const float* slot = step_scales + (staged ? i : s) * kScaleSlot;
#pragma unroll
      for (int v = 0; v < kValues; ++v) {
        scale[v] = Policy::kStepScales
                       ? slot[gemv_wgmma::fragment_token(thread, v)] * slot[kTokens]
                       : 1.0f;
      }
    }
    gemv_wgmma::wgmma_wait<0>();
    // Every warp's wgmma has read the stage before it is refilled.
    if (i + stages < mine) {
      __syncthreads();
      if (thread == 0) request_weights(i + stages, s), request_tokens(i + stages, s);
      fetch_scales(i + stages, s);
    }
    if constexpr (Policy::kPromote) {
#pragma unroll
      for (int v = 0; v < kValues; ++v) {
        gemv_wgmma::fence_operand(sum[v]);
        acc[v] = fmaf(sum[v], scale[v], acc[v]);
      }
    }
    if (++s == stages) s = 0, phase ^= 1;
  }

  if (!plan.early_release) allow_dependent_launch();
  if (sums_pushed) {
    // The others push their sums into the leader's receive area (or into its ring, once it says
    // every warp has read it) and are done; the leader waits for their bytes and adds them in
    // rank order. (Two cluster barriers around the leader's reads of the others' memory cost
    // ~1.5 us after the last block's loop, H200.)
    cluster_wait_acquire();
    static_assert(kValues % 4 == 0, "sums travel as 16-byte vectors");
    if (into_ring && split == 0) {  // every warp's wgmma has read the ring: the others may write
      __syncthreads();
      if (thread > 0 && thread < splits) mbarrier_arrive_release_in(ring_consumed, thread);
    }
    if (split != 0) {
      if (into_ring) mbarrier_wait_acquire_cluster(ring_consumed, 0);
      const std::uint32_t barrier = cluster_address(shared_address(sums_arrived), 0);
      const std::uint32_t slot = cluster_address(
          receive_area + static_cast<std::uint32_t>((split - 1) * partial_sum_bytes(kTiles)), 0);
#pragma unroll
      for (int q = 0; q < kValues / 4; ++q) {  // vector q of every thread, then q + 1
        const uint4 bits = {as_bits(acc[4 * q]), as_bits(acc[4 * q + 1]),
                            as_bits(acc[4 * q + 2]), as_bits(acc[4 * q + 3])};
        store_async_in_cluster(slot + 16 * (q * 128 + thread), bits, barrier);
      }
      return;
    }
    mbarrier_wait_acquire_cluster(sums_arrived, 0);
    for (int rank = 1; rank < splits; ++rank) {
      const std::uint32_t slot =
          receive_area + static_cast<std::uint32_t>((rank - 1) * partial_sum_bytes(kTiles));
#pragma unroll
      for (int q = 0; q < kValues / 4; ++q) {
        const uint4 bits = load_shared_uint4(slot + 16 * (q * 128 + thread));
        acc[4 * q] += from_bits<Acc>(bits.x);
        acc[4 * q + 1] += from_bits<Acc>(bits.y);
        acc[4 * q + 2] += from_bits<Acc>(bits.z);
        acc[4 * q + 3] += from_bits<Acc>(bits.w);
      }
    }
  } else if (splits > 1) {
    // The cluster's blocks split K: each stores its sums over its (consumed) ring, and the
    // leader adds them in rank order.
    Acc* block_sum = reinterpret_cast<Acc*>(ring_pointer);
#pragma unroll
    for (int v = 0; v < kValues; ++v) block_sum[v * 128 + thread] = acc[v];
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    if (cluster.block_rank() == 0) {
      for (unsigned rank = 1; rank < cluster.num_blocks(); ++rank) {
        const Acc* remote = cluster.map_shared_rank(block_sum, rank);
#pragma unroll
        for (int v = 0; v < kValues; ++v) acc[v] += remote[v * 128 + thread];
      }
    }
    cluster.sync();  // the others' shared memory stays until the leader has read it
    if (cluster.block_rank() != 0) return;
  }
  if constexpr (kTiles >= 4) {
    store_tile(policy, terms, acc, row0, n, m, ring_pointer);
  } else {  // up to 16 tokens the staging measured no faster (its two barriers cost ~1%)
#pragma unroll
    for (int v = 0; v < kValues; ++v) {
      const std::int64_t row = row0 + gemv_wgmma::fragment_row(thread, v);
      const std::int64_t token = gemv_wgmma::fragment_token(thread, v);
      if (row < n && token < m) policy.output_row(token)[row] = terms.value(policy, v, acc[v]);
    }
  }
}

// Launches `kernel(param)` over ceil(N / 64) row blocks x plan.cluster (the cluster along K),
// as a programmatic dependent of the stream's previous kernel when `dependent`.
template <typename Param>
inline cudaError_t launch(void (*kernel)(Param), const Param& param, std::int64_t n,
                          int token_tiles, Plan plan, bool dependent, cudaStream_t stream) {
  KernelLaunch shape;
  shape.grid = dim3(static_cast<unsigned>((n + kRows - 1) / kRows),
                    static_cast<unsigned>(plan.cluster), 1);
  shape.threads = 128;
  shape.shared_bytes =
      shared_bytes(plan.stages, token_tiles, plan.scale_steps, plan.receiving_cluster());
  shape.cluster_along_y = true;
  shape.dependent = dependent;
  return launch_kernel(kernel, param, shape, stream);
}

}  // namespace lowbit::cuda::gemv_tma
