// lowbit's own prefill tiles for block_fp8_mm (sm_90a, TMA + mbarriers + wgmma), as a template
// over the tile: kBlockM tokens (128 or 256) x kBlockN weight rows (128, 144 or 192).
// Instantiated by block_fp8_gemm_256x128.cu (`prefill256x128mc`), block_fp8_gemm_128x192.cu,
// block_fp8_gemm_128x144.cu and, in its split-K form, block_fp8_gemm_splitk.cu.
//
// Structure (DeepGEMM's sm90 1D2D kernel, measured side by side: docs/perf/block_gemm.md):
// - 2-block clusters take one activation block and two adjacent weight blocks; each block loads
//   half of the activation tile and multicasts it to both, and loads its own weight block.
// - One producer thread fills a ring of stages (A, B, the tile's activation scales); two
//   consumer warpgroups own 64 tokens of every 128 ("locals"). Per K block and local a
//   warpgroup issues four m64nNk32 wgmma, waits for them, and promotes the sum into its totals
//   with As[m, kb] * Bs[n / 128, kb]; the other warpgroup's wgmma keep the tensor core busy.
// - The tile's weight scales (one or two 128-row scale blocks) are staged in shared memory.
// - The bf16 tile is written with stmatrix into a staging buffer and leaves in TMA stores that
//   clip at M and N and run while the next tile starts: swizzled 64-column boxes, or plain
//   48-column boxes when the width is not a multiple of 64 (144). With kStoreByBox the buffer
//   holds one 128-row box and the tile leaves box by box (a fourth 256 x 128 stage fits).
// - Cluster tiles run in groups of 8 weight-block pairs, pair-fastest, for L2 reuse.
// Split-K form (kSplitK, 128 x 128 tiles, `splitk128x128`): for a few tokens, where the tiles
// alone would leave most SMs idle. The cluster is S = 1, 2, 3, 4 or 8 blocks along K on one tile
// instead; each loads its own A and B for its contiguous range of K blocks. Each of the 8
// consumer warps' 16 rows is finished by block (warp % S): the other blocks push their sums for
// those rows into its shared memory, and it adds the S partial sums in rank order (so the result
// does not depend on timing) and stores bf16 straight from registers. One tile per cluster.
// Requirements (checked by the op): bf16 output, A and B rows 16-byte aligned, activation
// scales M-major with 16-byte aligned columns (the caller realigns others).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "../common/bulk_copy.cuh"
#include "../common/check.cuh"
#include "../common/cluster_copy.cuh"
#include "../common/gemv_tma.cuh"
#include "../common/gemv_wgmma.cuh"
#include "../common/kernel_launch.cuh"
#include "../common/tensor_map.cuh"
#include "../common/tile_store.cuh"
#include "block_gemm_launch.h"
#include "own_prefill_block.cuh"

