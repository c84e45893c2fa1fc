// Prefill path of block_fp8_mm written directly on TMA, mbarriers and wgmma (sm_90a), in the
// style of DeepGEMM: 128 x 192 output tiles, a persistent grid of 2-block clusters that walk the
// tiles, one producer warpgroup and two consumer warpgroups of 64 tokens each. The heuristic
// picks it for narrow weights at large M only (DeepSeek-V3's kv_a at M >= 4096): on an H200 it
// is still slower than the CUTLASS tile on the other DeepSeek-V3 shapes (docs/perf/block_gemm.md,
// "lowbit's own prefill kernel").
//
// Why multicast: CUTLASS's 128 x 128 tiles read 24 KB from L2 per 128-deep K block (A multicast
// over a 1 x 2 cluster) for 4.2 MFLOP, and both it and a first version of this kernel (32 KB,
// no multicast) ran at about 6-7 TB/s of L2 reads. Here the two blocks of a cluster take two
// 128-token tiles of the same weight columns and each loads half of the weight tile for both:
// 16 KB of A + 12 KB of B per block and K block for 6.3 MFLOP (4.45e-3 bytes per flop against
// 5.9e-3).
//
// Per K block each consumer warpgroup promotes its tensor-core sums into fp32 registers, scaled
// by As[m, kb] * Bs[n / 128, kb]. It multiplies the tile's two column halves as separate wgmma
// groups, so one half's promotion overlaps the other half's wgmma (accumulate_tile).
//
// Shared memory: a ring of stages, each holding one K block of A (128 tokens x 128 bytes), of B
// (192 weight rows x 128 bytes), both with TMA's 128-byte swizzle (wgmma's K-major layout), and
// the 128 activation scales of the block (As M-major with 16-byte aligned columns: the caller
// realigns other layouts). Reads past M, N and K arrive as zeros.
#include <cuda.h>
#include <cuda_bf16.h>
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
#include "block_fp8_gemm_multicast_launch.h"
#include "own_prefill_block.cuh"

