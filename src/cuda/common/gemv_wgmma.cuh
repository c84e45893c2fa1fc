// Decode GEMV on Hopper's warpgroup tensor cores (wgmma, sm_90a) for 8-bit weights: a few tokens
// (M <= 32) against a K-major fp8 e4m3 or int8 weight [N, K]. Unlike mma.sync, wgmma runs fp8
// natively on sm_90, so no code is converted before it reaches the tensor core.
//
// Roles: a warpgroup owns 64 weight rows (warp w rows 16 w .. 16 w + 15) and walks its share of
// K in 128-deep steps. The weights are wgmma's A operand straight from registers: each lane
// loads 16 contiguous bytes at k = 64 c + 16 t (c = 0, 1; t = lane % 4) of rows g and g + 8
// (g = lane / 4), exactly as common/gemv_mma.cuh does, so a row's 128 bytes per step arrive as
// two fully used 64-byte segments. The fragment wants 4-byte pieces at k = 4 t instead; both
// operands are permuted the same way inside each 64-deep chunk, so the dot product is unchanged.
// The activations are wgmma's B operand (N = 8 tokens per tile, K-major) in shared memory: the
// block copies every step it will multiply there once, permuted to match, before the loop
// (stage_activations), so the loop itself has no fence and no barrier.
//
// Measured on an H200 (docs/perf/scaled_gemm.md): faster than the mma.sync GEMV on some decode
// shapes, slower on most; no heuristic picks it. ptxas assembles wgmma's register quads with
// moves that wait on a scoreboard shared by the whole window of loads.
//
// K is split over the warpgroups of a block and, for narrow weights, over the blocks of a
// cluster (split p takes steps p, p + P, ...). Partial sums meet in shared memory in warpgroup
// order and then in the leader block in cluster-rank order (distributed shared memory), so the
// result does not depend on timing and there is no workspace.
//
// fp8: each step's tensor-core sum (128 of K, accumulated by wgmma from zero) is added to fp32
// registers, optionally times a per-step scale (DeepSeek-V3 block scaling); int8 accumulates
// in the tensor core's int32 directly (exact).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "bulk_copy.cuh"
#include "kernel_launch.cuh"
#include "lowbit/error.h"