namespace lowbit::cuda::tall {

using own_prefill::consumer_thread;
using own_prefill::ConsumerRing;
using own_prefill::ConsumerThread;
using own_prefill::kConsumerWarps;
using own_prefill::fence_sum;
using own_prefill::kThreads;

struct Params {
  CUtensorMap a_map;  // activations [M, K] bytes, boxes of 128 x (kBlockM / 2) rows
  CUtensorMap b_map;  // weights [N, K] bytes, boxes of 128 x kBlockN rows
  CUtensorMap d_map;  // output [M, N] bf16, boxes of kOutBoxColumns x kOutBoxRows
  void* d;            // the output itself and its row stride (the split-K form stores directly)
  std::int64_t ldd;
  const float* a_scales;  // As(m, kb) at kb * a_scale_stride_k + m
  std::int64_t a_scale_stride_k;
  const float* b_scales;  // [n_scale_blocks, k_blocks]
  int m, n, k_blocks, n_scale_blocks, m_blocks, pairs, cluster_tiles;
  int k_splits, k_blocks_per_split;  // the split-K form's cluster size and K blocks per block
};

struct Tile {
  int m0, n0;
};

#define LOWBIT_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                     "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
// D (64 x N) = A (64 x 32, shared) * B (32 x N, shared) + (accumulate ? D : 0).
template <int kN>
__device__ __forceinline__ void wgmma_k32(float (&d)[kN / 2], std::uint64_t a, std::uint64_t b,
                                          bool accumulate);
template <>
__device__ __forceinline__ void wgmma_k32<128>(float (&d)[64], std::uint64_t a, std::uint64_t b,
                                               bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,"
      "%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,"
      "%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,"
      "%62,%63}, %64, %65, p, 1, 1;\n}\n"
      : LOWBIT_D8(0), LOWBIT_D8(8), LOWBIT_D8(16), LOWBIT_D8(24), LOWBIT_D8(32),
        LOWBIT_D8(40), LOWBIT_D8(48), LOWBIT_D8(56)
      : "l"(a), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_k32<144>(float (&d)[72], std::uint64_t a, std::uint64_t b,
                                               bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %74, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n144k32.f32.e4m3.e4m3 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,"
      "%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,"
      "%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,"
      "%62,%63,%64,%65,%66,%67,%68,%69,%70,%71}, %72, %73, p, 1, 1;\n}\n"
      : LOWBIT_D8(0), LOWBIT_D8(8), LOWBIT_D8(16), LOWBIT_D8(24), LOWBIT_D8(32),
        LOWBIT_D8(40), LOWBIT_D8(48), LOWBIT_D8(56), LOWBIT_D8(64)
      : "l"(a), "l"(b), "r"(int{accumulate}));
}
template <>
__device__ __forceinline__ void wgmma_k32<192>(float (&d)[96], std::uint64_t a, std::uint64_t b,
                                               bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,"
      "%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,"
      "%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,"
      "%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,"
      "%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,"
      "%92,%93,%94,%95}, %96, %97, p, 1, 1;\n}\n"
      : LOWBIT_D8(0), LOWBIT_D8(8), LOWBIT_D8(16), LOWBIT_D8(24), LOWBIT_D8(32),
        LOWBIT_D8(40), LOWBIT_D8(48), LOWBIT_D8(56), LOWBIT_D8(64), LOWBIT_D8(72),
        LOWBIT_D8(80), LOWBIT_D8(88)
      : "l"(a), "l"(b), "r"(int{accumulate}));
}
#undef LOWBIT_D8

// A wgmma descriptor from its low word (start address in 16-byte units and the unused leading
// offset, as in gemv_tma::swizzled_descriptor): the high word (1024-byte row-group stride,
// 128-byte swizzle) is the same for every stage, so a stage's descriptor is one 32-bit add.
__device__ __forceinline__ std::uint64_t descriptor_from_low(std::uint32_t low) {
  constexpr std::uint32_t kHigh = (1024 >> 4) | (1u << 30);
  return (static_cast<std::uint64_t>(kHigh) << 32) | low;
}

// The tile's weight scales are staged in shared memory: K up to 128 x kMaxKBlocks.
constexpr int kMaxKBlocks = 1024;
constexpr int kBlockK = 128, kClusterN = 2, kGroupPairs = 8;

// Reports a failed CUDA call of configuration `name`.
inline void check_tile(cudaError_t status, const char* what, const char* name) {
  if (status != cudaSuccess) {
    check_cuda(status, "block_fp8_mm", (std::string(what) + " (" + name + ")").c_str());
  }
}

// The split-K form's largest cluster, and the slices of 16 rows x kBlockN partial sums a block
// receives at most: (S - 1) senders x ceil(8 / S) warps; 4, 6, 6 and 7 at S = 2, 3, 4 and 8
// (S = 5, 6 and 7 would need 8-12, so they are not offered).
constexpr int kMaxSplits = 8, kMaxReceivedSlices = 7;

// The consumer warps whose rows block `rank` of an S-block split-K cluster finishes.
__host__ __device__ constexpr int finished_warps(int rank, int splits) {
  return (own_prefill::kConsumerWarps - rank + splits - 1) / splits;
}

