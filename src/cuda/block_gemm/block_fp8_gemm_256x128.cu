// Prefill path of block_fp8_mm with 256-token x 128-weight-row tiles (`prefill256x128mc`),
// written directly on TMA, mbarriers and wgmma (sm_90a) like block_fp8_gemm_multicast.cu, but
// shaped after what bounds that kernel: the L2 -> shared-memory feed, not the tensor core.
//
// Why this shape (probes on an H200, docs/perf/block_gemm.md): two consumer warpgroups that
// wait for every K block's wgmma and promote in registers keep the tensor core ~100% busy with
// any of the tile shapes tried when their operands are already in shared memory, while bulk
// copies from L2 into shared memory top out near 8.8 TB/s over the whole GPU. So the tile
// should read as few bytes per flop as its registers allow. Here the two blocks of a cluster
// take the same 256 tokens and two adjacent 128-row weight blocks; each loads half of the
// activation tile and multicasts it to both: 16 KB of A + 16 KB of B per block and K block for
// 8.4 MFLOP (3.8e-3 bytes per flop, against 4.45e-3 for the 128 x 192 tile). (Later
// measurements refuted the feed as this kernel's bound; what held it back on short K was its
// epilogue of scattered global stores and its tile order, both replaced since.)
//
// Each consumer warpgroup owns rows [64 g, 64 g + 64) and [128 + 64 g, 192 + 64 g) of the tile
// ("locals" 0 and 1), 64 fp32 totals for each. Per K block and local it issues four
// m64n128k32 wgmma into one 64-value sum, waits for them, and promotes the sum into the local's
// totals scaled by As[m, kb] * Bs[n / 128, kb] (one weight scale block per tile: the tile's
// columns are one 128-wide scale block). The other warpgroup's wgmma keep the tensor core busy
// meanwhile (DeepGEMM's scheme).
//
// Shared memory: the output staging tile (256 x 128 bf16 as two 64-column boxes: written with
// stmatrix, stored by TMA in the background while the next tile runs; DeepGEMM's epilogue) and
// a ring of 3 stages, each holding one K block of A (256 tokens x 128 bytes: the two blocks'
// 128-token halves), of B (128 weight rows x 128 bytes), both with TMA's 128-byte swizzle, and
// the block's 256 activation scales (As M-major with 16-byte aligned columns: the caller
// realigns other layouts). Reads past M, N and K arrive as zeros; stores past M and N are
// dropped.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "../common/bulk_copy.cuh"
#include "../common/check.cuh"
#include "../common/cluster_copy.cuh"
#include "../common/gemv_tma.cuh"
#include "../common/gemv_wgmma.cuh"
#include "../common/kernel_launch.cuh"
#include "../common/tensor_map.cuh"
#include "../common/tile_store.cuh"
#include "block_fp8_gemm_multicast_launch.h"
#include "own_prefill_block.cuh"