namespace lowbit::cuda::gemv_wgmma {

inline constexpr int kStepK = 128;             // K per step: four 32-deep wgmma
inline constexpr int kRowsPerWarpgroup = 64;   // wgmma's M
inline constexpr int kMaxWarpgroups = 4;       // per block (128 registers per thread)
inline constexpr int kMaxClusterBlocks = 8;    // portable cluster size

// Activation bytes of one step and token tile in shared memory: 4 sub-steps x 2 K halves x
// 8 tokens x 16 bytes.
inline constexpr int kSlotBytesPerTile = 4 * 256;

// How K is split: warpgroups per block x blocks per cluster.
struct Split {
  int warpgroups = 1;
  int cluster = 1;
};

// Shared memory of a block: the activations of every step its warpgroups multiply (one slot of
// T KB per step), reused after the loop for the warpgroups' partial sums and the block's sum.
inline std::size_t shared_bytes(std::int64_t k, int token_tiles, Split split) {
  const std::int64_t steps = (k + kStepK - 1) / kStepK;
  const std::int64_t splits = std::int64_t{split.warpgroups} * split.cluster;
  const std::int64_t staged = split.warpgroups * ((steps + splits - 1) / splits);
  const std::int64_t sums = 2 * (split.warpgroups + 1);  // 4 T values x 128 threads = 2 slots
  return static_cast<std::size_t>(kSlotBytesPerTile) * token_tiles * std::max(staged, sums);
}

// What one block may use here: sm_90 allows 227 KB, less a margin.
inline constexpr std::size_t kMaxSharedBytes = 200 * 1024;

// As many splits as keep every warpgroup resident in one wave (4 per SM at 128 registers), at
// most one per step. Warpgroups per block stay 1, 2 or 4 so blocks pack SMs; the rest of the
// split goes to the cluster, which also grows while a block's staged activations would not fit
// in shared memory.
inline Split choose_split(std::int64_t n, std::int64_t k, int token_tiles, int sm_count) {
  const std::int64_t blocks = (n + kRowsPerWarpgroup - 1) / kRowsPerWarpgroup;
  const std::int64_t steps = (k + kStepK - 1) / kStepK;
  const std::int64_t resident = std::int64_t{kMaxWarpgroups} * sm_count;
  const std::int64_t splits = std::clamp<std::int64_t>(
      std::min(resident / blocks, steps), 1, std::int64_t{kMaxWarpgroups} * kMaxClusterBlocks);
  Split split;
  split.warpgroups = splits >= 4 ? 4 : splits >= 2 ? 2 : 1;
  split.cluster = static_cast<int>(
      std::clamp<std::int64_t>(splits / split.warpgroups, 1, kMaxClusterBlocks));
  while (split.cluster < kMaxClusterBlocks &&
         shared_bytes(k, token_tiles, split) > kMaxSharedBytes) {
    split.cluster *= 2;
  }
  return split;
}

// ---- wgmma and its fences (PTX ISA 8.0) ----

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most kPending committed groups are still running.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accesses of an accumulator across the asynchronous wgmma.
template <typename T>
__device__ __forceinline__ void fence_operand(T& value) {
  if constexpr (std::is_integral_v<T>) {
    asm volatile("" : "+r"(value)::"memory");
  } else {
    asm volatile("" : "+f"(value)::"memory");
  }
}
// Descriptor of a K-major, unswizzled B tile: core matrices of 8 tokens x 16 bytes, the two
// K halves 128 bytes apart (leading byte offset), token groups 256 bytes apart (stride).
__device__ __forceinline__ std::uint64_t b_descriptor(std::uint32_t shared_address) {
  constexpr std::uint64_t kLeading = 128 >> 4, kStride = 256 >> 4;
  return static_cast<std::uint64_t>((shared_address & 0x3FFFF) >> 4) | (kLeading << 16) |
         (kStride << 32);
}

// D (64 x 8 T) = A (64 x 32, registers) * B (32 x 8 T, shared) + (accumulate ? D : 0).
template <int kTiles>
__device__ __forceinline__ void wgmma_k32(float (&d)[4 * kTiles], const std::uint32_t (&a)[4],
                                          std::uint64_t b, bool accumulate);
template <int kTiles>
__device__ __forceinline__ void wgmma_k32(int (&d)[4 * kTiles], const std::uint32_t (&a)[4],
                                          std::uint64_t b, bool accumulate);

#define LOWBIT_WGMMA_PREFIX(N, TYPES)                          \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" #N ", 0;\n"             \
  "wgmma.mma_async.sync.aligned." TYPES " "

template <>
__device__ __forceinline__ void wgmma_k32<1>(float (&d)[4], const std::uint32_t (&a)[4],
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_PREFIX(9, "m64n8k32.f32.e4m3.e4m3")
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_k32<2>(float (&d)[8], const std::uint32_t (&a)[4],
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_PREFIX(13, "m64n16k32.f32.e4m3.e4m3")
               "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                 "+f"(d[6]), "+f"(d[7])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_k32<4>(float (&d)[16], const std::uint32_t (&a)[4],
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_PREFIX(21, "m64n32k32.f32.e4m3.e4m3")
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
               "{%16,%17,%18,%19}, %20, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                 "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                 "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_k32<1>(int (&d)[4], const std::uint32_t (&a)[4],
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_PREFIX(9, "m64n8k32.s32.s8.s8")
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p;\n}\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_k32<2>(int (&d)[8], const std::uint32_t (&a)[4],
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_PREFIX(13, "m64n16k32.s32.s8.s8")
               "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p;\n}\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                 "+r"(d[6]), "+r"(d[7])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_k32<4>(int (&d)[16], const std::uint32_t (&a)[4],
                                             std::uint64_t b, bool accumulate) {
  asm volatile(LOWBIT_WGMMA_PREFIX(21, "m64n32k32.s32.s8.s8")
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
               "{%16,%17,%18,%19}, %20, p;\n}\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                 "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
                 "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int{accumulate}));
}
#undef LOWBIT_WGMMA_PREFIX

// Where accumulator element i of a thread sits in the warpgroup's 64 x 8 T tile.
__device__ __forceinline__ int fragment_row(int thread, int i) {
  return 16 * (thread / 32) + (thread % 32) / 4 + 8 * ((i / 2) % 2);
}
__device__ __forceinline__ int fragment_token(int thread, int i) {
  return 8 * (i / 4) + 2 * (thread % 4) + (i % 2);
}

// ---- operands ----

struct Operands {
  const std::uint8_t* weight;  // [N, K], row stride ldw
  std::int64_t ldw, n;
  const std::uint8_t* act;     // [M, K], row stride lda
  std::int64_t lda, m;
  std::int64_t k;
};

// A thread's weight bytes of one step in registers: [row g or g + 8][chunk].
struct StepWeights {
  uint4 w[2][2];
};

// 16 zero bytes in global memory: a load that must read zeros reads these instead.
__device__ const uint4 kZeros16 = {0, 0, 0, 0};

// 16 bytes streamed past L1, or zeros when `valid` is false. Choosing the address, not the
// value, keeps the load unconditional: with `valid ? load : 0` ptxas merges the value with a
// move that waits for the load right away, which turned the window of steps into one step.
__device__ __forceinline__ uint4 load_16b_streaming_or_zero(const std::uint8_t* p, bool valid) {
  return __ldcs(valid ? reinterpret_cast<const uint4*>(p) : &kZeros16);
}

// A thread's two weight rows (g and g + 8 of its warp's 16), read at k = 16 t (+ 64 c).
struct ThreadWeights {
  const std::uint8_t* rows[2];
  bool row_valid[2];
  int k_lane;  // 16 t

  __device__ ThreadWeights(const Operands& op, std::int64_t row0, int thread) {
    const int lane = thread % 32, warp = thread / 32;
    k_lane = 16 * (lane % 4);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::int64_t row = row0 + 16 * warp + lane / 4 + 8 * r;
      row_valid[r] = row < op.n;
      rows[r] = op.weight + (row_valid[r] ? row : 0) * op.ldw + k_lane;
    }
  }

  // Loads of step `step` (k0 = 128 step); everything reads as zero when `valid` is false.
  __device__ __forceinline__ void load(int step, bool valid, std::int64_t k, StepWeights& f) const {
    const std::int64_t k0 = static_cast<std::int64_t>(step) * kStepK;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const bool in_k = valid && k0 + 64 * c + k_lane < k;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        f.w[r][c] = load_16b_streaming_or_zero(rows[r] + k0 + 64 * c, in_k && row_valid[r]);
      }
    }
  }
};