template <int kBlockM, int kBlockN, bool kSplitK = false, bool kStoreByBox = false>
struct Kernel {
  static_assert(kBlockM == 128 || kBlockM == 256, "two warpgroups of 64-token locals");
  static_assert(kBlockN == 128 || kBlockN == 144 || kBlockN == 192, "wgmma n128, n144 or n192");
  static_assert(!kSplitK || (kBlockM == 128 && kBlockN == 128), "split-K: 128 x 128 tiles");
  static_assert(!kSplitK || !kStoreByBox, "split-K stores from registers");
  static constexpr int kLocals = kBlockM / 128;  // 64-token row groups per warpgroup
  static constexpr int kValues = kBlockN / 2;    // a 64 x kBlockN fp32 tile over 128 threads
  // Split-K: a warp's 16 x kBlockN partial sums, as 16-byte vectors [vector][lane].
  static constexpr int kSliceBytes = 32 * kValues * 4;
  // Weight scale blocks a tile's columns touch: one (128 wide) or two (144 or 192 wide).
  static constexpr int kScaleRows = kBlockN > 128 ? 2 : 1;
  static constexpr int kABytes = kBlockM * kBlockK, kBBytes = kBlockN * kBlockK;
  static constexpr int kAHalfBytes = kABytes / kClusterN;  // each block's share of A
  static constexpr int kStageBytes = kABytes + kBBytes + kBlockM * 4;
  // Output boxes: 64 columns (128-byte rows, swizzled) when they tile the width, else 48
  // (96-byte rows, unswizzled: the 128-byte swizzle needs whole 128-byte rows).
  static constexpr bool kOutSwizzled = kBlockN % 64 == 0;
  static constexpr int kOutBoxColumns = kOutSwizzled ? 64 : 48;
  static constexpr int kOutBoxGroups = kOutBoxColumns / 8;  // 16-byte column groups per row
  // kStoreByBox: the tile leaves one 128-row box at a time through a buffer of one box, which
  // leaves the ring room for a fourth 256 x 128 stage; else the whole tile is staged at once.
  static constexpr int kOutBoxRows = kStoreByBox ? 128 : kBlockM;
  static constexpr int kOutBoxBytes = kOutBoxRows * kOutBoxColumns * 2;
  // The output staging buffer; the split-K form receives partial sums there instead.
  static constexpr int kOutBytes = kSplitK       ? kMaxReceivedSlices * kSliceBytes
                                   : kStoreByBox ? kOutBoxBytes
                                                 : kBlockN / kOutBoxColumns * kOutBoxBytes;
  // A tile starts a multiple of gcd(kBlockN, 128) columns into its first weight scale block, so
  // that block covers 16, 16 - kFormerStep, ... of its 8-column groups (kFormer below).
  static constexpr int kFormerStep = (kBlockN % 128 == 0 ? 128 : kBlockN % 64 == 0 ? 64 : 16) / 8;
  static constexpr int kStages =
      (227 * 1024 - 1024 - 256 - kOutBytes - 4 * kScaleRows * kMaxKBlocks) / kStageBytes;
  static constexpr int kSharedBytes =
      own_prefill::shared_bytes<kStages, kABytes, kBBytes, kBlockM, kOutBytes>();
  static_assert(kAHalfBytes % 1024 == 0, "an A half must keep the 8-row swizzle pattern");
  static_assert(kBlockN % kOutBoxColumns == 0 && kOutBoxBytes % 1024 == 0, "whole output boxes");
  static_assert(kStages >= 3, "at least three stages");

  // Cluster tiles in groups of kGroupPairs weight-block pairs, pair-fastest within a group, so
  // the clusters resident at once cover a near-square patch of the output and share its
  // operand rows in L2. Block `rank` of the cluster takes the rank-th weight block of the pair.
  static __device__ __forceinline__ Tile tile_at(const Params& p, int cluster_tile,
                                                 unsigned rank) {
    if constexpr (kSplitK) {  // every block of the cluster on the same tile
      return {cluster_tile % p.m_blocks * kBlockM, cluster_tile / p.m_blocks * kBlockN};
    }
    const int per_group = kGroupPairs * p.m_blocks;
    const int group = cluster_tile / per_group, in_group = cluster_tile % per_group;
    const int pairs = min(kGroupPairs, p.pairs - group * kGroupPairs);
    const int pair = group * kGroupPairs + in_group % pairs, m_block = in_group / pairs;
    return {m_block * kBlockM, (kClusterN * pair + static_cast<int>(rank)) * kBlockN};
  }

  // The K blocks [first, end) a block of the cluster takes: all of them, or split-K's share
  // (empty when K has fewer blocks than the cluster needs).
  struct KRange {
    int first, end;
  };
  static __device__ __forceinline__ KRange k_range(const Params& p, unsigned rank) {
    if constexpr (!kSplitK) return {0, p.k_blocks};
    const int first = static_cast<int>(rank) * p.k_blocks_per_split;
    return {first, min(p.k_blocks, first + p.k_blocks_per_split)};
  }