namespace lowbit::cuda {

namespace {

using own_prefill::consumer_thread;
using own_prefill::ConsumerRing;
using own_prefill::ConsumerThread;
using own_prefill::fence_sum;
using own_prefill::kThreads;

constexpr int kBlockM = 256, kBlockN = 128, kBlockK = 128, kClusterN = 2;
// 64-token row groups per consumer warpgroup; each consumer thread holds 64 sum values and
// 2 x 64 totals (own_prefill_block.cuh: the warpgroups and their registers).
constexpr int kLocals = 2;
constexpr int kABytes = kBlockM * kBlockK, kBBytes = kBlockN * kBlockK;
constexpr int kAHalfBytes = kABytes / kClusterN;  // each block's share of the activation tile
constexpr int kScaleBytes = kBlockM * 4;
constexpr int kStageBytes = kABytes + kBBytes + kScaleBytes;
// The output tile is staged in shared memory as two 64-column boxes (128-byte rows) for TMA.
constexpr int kOutBoxColumns = 64, kOutBoxBytes = kBlockM * 128;
constexpr int kOutBytes = kBlockN / kOutBoxColumns * kOutBoxBytes;
// The tile's weight scales are staged in shared memory too: K up to 128 x kMaxKBlocks.
constexpr int kMaxKBlocks = 1024;
constexpr int kStages = (227 * 1024 - 1024 - 256 - kOutBytes - 4 * kMaxKBlocks) / kStageBytes;
constexpr int kSharedBytes =
    own_prefill::shared_bytes<kStages, kABytes, kBBytes, kBlockM, kOutBytes>();
constexpr int kValues = kBlockN / 2;  // a 64 x 128 fp32 tile over a warpgroup's 128 threads
static_assert(kAHalfBytes % 1024 == 0, "an A half must keep the 8-row swizzle pattern");
static_assert(kBlockN == 128, "one weight scale block per tile");

struct TallParams {
  CUtensorMap a_map;  // activations [M, K] bytes, boxes of 128 x 128 rows
  CUtensorMap b_map;  // weights [N, K] bytes, boxes of 128 x 128 rows
  CUtensorMap d_map;  // output [M, N] bf16, boxes of 64 columns x 256 rows
  const float* a_scales;  // As(m, kb) at kb * a_scale_stride_k + m
  std::int64_t a_scale_stride_k;
  const float* b_scales;  // [n_scale_blocks, k_blocks]
  int m, n, k_blocks, n_scale_blocks, m_blocks, pairs, cluster_tiles;
};

// D (64 x 128) = A (64 x 32, shared) * B (32 x 128, shared) + (accumulate ? D : 0).
__device__ __forceinline__ void wgmma_m64n128k32(float (&d)[kValues], std::uint64_t a,
                                                 std::uint64_t b, bool accumulate) {
#define LOWBIT_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                     "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "%64, %65, p, 1, 1;\n}\n"
      : LOWBIT_D8(0), LOWBIT_D8(8), LOWBIT_D8(16), LOWBIT_D8(24), LOWBIT_D8(32),
        LOWBIT_D8(40), LOWBIT_D8(48), LOWBIT_D8(56)
      : "l"(a), "l"(b), "r"(int{accumulate}));
#undef LOWBIT_D8
}

struct Tile {
  int m0, n0;
};
// Cluster tiles run in groups of kGroupPairs weight-block pairs, pair-fastest within a group,
// so the clusters resident at once cover a near-square patch of the output (about 8 activation
// blocks x 8 pairs on 66 clusters) and share its operand rows in L2 (DeepGEMM orders its tiles
// the same way). Block `rank` of the cluster (blockIdx.y: a cluster is one grid column) takes
// the rank-th 128 weight rows of the pair.
constexpr int kGroupPairs = 8;
__device__ __forceinline__ Tile tile_at(const TallParams& p, int cluster_tile, unsigned rank) {
  const int per_group = kGroupPairs * p.m_blocks;
  const int group = cluster_tile / per_group, in_group = cluster_tile % per_group;
  const int pairs = min(kGroupPairs, p.pairs - group * kGroupPairs);
  const int pair = group * kGroupPairs + in_group % pairs, m_block = in_group / pairs;
  return {m_block * kBlockM, (kClusterN * pair + static_cast<int>(rank)) * kBlockN};
}

__device__ void produce(const TallParams& p, unsigned rank, int cluster, int clusters,
                        std::uint32_t a_ring, std::uint32_t b_ring, float* scale_ring,
                        std::uint64_t* full, std::uint64_t* empty) {
  const int m_padded = (p.m + 3) / 4 * 4;  // M-major columns are read in 16-byte units
  int c = 0;
  for (int t = cluster; t < p.cluster_tiles; t += clusters) {
    const Tile tile = tile_at(p, t, rank);
    const int scale_rows = max(0, min(int{kBlockM}, m_padded - tile.m0));
    for (int kb = 0; kb < p.k_blocks; ++kb, ++c) {
      const int s = c % kStages;
      // Both blocks' consumers are done with the stage: this block's A half goes to both.
      if (c >= kStages) mbarrier_wait(&empty[s], (c / kStages - 1) & 1);
      mbarrier_arrive_expect_bytes(&full[s], kABytes + kBBytes + 4 * scale_rows);
      load_box_multicast(p.a_map, a_ring + s * kABytes + rank * kAHalfBytes, &full[s],
                         kb * kBlockK, tile.m0 + static_cast<int>(rank) * (kBlockM / 2), 0x3);
      gemv_tma::load_box(p.b_map, b_ring + s * kBBytes, &full[s], kb * kBlockK, tile.n0);
      if (scale_rows > 0) {
        bulk_copy_to_shared(scale_ring + s * kBlockM,
                            p.a_scales + kb * p.a_scale_stride_k + tile.m0, 4 * scale_rows,
                            &full[s]);
      }
    }
  }
}

__device__ __forceinline__ void promote(float (&total)[kValues], const float (&sum)[kValues],
                                        float lo, float hi) {
#pragma unroll
  for (int v = 0; v < kValues; ++v) total[v] = fmaf(sum[v], (v / 2) % 2 ? hi : lo, total[v]);
}

// A wgmma descriptor from its low word (start address in 16-byte units and the unused leading
// offset, as in gemv_tma::swizzled_descriptor): the high word (1024-byte row-group stride,
// 128-byte swizzle) is the same for every stage, so a stage's descriptor is one 32-bit add.
__device__ __forceinline__ std::uint64_t descriptor_from_low(std::uint32_t low) {
  constexpr std::uint32_t kHigh = (1024 >> 4) | (1u << 30);
  return (static_cast<std::uint64_t>(kHigh) << 32) | low;
}
// One consumer warpgroup's K loop over a tile, summed into `total` (local 0's 64 values, then
// local 1's); `s` and `phase` track the ring across tiles. `a_low` and `b_low` are the low
// descriptor words of the warpgroup's rows and of B in stage 0; `b_scales` are the tile's
// weight scales, staged in shared memory. This is DeepGEMM's loop shape: wait for the stage,
// then per local issue four wgmma, wait for them and promote, unrolled 8 times. On an H200 it
// ran gate_up / down / o_proj (M = 4096) in 190-198 / 107 / 735-836 us against 213 / 120 /
// 837-1018 for a loop that took the next stage's barrier and scales while the second group ran
// (64-bit descriptor arithmetic, weight scales from global memory, not unrolled): the extra
// instructions there, not the tensor core or the feed, were what kept the tensor pipe idle.
__device__ __forceinline__ void accumulate_tile(const TallParams& p, const ConsumerRing& ring,
                                                const ConsumerThread& me, std::uint32_t a_low,
                                                std::uint32_t b_low, int& s,
                                                std::uint32_t& phase, const float* b_scales,
                                                float (&sum)[kValues],
                                                float (&total)[kLocals][kValues]) {
#pragma unroll 8
  for (int kb = 0; kb < p.k_blocks; ++kb) {
    const float b_scale = b_scales[kb];
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
        wgmma_m64n128k32(sum, descriptor_from_low(a_stage + 2 * q),
                         descriptor_from_low(b_stage + 2 * q), q > 0);
      }
      gemv_wgmma::wgmma_commit();
      fence_sum(sum);
      gemv_wgmma::wgmma_wait<0>();
      fence_sum(sum);
      if (local == kLocals - 1) {  // both blocks wrote the stage's A: release it in both
        __syncwarp();
        if (me.lane < kClusterN) mbarrier_arrive_in(&ring.empty[s], me.lane);
      }
      promote(total[local], sum, lo * b_scale, hi * b_scale);
    }
    s = s + 1 == kStages ? 0 : s + 1;
    phase ^= s == 0 ? 1u : 0u;
  }
}