// 4-byte asynchronous copy global -> shared; src_bytes = 0 writes zeros and reads nothing.
__device__ __forceinline__ void copy_word_async(std::uint32_t shared_address, const void* global,
                                                int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address),
               "l"(global), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void wait_async_copies() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// Copies the activations of every step the block's warpgroups will multiply into shared memory,
// slot (warpgroup w, i) holding step rank * W + w + i * splits, permuted for the A fragments:
// the 4-byte word at k = 64 c + 16 t + 4 w of token 8 j + n goes to sub-step 2 c + w / 2, K
// half w % 2, column 4 t of that token's 16-byte row. Only tokens below M are written: B's
// column n only feeds output column n, which is not stored for n >= M. Words past K are zeros
// (they meet the weights' zeros, and 0 * garbage could be NaN). Staged once, so the steady loop
// needs no proxy fence (whose MEMBAR would wait for the weight loads in flight) and no barrier.
template <int kTiles>
__device__ __forceinline__ void stage_activations(const Operands& op, int warpgroups,
                                                  int slots_per_warpgroup, int splits,
                                                  std::uint32_t shared_address) {
  constexpr int kSlotBytes = kSlotBytesPerTile * kTiles;
  const int tokens = static_cast<int>(std::min<std::int64_t>(op.m, 8 * kTiles));
  const int words_per_slot = tokens * 32;  // 128 bytes of K per token and step
  const int words = warpgroups * slots_per_warpgroup * words_per_slot;
  const int steps = static_cast<int>((op.k + kStepK - 1) / kStepK);
  for (int index = threadIdx.x; index < words; index += blockDim.x) {
    const int slot = index / words_per_slot, word = index % words_per_slot;
    const int w = slot / slots_per_warpgroup, i = slot % slots_per_warpgroup;
    const int step = blockIdx.y * warpgroups + w + i * splits;
    if (step >= steps) continue;
    // word = (token * 8 + u) * 4 + e: word e of 16-byte piece u of the step's 128 bytes.
    const int token = word / 32, u = (word / 4) % 8, e = word % 4;
    const int c = u / 4, t = u % 4;
    const std::int64_t kk = static_cast<std::int64_t>(step) * kStepK + 16 * u + 4 * e;
    const bool in_k = kk < op.k;
    const std::uint32_t at = slot * kSlotBytes + (2 * c + e / 2) * kTiles * 256 +
                             (token / 8) * 256 + (e % 2) * 128 + (token % 8) * 16 + 4 * t;
    copy_word_async(shared_address + at, op.act + token * op.lda + (in_k ? kk : 0), in_k ? 4 : 0);
  }
  wait_async_copies();
}