  static __device__ void produce(const Params& p, unsigned rank, int cluster, int clusters,
                                 std::uint32_t a_ring, std::uint32_t b_ring, float* scale_ring,
                                 std::uint64_t* full, std::uint64_t* empty) {
    const int m_padded = (p.m + 3) / 4 * 4;  // M-major columns are read in 16-byte units
    const KRange range = k_range(p, rank);
    int c = 0;
    for (int t = cluster; t < p.cluster_tiles; t += clusters) {
      const Tile tile = tile_at(p, t, rank);
      const int scale_rows = max(0, min(kBlockM, m_padded - tile.m0));
      for (int kb = range.first; kb < range.end; ++kb, ++c) {
        const int s = c % kStages;
        // The consumers that read the stage are done with it: with multicast, both blocks'
        // (this block's A half goes to both); split-K blocks load their own A whole.
        if (c >= kStages) mbarrier_wait(&empty[s], (c / kStages - 1) & 1);
        mbarrier_arrive_expect_bytes(&full[s], kABytes + kBBytes + 4 * scale_rows);
        if constexpr (kSplitK) {
          for (int half = 0; half < kClusterN; ++half) {
            gemv_tma::load_box(p.a_map, a_ring + s * kABytes + half * kAHalfBytes, &full[s],
                               kb * kBlockK, tile.m0 + half * (kBlockM / 2));
          }
        } else {
          load_box_multicast(p.a_map, a_ring + s * kABytes + rank * kAHalfBytes, &full[s],
                             kb * kBlockK, tile.m0 + static_cast<int>(rank) * (kBlockM / 2),
                             0x3);
        }
        gemv_tma::load_box(p.b_map, b_ring + s * kBBytes, &full[s], kb * kBlockK, tile.n0);
        if (scale_rows > 0) {
          bulk_copy_to_shared(scale_ring + s * kBlockM,
                              p.a_scales + kb * p.a_scale_stride_k + tile.m0, 4 * scale_rows,
                              &full[s]);
        }
      }
    }
  }

  // total += sum * factor, the factor of a value's row (lo or hi) and scale block: column
  // groups of 8 below kFormer lie in the tile's first weight scale block, the rest in the next.
  template <int kFormer>
  static __device__ __forceinline__ void promote(float (&total)[kValues],
                                                 const float (&sum)[kValues], float lo0,
                                                 float hi0, float lo1, float hi1) {
#pragma unroll
    for (int v = 0; v < kValues; ++v) {
      const bool hi = (v / 2) % 2 != 0, former = v / 4 < kFormer;
      total[v] = fmaf(sum[v], former ? (hi ? hi0 : lo0) : (hi ? hi1 : lo1), total[v]);
    }
  }