namespace lowbit::cuda {

namespace {

using own_prefill::consumer_thread;
using own_prefill::ConsumerRing;
using own_prefill::ConsumerThread;
using own_prefill::fence_sum;
using own_prefill::kThreads;

constexpr int kBlockM = 128, kBlockN = 192, kBlockK = 128, kClusterM = 2;
// Each consumer thread holds a K block's two 48-value half sums and the 96 totals
// (own_prefill_block.cuh: the warpgroups and their registers).
constexpr int kABytes = kBlockM * kBlockK, kBBytes = kBlockN * kBlockK;
// Each block of the cluster loads one half of the weight rows; the consumers multiply the same
// halves (the tile's column halves) as separate wgmma groups.
constexpr int kBHalfBytes = kBBytes / kClusterM;
constexpr int kScaleBytes = kBlockM * 4;
constexpr int kStageBytes = kABytes + kBBytes + kScaleBytes;
constexpr int kStages = (227 * 1024 - 1024 - 256) / kStageBytes;
constexpr int kSharedBytes = own_prefill::shared_bytes<kStages, kABytes, kBBytes, kBlockM>();
constexpr int kValues = kBlockN / 2;  // a warpgroup's 64 x kBlockN fp32 tile over 128 threads
constexpr int kHalfValues = kValues / 2;  // one column half
static_assert(kBHalfBytes % 1024 == 0, "a B half must keep the 8-row swizzle pattern");
static_assert(kBlockN % 8 == 0 && kBlockN <= 256, "wgmma n");

struct MulticastParams {
  CUtensorMap a_map;  // activations [M, K] bytes, boxes of 128 x 128 rows
  CUtensorMap b_map;  // weights [N, K] bytes, boxes of 128 x kBlockN / 2 rows
  const float* a_scales;  // As(m, kb) at kb * a_scale_stride_k + m
  std::int64_t a_scale_stride_k;
  const float* b_scales;  // [n_scale_blocks, k_blocks]
  __nv_bfloat16* d;
  std::int64_t ldd;
  int m, n, k_blocks, n_scale_blocks, m_pairs, cluster_tiles;
};

// D (64 x 96) = A (64 x 32, shared) * B (32 x 96, shared) + (accumulate ? D : 0).
__device__ __forceinline__ void wgmma_m64n96k32(float (&d)[kHalfValues], std::uint64_t a,
                                                std::uint64_t b, bool accumulate) {
#define LOWBIT_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                     "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k32.f32.e4m3.e4m3 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47}, "
      "%48, %49, p, 1, 1;\n}\n"
      : LOWBIT_D8(0), LOWBIT_D8(8), LOWBIT_D8(16), LOWBIT_D8(24), LOWBIT_D8(32),
        LOWBIT_D8(40)
      : "l"(a), "l"(b), "r"(int{accumulate}));
#undef LOWBIT_D8
}

struct Tile {
  int m0, n0;
};
// Cluster tiles run M-fastest: the clusters resident at once share a few weight column blocks.
// Block `rank` of the cluster (blockIdx.y: a cluster is one grid column) takes the rank-th 128
// tokens of the pair.
__device__ __forceinline__ Tile tile_at(const MulticastParams& p, int cluster_tile, unsigned rank) {
  const int pair = cluster_tile % p.m_pairs, n_block = cluster_tile / p.m_pairs;
  return {(kClusterM * pair + static_cast<int>(rank)) * kBlockM, n_block * kBlockN};
}

__device__ void produce(const MulticastParams& p, unsigned rank, int cluster, int clusters,
                        std::uint32_t a_ring, std::uint32_t b_ring, float* scale_ring,
                        std::uint64_t* full, std::uint64_t* empty) {
  const int m_padded = (p.m + 3) / 4 * 4;  // M-major columns are read in 16-byte units
  int c = 0;
  for (int t = cluster; t < p.cluster_tiles; t += clusters) {
    const Tile tile = tile_at(p, t, rank);
    const int scale_rows = max(0, min(int{kBlockM}, m_padded - tile.m0));
    for (int kb = 0; kb < p.k_blocks; ++kb, ++c) {
      const int s = c % kStages;
      // Both blocks' consumers are done with the stage: this block's B half goes to both.
      if (c >= kStages) mbarrier_wait(&empty[s], (c / kStages - 1) & 1);
      mbarrier_arrive_expect_bytes(&full[s], kABytes + kBBytes + 4 * scale_rows);
      gemv_tma::load_box(p.a_map, a_ring + s * kABytes, &full[s], kb * kBlockK, tile.m0);
      load_box_multicast(p.b_map, b_ring + s * kBBytes + rank * kBHalfBytes, &full[s],
                         kb * kBlockK, tile.n0 + static_cast<int>(rank) * (kBlockN / 2), 0x3);
      if (scale_rows > 0) {
        bulk_copy_to_shared(scale_ring + s * kBlockM,
                            p.a_scales + kb * p.a_scale_stride_k + tile.m0, 4 * scale_rows,
                            &full[s]);
      }
    }
  }
}

// Issues the four 32-deep wgmma of column half `half` of K block `c` as one group.
__device__ __forceinline__ void issue_half(const ConsumerRing& ring, int c, int group, int half,
                                           float (&sum)[kHalfValues]) {
  const int s = c % kStages;
  const std::uint32_t a_stage = ring.a_ring + s * kABytes + group * (kABytes / 2);
  const std::uint32_t b_stage = ring.b_ring + s * kBBytes + half * kBHalfBytes;
  fence_sum(sum);
  gemv_wgmma::wgmma_fence();
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    wgmma_m64n96k32(sum, gemv_tma::swizzled_descriptor(a_stage + 32 * q),
                    gemv_tma::swizzled_descriptor(b_stage + 32 * q), q > 0);
  }
  gemv_wgmma::wgmma_commit();
}

// As[m, kb] * Bs[first or second weight scale block, kb] for the thread's rows lo and lo + 8.
struct BlockScales {
  float lo0, hi0, lo1, hi1;
};

// total[half's values] += sum * As * Bs, the weight scale block chosen per 8 columns at
// compile time (column 8 (v / 4) + ... of the tile for value v of the whole tile).
template <int kBoundary, int kHalf>
__device__ __forceinline__ void promote_half(const float (&sum)[kHalfValues],
                                             float (&total)[kValues], const BlockScales& sc) {
#pragma unroll
  for (int v = 0; v < kHalfValues; ++v) {
    const int value = kHalf * kHalfValues + v;
    const bool first = 8 * (value / 4) < kBoundary;
    const float scale = (v / 2) % 2 ? (first ? sc.hi0 : sc.hi1) : (first ? sc.lo0 : sc.lo1);
    total[value] = fmaf(sum[v], scale, total[value]);
  }
}