// Writes the tile's totals as bf16 through the staging buffer: each warp's 16 rows of a local
// go in with stmatrix, then one thread stores the two 64-column boxes with TMA, which drops
// what lies past M and N and runs on while the next tile's K loop starts. Before the buffer is
// refilled, that thread waits for the previous tile's stores to have read it.
__device__ __forceinline__ void store_tile(const TallParams& p, const Tile& tile,
                                           const ConsumerRing& ring, const ConsumerThread& me,
                                           const float (&total)[kLocals][kValues]) {
  if (me.thread == 0) tile_store::wait_stores_read();
  tile_store::named_barrier_sync(1, 256);
  // Lanes 0-7 address the rows of the first 8 x 8 matrix, lanes 8-15 those of the second.
  const int warp_row = 64 * me.group + 16 * ((me.thread / 32) % 4) + me.lane % 16;
#pragma unroll
  for (int local = 0; local < kLocals; ++local) {
    const int row = 128 * local + warp_row;
#pragma unroll
    for (int i = 0; i < kValues / 4; ++i) {  // columns [8 i, 8 i + 8)
      const std::uint32_t box = ring.out_tile + (i / 8) * kOutBoxBytes;
      const float* v = &total[local][4 * i];
      tile_store::stmatrix_x2(box + tile_store::swizzled_offset(row, i % 8),
                              tile_store::pack_bf16x2(v[0], v[1]),
                              tile_store::pack_bf16x2(v[2], v[3]));
    }
  }
  tile_store::fence_for_tma();
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

// One consumer warpgroup's share of each tile.
__device__ void consume(const TallParams& p, unsigned rank, int cluster, int clusters,
                        const ConsumerRing& ring, float* b_scales) {
  const ConsumerThread me = consumer_thread();
  // Warp-uniform (the shuffle tells the compiler so): the descriptors live in uniform registers.
  const int group = __shfl_sync(0xffffffff, me.group, 0);
  const auto a_low = static_cast<std::uint32_t>(
      gemv_tma::swizzled_descriptor(ring.a_ring + 64 * group * kBlockK));
  const auto b_low = static_cast<std::uint32_t>(gemv_tma::swizzled_descriptor(ring.b_ring));
  float sum[kValues];
  float total[kLocals][kValues];
  int s = 0;  // the ring's next stage and its phase (the producer's sequence)
  std::uint32_t phase = 0;
  for (int t = cluster; t < p.cluster_tiles; t += clusters) {
    const Tile tile = tile_at(p, t, rank);
#pragma unroll
    for (int local = 0; local < kLocals; ++local) {
#pragma unroll
      for (int v = 0; v < kValues; ++v) total[local][v] = 0.0f;
    }
    // Every consumer is past the previous tile's K loop (store_tile's barriers): restage.
    const int n_block = min(tile.n0 / 128, p.n_scale_blocks - 1);
    const float* tile_b_scales = p.b_scales + static_cast<std::int64_t>(n_block) * p.k_blocks;
    for (int i = me.thread; i < p.k_blocks; i += 256) b_scales[i] = __ldg(tile_b_scales + i);
    tile_store::named_barrier_sync(2, 256);
    accumulate_tile(p, ring, me, a_low, b_low, s, phase, b_scales, sum, total);

    store_tile(p, tile, ring, me, total);
  }
  // The last stores must be done before the block's shared memory goes away.
  if (me.thread == 0) tile_store::wait_stores_done();
}

__global__ void __launch_bounds__(kThreads, 1)
    block_fp8_gemm_256x128_kernel(const __grid_constant__ TallParams params) {
  __shared__ float b_scales[kMaxKBlocks];  // the tile's weight scales
  own_prefill::run_block<kStages, kABytes, kBBytes, kBlockM, kOutBytes>(
      params.a_map, params.b_map,
      [&](unsigned rank, int cluster, int clusters, std::uint32_t a_ring, std::uint32_t b_ring,
          float* scale_ring, std::uint64_t* full, std::uint64_t* empty) {
        produce(params, rank, cluster, clusters, a_ring, b_ring, scale_ring, full, empty);
      },
      [&](unsigned rank, int cluster, int clusters, const ConsumerRing& ring) {
        consume(params, rank, cluster, clusters, ring, b_scales);
      });
}

}  // namespace