  // One consumer warpgroup's K loop over a tile, summed into `total` (local 0's values, then
  // local 1's); `s` and `phase` track the ring across tiles. `a_low` and `b_low` are the low
  // descriptor words of the warpgroup's rows and of B in stage 0; `b_scales` are the tile's
  // weight scales (kScaleRows rows of kMaxKBlocks). DeepGEMM's loop shape: wait for the stage, then
  // per local issue four wgmma, wait for them and promote, unrolled 8 times.
  template <int kFormer>
  static __device__ __forceinline__ void accumulate_tile(
      KRange range, const ConsumerRing& ring, const ConsumerThread& me, std::uint32_t a_low,
      std::uint32_t b_low, int& s, std::uint32_t& phase, const float* b_scales,
      float (&sum)[kValues], float (&total)[kLocals][kValues]) {
#pragma unroll 8
    for (int kb = range.first; kb < range.end; ++kb) {
      const float b0 = b_scales[kb];
      const float b1 = kScaleRows > 1 ? b_scales[kMaxKBlocks + kb] : b0;
      mbarrier_wait(&ring.full[s], phase);
      const float* a_scales = ring.scale_ring + s * kBlockM;
#pragma unroll
      for (int local = 0; local < kLocals; ++local) {
        const float lo = a_scales[128 * local + me.row_lo];
        const float hi = a_scales[128 * local + me.row_lo + 8];
        const std::uint32_t a_stage = a_low + ((s * kABytes + 128 * local * kBlockK) >> 4);
        const std::uint32_t b_stage = b_low + ((s * kBBytes) >> 4);
        fence_sum(sum);
        gemv_wgmma::wgmma_fence();
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          wgmma_k32<kBlockN>(sum, descriptor_from_low(a_stage + 2 * q),
                             descriptor_from_low(b_stage + 2 * q), q > 0);
        }
        gemv_wgmma::wgmma_commit();
        fence_sum(sum);
        gemv_wgmma::wgmma_wait<0>();
        fence_sum(sum);
        if (local == kLocals - 1) {  // release the stage in every block that wrote its A
          __syncwarp();
          if constexpr (kSplitK) {
            if (me.lane == 0) mbarrier_arrive(&ring.empty[s]);
          } else {
            if (me.lane < kClusterN) mbarrier_arrive_in(&ring.empty[s], me.lane);
          }
        }
        promote<kFormer>(total[local], sum, lo * b0, hi * b0, lo * b1, hi * b1);
      }
      s = s + 1 == kStages ? 0 : s + 1;
      phase ^= s == 0 ? 1u : 0u;
    }
  }

  // accumulate_tile<former>, `former` one of 16, 16 - kFormerStep, ... (a loop compiled for each,
  // since the scale a sum register takes must be known at compile time).
  template <int kFormer>
  static __device__ __forceinline__ void accumulate_tile_split(
      int former, KRange range, const ConsumerRing& ring, const ConsumerThread& me,
      std::uint32_t a_low, std::uint32_t b_low, int& s, std::uint32_t& phase,
      const float* b_scales, float (&sum)[kValues], float (&total)[kLocals][kValues]) {
    if constexpr (kFormer > kFormerStep) {
      if (former != kFormer) {
        accumulate_tile_split<kFormer - kFormerStep>(former, range, ring, me, a_low, b_low, s,
                                                     phase, b_scales, sum, total);
        return;
      }
    }
    accumulate_tile<kFormer>(range, ring, me, a_low, b_low, s, phase, b_scales, sum, total);
  }

  // A lane's stmatrix row in its warpgroup's 64 rows of a local (+ 64 for the second
  // warpgroup): lanes 0-7 address the rows of the first 8 x 8 matrix, lanes 8-15 the second's.
  static __device__ __forceinline__ int staging_row(const ConsumerThread& me) {
    return 64 * me.group + 16 * ((me.thread / 32) % 4) + me.lane % 16;
  }
  // Byte offset of 16-byte column group `group` of `row` in an output box.
  static __device__ __forceinline__ std::uint32_t box_offset(int row, int group) {
    return kOutSwizzled ? tile_store::swizzled_offset(row, group)
                        : row * (2 * kOutBoxColumns) + 16 * group;
  }

  // Writes the tile's totals as bf16 through the staging buffer: each warp's 16 rows of a
  // local go in with stmatrix, then one thread stores the output boxes with TMA. Before the
  // buffer is refilled, that thread waits for the previous tile's stores to have read it.
  static __device__ __forceinline__ void store_tile(const Params& p, const Tile& tile,
                                                    const ConsumerRing& ring,
                                                    const ConsumerThread& me,
                                                    const float (&total)[kLocals][kValues]) {
    if constexpr (kStoreByBox) {
      store_tile_by_box(p, tile, ring, me, total);
      return;
    }
    if (me.thread == 0) tile_store::wait_stores_read();
    tile_store::named_barrier_sync(1, 256);
    const int warp_row = staging_row(me);
#pragma unroll
    for (int local = 0; local < kLocals; ++local) {
      const int row = 128 * local + warp_row;
#pragma unroll
      for (int i = 0; i < kValues / 4; ++i) {  // columns [8 i, 8 i + 8)
        const std::uint32_t box = ring.out_tile + (i / kOutBoxGroups) * kOutBoxBytes;
        const int group = i % kOutBoxGroups;
        const float* v = &total[local][4 * i];
        tile_store::stmatrix_x2(box + box_offset(row, group),
                                tile_store::pack_bf16x2(v[0], v[1]),
                                tile_store::pack_bf16x2(v[2], v[3]));
      }
    }
    fence_shared_for_async_proxy();
    tile_store::named_barrier_sync(1, 256);
    if (me.thread == 0) {
#pragma unroll
      for (int box = 0; box < kBlockN / kOutBoxColumns; ++box) {
        tile_store::store_box(p.d_map, ring.out_tile + box * kOutBoxBytes,
                              tile.n0 + box * kOutBoxColumns, tile.m0);
      }
      tile_store::commit_stores();
    }
  }

  // store_tile through a buffer of one box (kStoreByBox): per 128-row local and box of columns,
  // wait until the previous box's store has read the buffer, fill it, store it.
  static __device__ __forceinline__ void store_tile_by_box(const Params& p, const Tile& tile,
                                                           const ConsumerRing& ring,
                                                           const ConsumerThread& me,
                                                           const float (&total)[kLocals][kValues]) {
    const int row = staging_row(me);
#pragma unroll
    for (int local = 0; local < kLocals; ++local) {
      if (tile.m0 + 128 * local >= p.m) break;  // block-uniform: nothing of it is in the output
#pragma unroll
      for (int box = 0; box < kBlockN / kOutBoxColumns; ++box) {
        if (me.thread == 0) tile_store::wait_stores_read();
        tile_store::named_barrier_sync(1, 256);
#pragma unroll
        for (int group = 0; group < kOutBoxGroups; ++group) {
          const float* v = &total[local][4 * (box * kOutBoxGroups + group)];
          tile_store::stmatrix_x2(ring.out_tile + box_offset(row, group),
                                  tile_store::pack_bf16x2(v[0], v[1]),
                                  tile_store::pack_bf16x2(v[2], v[3]));
        }
        fence_shared_for_async_proxy();
        tile_store::named_barrier_sync(1, 256);
        if (me.thread == 0) {
          tile_store::store_box(p.d_map, ring.out_tile, tile.n0 + box * kOutBoxColumns,
                                tile.m0 + 128 * local);
          tile_store::commit_stores();
        }
      }
    }
  }

  // Split-K: the cluster's partial sums of the tile meet in the block that finishes each warp's
  // 16 rows (warp % S); it adds them in rank order and stores bf16 pairs straight from
  // registers. `received` completes when the other S - 1 blocks have pushed theirs; `out` is
  // scratch (the K loop's sum registers).
  static __device__ __forceinline__ void reduce_and_store(const Params& p, const Tile& tile,
                                                          unsigned rank, const ConsumerRing& ring,
                                                          const ConsumerThread& me,
                                                          std::uint64_t* received,
                                                          const float (&total)[kValues],
                                                          float (&out)[kValues]) {
    const int splits = p.k_splits, warp = me.thread / 32;
    const auto finisher = static_cast<unsigned>(warp % splits);
    // Sender `sender`'s slice of this warp's rows in the finisher's buffer: slots by sender
    // (the finisher's own skipped), then by the finisher's warps, then this lane's vectors.
    auto slice = [&](unsigned sender) {
      const int slot = static_cast<int>(sender < finisher ? sender : sender - 1);
      const int index = slot * finished_warps(0, splits) + warp / splits;
      return ring.out_tile + index * kSliceBytes + 16 * me.lane;
    };
    if (finisher != rank) {
      const std::uint32_t remote = cluster_address(slice(rank), finisher);
#pragma unroll
      for (int i = 0; i < kValues / 4; ++i) {
        store_in_cluster(remote + 512 * i, total[4 * i], total[4 * i + 1], total[4 * i + 2],
                         total[4 * i + 3]);
      }
      mbarrier_arrive_release_in(received, finisher);
      return;
    }
    if (splits > 1) mbarrier_wait_acquire_cluster(received, 0);
#pragma unroll
    for (int v = 0; v < kValues; ++v) out[v] = 0.0f;
    for (int sender = 0; sender < splits; ++sender) {
      if (sender == static_cast<int>(rank)) {
#pragma unroll
        for (int v = 0; v < kValues; ++v) out[v] += total[v];
        continue;
      }
      const std::uint32_t local = slice(static_cast<unsigned>(sender));
#pragma unroll
      for (int i = 0; i < kValues / 4; ++i) {
        const float4 part = load_shared_float4(local + 512 * i);
        out[4 * i] += part.x;
        out[4 * i + 1] += part.y;
        out[4 * i + 2] += part.z;
        out[4 * i + 3] += part.w;
      }
    }
    // Rows row and row + 8, columns col + 8 i and + 1 (N and the row stride are multiples of 8).
    const int row = tile.m0 + me.row_lo, col = tile.n0 + 2 * (me.lane % 4);
    auto* d = static_cast<std::uint16_t*>(p.d);
#pragma unroll
    for (int i = 0; i < kValues / 4; ++i) {
      const int n = col + 8 * i;
      if (n >= p.n) continue;
      if (row < p.m) {
        *reinterpret_cast<std::uint32_t*>(d + row * p.ldd + n) =
            tile_store::pack_bf16x2(out[4 * i], out[4 * i + 1]);
      }
      if (row + 8 < p.m) {
        *reinterpret_cast<std::uint32_t*>(d + (row + 8) * p.ldd + n) =
            tile_store::pack_bf16x2(out[4 * i + 2], out[4 * i + 3]);
      }
    }
  }

  // One consumer warpgroup's share of each tile.
  static __device__ void consume(const Params& p, unsigned rank, int cluster, int clusters,
                                 const ConsumerRing& ring, float* b_scales,
                                 std::uint64_t* received) {
    const ConsumerThread me = consumer_thread();
    // Warp-uniform (the shuffle tells the compiler so): descriptors live in uniform registers.
    const int group = __shfl_sync(0xffffffff, me.group, 0);
    const auto a_low = static_cast<std::uint32_t>(
        gemv_tma::swizzled_descriptor(ring.a_ring + 64 * group * kBlockK));
    const auto b_low = static_cast<std::uint32_t>(gemv_tma::swizzled_descriptor(ring.b_ring));
    float sum[kValues];
    float total[kLocals][kValues];
    const KRange range = k_range(p, rank);
    int s = 0;  // the ring's next stage and its phase (the producer's sequence)
    std::uint32_t phase = 0;
    for (int t = cluster; t < p.cluster_tiles; t += clusters) {
      const Tile tile = tile_at(p, t, rank);
#pragma unroll
      for (int local = 0; local < kLocals; ++local) {
#pragma unroll
        for (int v = 0; v < kValues; ++v) total[local][v] = 0.0f;
      }
      // Every consumer is past the previous tile's K loop (store_tile's barriers): restage
      // the weight scales of the tile's first scale block and of the next (clamped at N).
      const int first = min(tile.n0 / 128, p.n_scale_blocks - 1);
      const int second = min(first + 1, p.n_scale_blocks - 1);
      const float* first_scales = p.b_scales + static_cast<std::int64_t>(first) * p.k_blocks;
      const float* second_scales = p.b_scales + static_cast<std::int64_t>(second) * p.k_blocks;
      for (int i = range.first + me.thread; i < range.end; i += 256) {
        b_scales[i] = __ldg(first_scales + i);
        if (kScaleRows > 1) b_scales[kMaxKBlocks + i] = __ldg(second_scales + i);
      }
      tile_store::named_barrier_sync(2, 256);
      // Column groups of 8 in the first scale block: all of a 128-wide tile; 16 or 8 of a
      // 192-wide one, which starts 0 or 64 columns into its block; 16, 14, ..., 2 of a 144-wide.
      accumulate_tile_split<16>((128 - tile.n0 % 128) / 8, range, ring, me, a_low, b_low, s,
                                phase, b_scales, sum, total);
      if constexpr (kSplitK) {
        reduce_and_store(p, tile, rank, ring, me, received, total[0], sum);
      } else {
        store_tile(p, tile, ring, me, total);
      }
    }
    // The last stores must be done before the block's shared memory goes away.
    if (me.thread == 0) tile_store::wait_stores_done();
  }
};