// The A fragment of sub-step q (chunk q / 2, 32-deep half q % 2). wgmma wants these four words
// in consecutive registers, which the 16-byte loads do not give: ptxas assembles them with
// moves, and places those right after the loads of the next window (see docs/perf/scaled_gemm.md).
__device__ __forceinline__ void a_fragment(const uint4 (&w)[2][2], int q, std::uint32_t (&a)[4]) {
  const uint4& lo = w[0][q / 2];
  const uint4& hi = w[1][q / 2];
  if (q % 2 == 0) {
    a[0] = lo.x, a[1] = hi.x, a[2] = lo.y, a[3] = hi.y;
  } else {
    a[0] = lo.z, a[1] = hi.z, a[2] = lo.w, a[3] = hi.w;
  }
}

// ---- the kernel body ----
//
// Policy supplies: Acc (float for fp8, int for int8); kPromote (fp8: each step's sum is added
// to the registers, times step_scale); StepScales, load_scales(step, valid, thread) and
// scale(StepScales, i) (the factor of accumulator element i); and finish(row, token, total).
template <typename Policy, int kTiles, int kStepsInFlight>
__device__ __forceinline__ void run(const Operands& op, const Policy& policy,
                                    unsigned char* shared) {
  using Acc = typename Policy::Acc;
  constexpr int kValues = 4 * kTiles;
  constexpr int kSlotBytes = kSlotBytesPerTile * kTiles;
  const int warpgroup = threadIdx.x / 128, thread = threadIdx.x % 128;
  const int warpgroups = blockDim.x / 128;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRowsPerWarpgroup;
  const int split = blockIdx.y * warpgroups + warpgroup;
  const int splits = gridDim.y * warpgroups;
  const int steps = static_cast<int>((op.k + kStepK - 1) / kStepK);
  const int slots_per_warpgroup = (steps + splits - 1) / splits;
  const int mine = split < steps ? (steps - 1 - split) / splits + 1 : 0;  // this split's steps

  const ThreadWeights weights(op, row0, thread);
  const std::uint32_t shared_address = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
  const std::uint32_t slots_address =
      shared_address + warpgroup * slots_per_warpgroup * kSlotBytes;

  // Weights are requested kStepsInFlight steps ahead (the first ones before the activations are
  // staged, so both latencies overlap); the small, mostly cached step scales one step ahead.
  StepWeights window[kStepsInFlight];
#pragma unroll
  for (int f = 0; f < kStepsInFlight; ++f) {
    weights.load(split + f * splits, f < mine, op.k, window[f]);
  }
  typename Policy::StepScales next_scales = policy.load_scales(split, 0 < mine, thread);
  stage_activations<kTiles>(op, warpgroups, slots_per_warpgroup, splits, shared_address);
  fence_shared_for_async_proxy();
  __syncthreads();

  Acc acc[kValues];
#pragma unroll
  for (int i = 0; i < kValues; ++i) acc[i] = Acc{0};

  for (int i0 = 0; i0 < mine; i0 += kStepsInFlight) {
#pragma unroll
    for (int f = 0; f < kStepsInFlight; ++f) {
      const int i = i0 + f;
      if (i < mine) {
        const typename Policy::StepScales scales = next_scales;
        next_scales = policy.load_scales(split + (i + 1) * splits, i + 1 < mine, thread);
        const std::uint32_t slot = slots_address + i * kSlotBytes;
        // fp8 sums each step from zero into `partial` and promotes it; int8 accumulates in place.
        Acc partial[kValues];
        Acc(&sum)[kValues] = Policy::kPromote ? partial : acc;
#pragma unroll
        for (int v = 0; v < kValues; ++v) fence_operand(sum[v]);
        wgmma_fence();
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          std::uint32_t a[4];
          a_fragment(window[f].w, q, a);
          wgmma_k32<kTiles>(sum, a, b_descriptor(slot + q * kTiles * 256),
                            !Policy::kPromote || q > 0);
        }
        wgmma_commit();
        wgmma_wait<0>();
#pragma unroll
        for (int v = 0; v < kValues; ++v) {
          fence_operand(sum[v]);
          if constexpr (Policy::kPromote) {
            acc[v] = fmaf(partial[v], policy.scale(scales, v), acc[v]);
          }
        }
      }
      const int next = i + kStepsInFlight;
      weights.load(split + next * splits, next < mine, op.k, window[f]);
    }
  }

  // Partial sums: once every warpgroup is past its last wgmma, each stores its [value][thread]
  // over the staged activations, and warpgroup 0 adds them in warpgroup order into the block's
  // sum (after the partials), which the cluster leader reads.
  __syncthreads();
  Acc* partials = reinterpret_cast<Acc*>(shared);