void launch_block_fp8_gemm_256x128(const BlockFp8GemmProblem& p, const float* a_scales,
                                   std::int64_t a_scale_stride_k, cudaStream_t stream) {
  TallParams params{};
  if (!encode_byte_matrix_map(&params.a_map, p.a, p.m, p.k, p.lda, kBlockM / kClusterN) ||
      !encode_byte_matrix_map(&params.b_map, p.b, p.n, p.k, p.ldb, kBlockN) ||
      !encode_bf16_matrix_map(&params.d_map, p.d, p.m, p.n, p.ldd * 2, kBlockM)) {
    check_cuda(cudaErrorInvalidValue, "block_fp8_mm",
               "tensor maps of a, b and d (prefill256x128mc)");
  }
  params.a_scales = a_scales;
  params.a_scale_stride_k = a_scale_stride_k;
  params.b_scales = p.b_scales;
  params.m = static_cast<int>(p.m);
  params.n = static_cast<int>(p.n);
  params.k_blocks = static_cast<int>((p.k + kBlockK - 1) / kBlockK);
  params.n_scale_blocks = static_cast<int>((p.n + 127) / 128);
  params.m_blocks = static_cast<int>((p.m + kBlockM - 1) / kBlockM);
  const int n_blocks = static_cast<int>((p.n + kBlockN - 1) / kBlockN);
  params.pairs = (n_blocks + kClusterN - 1) / kClusterN;
  params.cluster_tiles = params.m_blocks * params.pairs;
  if (params.cluster_tiles == 0) return;
  if (params.k_blocks > kMaxKBlocks) {
    check_cuda(cudaErrorInvalidValue, "block_fp8_mm",
               "K <= 131072 for prefill256x128mc (its weight scales are staged in shared memory)");
  }

  KernelLaunch launch;
  launch.threads = kThreads;
  launch.shared_bytes = kSharedBytes;
  launch.cluster_along_y = true;
  launch.grid = dim3(1, kClusterN, 1);
  // As many clusters as fit at once (a cluster's blocks share a GPC), then persistent.
  static const int resident = resident_clusters(block_fp8_gemm_256x128_kernel, launch);
  if (resident == 0) {
    check_cuda(cudaErrorInvalidConfiguration, "block_fp8_mm",
               "cluster occupancy (prefill256x128mc)");
  }
  launch.grid.x = static_cast<unsigned>(std::min(params.cluster_tiles, resident));
  check_cuda(launch_kernel(block_fp8_gemm_256x128_kernel, params, launch, stream),
             "block_fp8_mm", "kernel launch (prefill256x128mc)");
}

}  // namespace lowbit::cuda