template <int kBlockM, int kBlockN, bool kSplitK = false, bool kStoreByBox = false>
__global__ void __launch_bounds__(kThreads, 1) kernel(const __grid_constant__ Params params) {
  using K = Kernel<kBlockM, kBlockN, kSplitK, kStoreByBox>;
  __shared__ float b_scales[K::kScaleRows * kMaxKBlocks];  // the tile's weight scales
  __shared__ std::uint64_t received;  // split-K: the other blocks' partial sums have arrived
  if (kSplitK && threadIdx.x == 0) {
    const int rank = static_cast<int>(blockIdx.y);
    const int senders = (params.k_splits - 1) * finished_warps(rank, params.k_splits);
    mbarrier_init(&received, static_cast<std::uint32_t>(max(1, 32 * senders)));
  }
  constexpr std::uint32_t kEmptyArrivals = (kSplitK ? 1 : kClusterN) * kConsumerWarps;
  // The split-K producer (a K range, two A boxes per stage) spills at 40 registers.
  own_prefill::run_block<K::kStages, K::kABytes, K::kBBytes, kBlockM, K::kOutBytes, kSplitK>(
      params.a_map, params.b_map, kEmptyArrivals,
      [&](unsigned rank, int cluster, int clusters, std::uint32_t a_ring, std::uint32_t b_ring,
          float* scale_ring, std::uint64_t* full, std::uint64_t* empty) {
        K::produce(params, rank, cluster, clusters, a_ring, b_ring, scale_ring, full, empty);
      },
      [&](unsigned rank, int cluster, int clusters, const ConsumerRing& ring) {
        K::consume(params, rank, cluster, clusters, ring, b_scales, &received);
      });
}