#pragma unroll
  for (int v = 0; v < kValues; ++v) partials[(warpgroup * kValues + v) * 128 + thread] = acc[v];
  __syncthreads();
  Acc* block_sum = partials + warpgroups * kValues * 128;
  if (warpgroup == 0) {
#pragma unroll
    for (int v = 0; v < kValues; ++v) {
      Acc sum = acc[v];
      for (int g = 1; g < warpgroups; ++g) sum += partials[(g * kValues + v) * 128 + thread];
      block_sum[v * 128 + thread] = sum;
    }
  }
  if (gridDim.y > 1) {
    // The cluster's blocks split K too: the leader adds their sums in rank order.
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    if (cluster.block_rank() == 0 && warpgroup == 0) {
      for (unsigned rank = 1; rank < cluster.num_blocks(); ++rank) {
        const Acc* remote = cluster.map_shared_rank(block_sum, rank);
#pragma unroll
        for (int v = 0; v < kValues; ++v) block_sum[v * 128 + thread] += remote[v * 128 + thread];
      }
    }
    cluster.sync();  // the others' shared memory stays until the leader has read it
    if (cluster.block_rank() != 0) return;
  }
  if (warpgroup != 0) return;
#pragma unroll
  for (int v = 0; v < kValues; ++v) {
    const std::int64_t row = row0 + fragment_row(thread, v);
    const std::int64_t token = fragment_token(thread, v);
    if (row < op.n && token < op.m) policy.finish(row, token, block_sum[v * 128 + thread]);
  }
}

// Launches `kernel(param)` over ceil(N / 64) row blocks x split.cluster, with split.warpgroups
// warpgroups per block and the cluster along K when it has more than one block.
// A K whose staged activations do not fit even at 32 splits is an Error naming `op`.
template <typename Param>
inline cudaError_t launch(const char* op, void (*kernel)(Param), const Param& param,
                          std::int64_t n, std::int64_t k, int token_tiles, Split split,
                          cudaStream_t stream) {
  const std::size_t bytes = shared_bytes(k, token_tiles, split);
  if (bytes > kMaxSharedBytes) {
    // 4 warpgroups x ceil(steps / 32) slots of T KB within 200 KB.
    const std::int64_t max_k = std::int64_t{kStepK} * 32 * (50 / token_tiles);
    throw Error(op, "k", "<= " + std::to_string(max_k) + " for gemv_wgmma at this token count",
                std::to_string(k));
  }
  const dim3 grid(static_cast<unsigned>((n + kRowsPerWarpgroup - 1) / kRowsPerWarpgroup),
                  static_cast<unsigned>(split.cluster), 1);
  KernelLaunch shape;
  shape.grid = grid;
  shape.threads = 128 * split.warpgroups;
  shape.shared_bytes = bytes;
  shape.cluster_along_y = true;
  return launch_kernel(kernel, param, shape, stream);
}

}  // namespace lowbit::cuda::gemv_wgmma