// One consumer warpgroup's K loop over a tile: rows [64 * group, 64 * group + 64), summed into
// `total`. The tile's columns are multiplied in two halves with their own sums and wgmma
// groups, so the tensor core runs one half while the other is promoted. Within a run of
// kBlocksPerDrain K blocks the warpgroup always has a group in flight:
//   issue both halves of kb | wait for half 0, promote it | issue half 0 of kb + 1 |
//   wait for half 1 of kb, promote it | issue half 1 of kb + 1 | ...
// and only the run's last block is waited for in full. ptxas serializes every wgmma when a
// group is pending at a loop's back edge, so each run is straight-line code and nothing is
// pending between runs. (On an H200, runs of 8 were 3-10% faster than runs of 4, and runs of 4
// 3-8% faster than draining every block.)
// A 192-wide tile meets two 128-wide weight scale blocks; its columns before kBoundary use the
// first. kBoundary is 128 for even column blocks and 64 for odd ones.
constexpr int kBlocksPerDrain = 8;
template <int kBoundary>
__device__ __forceinline__ void accumulate_tile(const MulticastParams& p, const Tile& tile,
                                                const ConsumerRing& ring,
                                                const ConsumerThread& me, int& c,
                                                float (&sum0)[kHalfValues],
                                                float (&sum1)[kHalfValues],
                                                float (&total)[kValues]) {
  const int group = me.group, lane = me.lane, row_lo = me.row_lo;
  const int first_block = tile.n0 / 128;
  const float* b_scales0 = p.b_scales + static_cast<std::int64_t>(first_block) * p.k_blocks;
  const float* b_scales1 =
      p.b_scales +
      static_cast<std::int64_t>(min(first_block + 1, p.n_scale_blocks - 1)) * p.k_blocks;
  auto scales_of = [&](int kb, int stage) {
    const float bs0 = __ldg(b_scales0 + kb), bs1 = __ldg(b_scales1 + kb);
    const float* a_scales = ring.scale_ring + stage * kBlockM;
    const float lo = a_scales[row_lo], hi = a_scales[row_lo + 8];
    return BlockScales{lo * bs0, hi * bs0, lo * bs1, hi * bs1};
  };
  // Both blocks of the cluster wrote a stage's B: release it in both.
  auto release = [&](int stage) {
    __syncwarp();
    if (lane < kClusterM) mbarrier_arrive_in(&ring.empty[stage], lane);
  };
  auto wait_full = [&](int i) { mbarrier_wait(&ring.full[i % kStages], (i / kStages) & 1); };
  BlockScales sc;
  auto start_run = [&]() {  // issues both halves of the block in stage c
    wait_full(c);
    issue_half(ring, c, group, 0, sum0);
    issue_half(ring, c, group, 1, sum1);
  };
  // Block kb (stage c) was issued in both halves: waits for half 0 and promotes it while half 1
  // runs.
  auto promote_first_half = [&](int kb) {
    sc = scales_of(kb, c % kStages);
    gemv_wgmma::wgmma_wait<1>();
    fence_sum(sum0);
    promote_half<kBoundary, 0>(sum0, total, sc);
  };
  // Then, within a run: issues half 0 of the next block, and waits for half 1 and promotes it
  // while that runs, before issuing half 1 of the next block in its place.
  auto advance = [&](int kb) {
    promote_first_half(kb);
    wait_full(c + 1);
    issue_half(ring, c + 1, group, 0, sum0);
    gemv_wgmma::wgmma_wait<1>();
    fence_sum(sum1);
    release(c % kStages);
    promote_half<kBoundary, 1>(sum1, total, sc);
    issue_half(ring, c + 1, group, 1, sum1);
    ++c;
  };
  // Or, for the run's last block: waits for half 1, frees the stage and promotes it. (Promoting
  // it while the next run's first half runs made ptxas insert a wait there: it does not carry
  // the wait across the loop's back edge.)
  auto finish_run = [&](int kb) {
    promote_first_half(kb);
    gemv_wgmma::wgmma_wait<0>();
    fence_sum(sum1);
    release(c % kStages);
    promote_half<kBoundary, 1>(sum1, total, sc);
    ++c;
  };
  int kb = 0;
  for (; kb + kBlocksPerDrain <= p.k_blocks; kb += kBlocksPerDrain) {
    start_run();
#pragma unroll
    for (int j = 0; j + 1 < kBlocksPerDrain; ++j) advance(kb + j);
    finish_run(kb + kBlocksPerDrain - 1);
  }
  for (; kb < p.k_blocks; ++kb) {
    start_run();
    finish_run(kb);
  }
}