// The Params fields both forms share: the A and B tensor maps (boxes of `a_box_rows` and
// `b_box_rows` rows), the scales, and M, N and K in their blocks (`block_m` tokens per tile).
// `name` is the configuration's name for errors.
inline Params operand_params(const BlockFp8GemmProblem& p, const float* a_scales,
                             std::int64_t a_scale_stride_k, int a_box_rows, int b_box_rows,
                             int block_m, const char* name) {
  Params params{};
  if (!encode_byte_matrix_map(&params.a_map, p.a, p.m, p.k, p.lda, a_box_rows) ||
      !encode_byte_matrix_map(&params.b_map, p.b, p.n, p.k, p.ldb, b_box_rows)) {
    check_tile(cudaErrorInvalidValue, "tensor maps of a and b", name);
  }
  params.a_scales = a_scales;
  params.a_scale_stride_k = a_scale_stride_k;
  params.b_scales = p.b_scales;
  params.m = static_cast<int>(p.m);
  params.n = static_cast<int>(p.n);
  params.k_blocks = static_cast<int>((p.k + kBlockK - 1) / kBlockK);
  params.n_scale_blocks = static_cast<int>((p.n + 127) / 128);
  params.m_blocks = static_cast<int>((p.m + block_m - 1) / block_m);
  if (params.k_blocks > kMaxKBlocks) {
    check_tile(cudaErrorInvalidValue, "K <= 131072: weight scales are staged in shared memory",
               name);
  }
  return params;
}