// One consumer warpgroup's share of each tile.
__device__ void consume(const MulticastParams& p, unsigned rank, int cluster, int clusters,
                        const ConsumerRing& ring) {
  const ConsumerThread me = consumer_thread();
  float sum0[kHalfValues], sum1[kHalfValues];
  float total[kValues];
  int c = 0;  // K blocks consumed so far (the producer's sequence)
  for (int t = cluster; t < p.cluster_tiles; t += clusters) {
    const Tile tile = tile_at(p, t, rank);
#pragma unroll
    for (int v = 0; v < kValues; ++v) total[v] = 0.0f;
    static_assert(2 * kBlockN == 3 * 128, "column blocks start 0 or 64 past a scale block");
    if (tile.n0 % 128 == 0) {
      accumulate_tile<128>(p, tile, ring, me, c, sum0, sum1, total);
    } else {
      accumulate_tile<64>(p, tile, ring, me, c, sum0, sum1, total);
    }

    // Values v, v + 1 of a row are adjacent columns: one 4-byte store per pair.
#pragma unroll
    for (int v = 0; v < kValues; v += 2) {
      const int row = tile.m0 + me.row_lo + 8 * ((v / 2) % 2);
      const int col = tile.n0 + 8 * (v / 4) + 2 * (me.thread % 4);
      if (row >= p.m || col >= p.n) continue;
      __nv_bfloat16* out = p.d + static_cast<std::int64_t>(row) * p.ldd + col;
      if (col + 1 < p.n && reinterpret_cast<std::uintptr_t>(out) % 4 == 0) {
        *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(total[v], total[v + 1]);
      } else {
        out[0] = __float2bfloat16_rn(total[v]);
        if (col + 1 < p.n) out[1] = __float2bfloat16_rn(total[v + 1]);
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    block_fp8_gemm_multicast_kernel(const __grid_constant__ MulticastParams params) {
  own_prefill::run_block<kStages, kABytes, kBBytes, kBlockM, 0>(
      params.a_map, params.b_map,
      [&](unsigned rank, int cluster, int clusters, std::uint32_t a_ring, std::uint32_t b_ring,
          float* scale_ring, std::uint64_t* full, std::uint64_t* empty) {
        produce(params, rank, cluster, clusters, a_ring, b_ring, scale_ring, full, empty);
      },
      [&](unsigned rank, int cluster, int clusters, const ConsumerRing& ring) {
        consume(params, rank, cluster, clusters, ring);
      });
}

}  // namespace

void launch_block_fp8_gemm_multicast(const BlockFp8GemmProblem& p, const float* a_scales,
                                     std::int64_t a_scale_stride_k, cudaStream_t stream) {
  MulticastParams params{};
  if (!encode_byte_matrix_map(&params.a_map, p.a, p.m, p.k, p.lda, kBlockM) ||
      !encode_byte_matrix_map(&params.b_map, p.b, p.n, p.k, p.ldb, kBlockN / kClusterM)) {
    check_cuda(cudaErrorInvalidValue, "block_fp8_mm",
               "tensor maps of a and b (prefill128x192mc)");
  }
  params.a_scales = a_scales;
  params.a_scale_stride_k = a_scale_stride_k;
  params.b_scales = p.b_scales;
  params.d = static_cast<__nv_bfloat16*>(p.d);
  params.ldd = p.ldd;
  params.m = static_cast<int>(p.m);
  params.n = static_cast<int>(p.n);
  params.k_blocks = static_cast<int>((p.k + kBlockK - 1) / kBlockK);
  params.n_scale_blocks = static_cast<int>((p.n + 127) / 128);
  const int m_blocks = static_cast<int>((p.m + kBlockM - 1) / kBlockM);
  params.m_pairs = (m_blocks + kClusterM - 1) / kClusterM;
  params.cluster_tiles = params.m_pairs * static_cast<int>((p.n + kBlockN - 1) / kBlockN);
  if (params.cluster_tiles == 0) return;

  KernelLaunch launch;
  launch.threads = kThreads;
  launch.shared_bytes = kSharedBytes;
  launch.cluster_along_y = true;
  launch.grid = dim3(1, kClusterM, 1);
  // As many clusters as fit at once (a cluster's blocks share a GPC), then persistent.
  static const int resident = resident_clusters(block_fp8_gemm_multicast_kernel, launch);
  if (resident == 0) {
    check_cuda(cudaErrorInvalidConfiguration, "block_fp8_mm",
               "cluster occupancy (prefill128x192mc)");
  }
  launch.grid.x = static_cast<unsigned>(std::min(params.cluster_tiles, resident));
  check_cuda(launch_kernel(block_fp8_gemm_multicast_kernel, params, launch, stream),
             "block_fp8_mm", "kernel launch (prefill128x192mc)");
}

}  // namespace lowbit::cuda