// Launches the tile on `stream`; `name` is the configuration's name for errors.
template <int kBlockM, int kBlockN, bool kStoreByBox = false>
void launch(const BlockFp8GemmProblem& p, const float* a_scales, std::int64_t a_scale_stride_k,
            cudaStream_t stream, const char* name) {
  using K = Kernel<kBlockM, kBlockN, false, kStoreByBox>;
  constexpr auto* kKernel = &kernel<kBlockM, kBlockN, false, kStoreByBox>;
  Params params = operand_params(p, a_scales, a_scale_stride_k, kBlockM / kClusterN, kBlockN,
                                 kBlockM, name);
  if (!encode_bf16_matrix_map(&params.d_map, p.d, p.m, p.n, p.ldd * 2, K::kOutBoxRows,
                              K::kOutBoxColumns, K::kOutSwizzled)) {
    check_tile(cudaErrorInvalidValue, "tensor map of d", name);
  }
  const int n_blocks = static_cast<int>((p.n + kBlockN - 1) / kBlockN);
  params.pairs = (n_blocks + kClusterN - 1) / kClusterN;
  params.cluster_tiles = params.m_blocks * params.pairs;
  if (params.cluster_tiles == 0) return;

  KernelLaunch config;
  config.threads = kThreads;
  config.shared_bytes = K::kSharedBytes;
  config.cluster_along_y = true;
  config.grid = dim3(1, kClusterN, 1);
  // As many clusters as fit at once (a cluster's blocks share a GPC), then persistent.
  static const int resident = resident_clusters(kKernel, config);
  if (resident == 0) {
    check_tile(cudaErrorInvalidConfiguration, "cluster occupancy", name);
  }
  config.grid.x = static_cast<unsigned>(std::min(params.cluster_tiles, resident));
  check_tile(launch_kernel(kKernel, params, config, stream), "kernel launch",
             name);
}

}  // namespace lowbit::cuda::tall
