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
#include <type_traits>

#include "../common/check.cuh"
#include "../common/device_properties.cuh"
#include "../common/kernel_launch.cuh"
#include "nvfp4_gemv_config.h"
#include "nvfp4_launch.h"
#include "sm90_nvfp4_gemv_balanced.cuh"
#include "sm90_nvfp4_gemv_block_cap.cuh"
#include "sm90_nvfp4_gemv_device.cuh"
#include "sm90_nvfp4_gemv_staged_x.cuh"

namespace lowbit::cuda {

namespace {

using namespace nvfp4_gemv;

constexpr char kDenseOp[] = "nvfp4_gemv";
constexpr char kSparseOp[] = "nvfp4_sparse24_gemv";

// One pass over a tile for up to 8 * kTokenGroups tokens, partial sums reduced over the warps
// that split K, stored by the first of them. kQuadX: 2:4 activations in 16-byte loads
// (load_activations). kAhead: a chunk's activations are requested right after the previous
// chunk's multiply, into the same registers, so their latency overlaps the weight refill; else
// right before their own multiply.
template <bool kSparse, int kWarpsPerTile, int kUnroll, int kTokenGroups, bool kQuadX = false,
          bool kAhead = kTokenGroups == 1>
__device__ __forceinline__ void tile_pass(const Nvfp4GemvParams& p, const Tables& tables,
                                          float (*partial)[8][32], const TileAddress& at,
                                          std::int64_t tile, bool tile_ok, const SlotRows& s) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4;
  const int k_warp = warp % kWarpsPerTile;
  const std::uint16_t* x_row[kTokenGroups];
#pragma unroll
  for (int n = 0; n < kTokenGroups; ++n) x_row[n] = x_row_of<kSparse, kQuadX>(p, s, n * 8 + group);
  float acc[kTokenGroups][4] = {};
  const int chunks = static_cast<int>(p.cols / 64);
  // This warp's chunks are k_warp, k_warp + kWarpsPerTile, ...
  const int my_chunks = (chunks - k_warp + kWarpsPerTile - 1) / kWarpsPerTile;
  // No tokens at all (every output NaN): x may hold no row 0 to read.
  if (tile_ok && s.expert_ok && my_chunks > 0 && p.tokens > 0) {
    // Window of kUnroll chunks, so the stream does not drain while the warp computes. The
    // cursors sit at the chunk of window slot 0 of the current round.
    // One token group with a window of 8: two halves in turn (start_half); chunk i
    // uses slot i % kUnroll. Otherwise a rolling window: each slot refilled right after use.
    // NOTE: in the rolling window ptxas issues a round's refills together at its end, on one
    // scoreboard, and the next round waits for all of them (a third of gate_up's warp time at
    // M = 1 on H200); the halves cut gate_up M = 1 by 5-6% (docs/perf/nvfp4_gemv.md).
    constexpr bool kHalves = kTokenGroups == 1 && kUnroll == 8;
    constexpr int kHalf = kUnroll / 2;
    TileAddress cursor = at;
    cursor.advance<kSparse>(k_warp);
    const std::uint16_t* x_cursor[kTokenGroups];
#pragma unroll
    for (int n = 0; n < kTokenGroups; ++n) x_cursor[n] = x_row[n] + k_warp * 64;
    ChunkWeights<kSparse> w[kUnroll];
#pragma unroll
    for (int u = 0; u < (kHalves ? kHalf : kUnroll); ++u) {
      if (u < my_chunks) w[u] = load_chunk<kSparse>(cursor, u * kWarpsPerTile);
    }
    // (Loading 2 or 4 chunks ahead measured at most 4% faster on H200 before the decode cut, for
    // 8 more registers each.)
    std::uint32_t x[kTokenGroups][8];
    if constexpr (kAhead) load_activations<kSparse, kQuadX>(x_cursor, 0, x);
    auto next_round = [&] {
      cursor.advance<kSparse>(kUnroll * kWarpsPerTile);
#pragma unroll
      for (int n = 0; n < kTokenGroups; ++n) x_cursor[n] += kUnroll * kWarpsPerTile * 64;
    };
    if constexpr (kHalves) {
      // Half h of the round at chunk `first`: requests the next chunks of the other half.
      auto half = [&](int h, int first, bool check) {
        std::uint32_t step0[4];
        start_half(w[h * kHalf], tables, step0, [&] {
#pragma unroll
          for (int v = 0; v < kHalf; ++v) {
            const int chunk = (h + 1) * kHalf + v;
            if (!check || first + chunk < my_chunks) {
              w[(1 - h) * kHalf + v] = load_chunk<kSparse>(cursor, chunk * kWarpsPerTile);
            }
          }
        });
#pragma unroll
        for (int v = 0; v < kHalf; ++v) {
          const int u = h * kHalf + v, i = first + u;
          if (check && i >= my_chunks) break;
          if (v == 0) {
            multiply_chunk(step0, w[u], tables, x, acc);
          } else {
            multiply_chunk(w[u], tables, x, acc);
          }
          if (!check || i + 1 < my_chunks) {
            load_activations<kSparse, kQuadX>(x_cursor, (u + 1) * kWarpsPerTile, x);
          }
        }
      };
      // Steady state: every request is in range, so no per-chunk checks; then the last chunks.
      int first = 0;
      for (; first + kUnroll + kHalf <= my_chunks; first += kUnroll) {
        half(0, first, false);
        half(1, first, false);
        next_round();
      }
      for (; first < my_chunks; first += kUnroll) {
        half(0, first, true);
        if (first + kHalf < my_chunks) half(1, first, true);
        next_round();
      }
    } else {
      // Chunk i = first + u uses window slot u, then refills it with chunk i + kUnroll (x with
      // chunk i + 1): no register copies of the slots.
      auto chunk_step = [&](int u, int i, bool check_refills) {
        if constexpr (!kAhead) load_activations<kSparse, kQuadX>(x_cursor, u * kWarpsPerTile, x);
        multiply_chunk(w[u], tables, x, acc);
        if (!check_refills || i + kUnroll < my_chunks) {
          w[u] = load_chunk<kSparse>(cursor, (u + kUnroll) * kWarpsPerTile);
        }
        if (kAhead && (!check_refills || i + 1 < my_chunks)) {
          load_activations<kSparse, kQuadX>(x_cursor, (u + 1) * kWarpsPerTile, x);
        }
      };
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
#pragma unroll
  for (int n = 0; n < kTokenGroups; ++n) store_outputs(p, acc[n], s, tile, n * 8);
}

// Tokens from which a 2:4 pass loads its activations 16 bytes at a time: at 2 a warp's eight
// 4-byte loads touch 2 rows, about what the swaps cost in instructions. Only in the per-item
// window of 8, the kernel the heuristic gives 2:4 launches of several tokens a slot whose rows
// do not fit the staging: the window of 4's 80 registers spilled 48 bytes with the second path.
constexpr int kQuadXTokens = 3;
template <bool kSparse, int kWarpsPerTile, int kUnroll>
inline constexpr bool kQuadXIn = kSparse && kWarpsPerTile == 1 && kUnroll == 8;

// One (slot, tile) work item: every pass over the slot's tokens. With K split over warps, the
// warps of a block share the item (the passes synchronize the block).
template <bool kSparse, int kWarpsPerTile, int kUnroll>
__device__ __forceinline__ void slot_tile(const Nvfp4GemvParams& p, const Tables& tables,
                                          float (*partial)[8][32], std::int64_t slot,
                                          std::int64_t tile) {
  const SlotInfo info = slot_info(p, slot);
  const int expert = info.expert, begin = info.begin;
  if (expert < 0) return;  // idle slot (uniform over a K-split block)
  constexpr bool kQuadX = kQuadXIn<kSparse, kWarpsPerTile, kUnroll>;
  // The kernel with 16-byte activation loads keeps the slot's end in shared memory across the
  // passes (one entry a thread, as the per-item kernels keep their next item): in a register
  // ptxas spilled it around the two-token-group pass. The other kernels keep it in a register:
  // in shared memory the dense window of 4 spilled other values instead.
  __shared__ int end_in_shared[kThreads];
  if constexpr (kQuadX) end_in_shared[threadIdx.x] = info.end;
  const int end_in_register = info.end;
  auto slot_end = [&] { return kQuadX ? end_in_shared[threadIdx.x] : end_in_register; };
  const bool tile_ok = tile < p.rows / 16;
  const bool expert_ok = expert < p.experts;
  const TileAddress at = tile_address<kSparse>(p, expert_ok ? expert : 0, tile);
  // Two token groups load their activations ahead in the window-of-8 kernels (128 registers,
  // no spills); in the window of 4 (80) that spilled. NVIDIA H200, fifty-fourth session, every
  // token on the same experts, on a stream / under graph + PDL: DeepSeek-V3 gate_up 2:4 at
  // 12-16 tokens -14..-16% / -16..-18%, dense -4..-5%; Qwen3-30B-A3B down at 9-16 -2..-6%.
  constexpr bool kTwoGroupsAhead = kWarpsPerTile == 1 && kUnroll == 8;
  for (int first = begin; first < slot_end(); first += 16) {
    const SlotRows s{expert, expert_ok, first, min(16, slot_end() - first)};
    // 2:4 passes of 3 or more tokens load their activations 16 bytes at a time (kQuadX).
    if (s.count > 8) {
      tile_pass<kSparse, kWarpsPerTile, 4, 2, kQuadX, kTwoGroupsAhead>(p, tables, partial, at, tile,
                                                                       tile_ok, s);
    } else if (kQuadX && s.count >= kQuadXTokens) {
      tile_pass<kSparse, kWarpsPerTile, kUnroll, 1, true>(p, tables, partial, at, tile, tile_ok, s);
    } else {
      tile_pass<kSparse, kWarpsPerTile, kUnroll, 1>(p, tables, partial, at, tile, tile_ok, s);
    }
  }
}

// NOTE: the register cap sets how many warps are in flight per SM. A window of 8 chunks fits 128
// registers (4 blocks, 16 warps); a window of 4 fits 80 (6 blocks, 24 warps; no spills, and 6
// measured up to 27% faster than 4 on launches of many experts); the K-split variants hold
// partial sums too and get 3 blocks (the launch pads shared memory where registers would fit 4).
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
  // Under programmatic dependent launch the block starts, and fills its tables, while the
  // previous kernel finishes; the routing lists say which weights to read, so nothing is read
  // before it has (common/kernel_launch.cuh).
  allow_dependent_launch();
  wait_for_prerequisite_grids();
  const int warp = threadIdx.x / 32;
  if constexpr (kWarpsPerTile == 1) {
    const std::int64_t tiles = p.rows / 16, items = tiles * p.slots;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kGemvWarpsPerBlock;
    // The thread's next item waits in shared memory, not in a register across the item: there
    // ptxas spilled it to local memory (the 80- and 128-register caps). One entry a thread, so
    // no lane overwrites a value another has yet to read.
    __shared__ std::int64_t next_item[kThreads];
    next_item[threadIdx.x] = static_cast<std::int64_t>(blockIdx.x) * kGemvWarpsPerBlock + warp;
    for (;;) {
      const std::int64_t item = next_item[threadIdx.x];
      if (item >= items) break;
      next_item[threadIdx.x] = item + stride;
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
  auto launch_with = [&](auto kernel, dim3 grid, std::size_t shared_bytes = 0,
                         int threads = kThreads) {
    KernelLaunch shape;
    shape.grid = grid;
    shape.threads = threads;
    shape.shared_bytes = shared_bytes;
    shape.dependent = p.dependent_launch;
    check_cuda(launch_kernel(kernel, p, shape, stream), op, "kernel launch");
  };
  auto run = [&](auto kernel, int warps_per_tile, int blocks_per_sm,
                 std::size_t shared_bytes = 0) {
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
    launch_with(kernel, grid, shared_bytes);
  };
  if (config.balanced && balanced_stream_fits(p, config.unroll)) {
    const int sms = current_device_sm_count(op);
    const std::int64_t items = tiles * p.slots;
    if constexpr (kSparse) {
      if (config.unroll == 8 && config.stage_x &&
          staged_x_fits(p.tokens, p.cols, config.wide)) {
        const auto rows_bytes = static_cast<std::size_t>(p.tokens * staged_x_row_bytes(p.cols));
        if (config.wide) {
          // One block per SM: its registers leave no room for a second (no padding needed). Its
          // static shared memory (the warps' partial sums, 27 KB) leaves 21 KB of the 48 KB a
          // block gets without opting in, so launch_kernel opts it in to the rows' bytes.
          // NVIDIA H200, forty-ninth session: on as few blocks as the most items need (2048
          // items of DeepSeek-V3 gate_up at M = 1 on 128 blocks of 16), 1.1-1.3% faster on a stream.
          constexpr auto kernel = nvfp4_gemv_balanced_kernel<true, 8, true, 1, kWideBalancedWarps>;
          launch_with(kernel, dim3(nvfp4_balanced_grid(items, 1, sms)), rows_bytes,
                      kWideBalancedWarps * 32);
          check_launch(op);
          return;
        }
        if (nvfp4_staged_pairs_pay(p.rows, p.cols, p.slots, p.output_rows, p.dependent_launch,
                                   sms)) {
          constexpr auto kernel =
              nvfp4_gemv_balanced_kernel<true, 8, true, kPairBlocksPerSm, kStagedPairWarps>;
          launch_with(kernel, dim3(nvfp4_balanced_grid(items, kPairBlocksPerSm, sms)),
                      blocks_per_sm_shared_bytes<kernel>(kPairBlocksPerSm, rows_bytes, op),
                      kStagedPairWarps * 32);
          check_launch(op);
          return;
        }
        auto launch_staged = [&](auto blocks_per_sm) {
          constexpr int kBlocks = decltype(blocks_per_sm)::value;
          constexpr auto kernel = nvfp4_gemv_balanced_kernel<true, 8, true, kBlocks>;
          launch_with(kernel, dim3(kBlocks * sms),
                      blocks_per_sm_shared_bytes<kernel>(kBlocks, rows_bytes, op));
        };
        if (p.dependent_launch) {
          launch_staged(std::integral_constant<int, kBalancedBlocksPerSm<8>>{});
        } else {
          launch_staged(std::integral_constant<int, kStagedBlocksPerSmOnStream>{});
        }
        check_launch(op);
        return;
      }
    }
    if (config.unroll == 8) {
      if constexpr (kSparse) {
        launch_with(nvfp4_gemv_balanced_kernel<true, 8, false>, dim3(kBalancedBlocksPerSm<8> * sms));
      } else {
        launch_with(nvfp4_gemv_balanced_kernel<false, 8, false, kPairBlocksPerSm, kDensePairWarps>,
                    dim3(nvfp4_balanced_grid(items, kPairBlocksPerSm, sms)), 0,
                    kDensePairWarps * 32);
      }
    } else {
      launch_with(nvfp4_gemv_balanced_kernel<kSparse, 4, false>, dim3(kBalancedBlocksPerSm<4> * sms));
    }
    check_launch(op);
    return;
  }
  const int key = config.warps_per_tile * 10 + config.unroll;
  switch (key) {
    case 14: run(nvfp4_gemv_kernel<kSparse, 1, 4>, 1, kBlocksPerSm<1, 4>); break;
    case 18: run(nvfp4_gemv_kernel<kSparse, 1, 8>, 1, kBlocksPerSm<1, 8>); break;
    // The K-split kernels are shaped for kBlocksPerSm blocks per SM; the 2:4 ones compile to 128
    // registers, which would let a fourth in (sm90_nvfp4_gemv_block_cap.cuh). NVIDIA H200,
    // fiftieth session: Qwen3-30B-A3B gate_up at M = 1, 2:4 (2, 4) under graph + PDL went from
    // 6.62 to 6.93 us when a change of its decode took it from 130 registers to 128, and back to
    // 6.66 us with the cap.
    case 24: {
      constexpr auto kernel = nvfp4_gemv_kernel<kSparse, 2, 4>;
      constexpr int kBlocks = kBlocksPerSm<2, 4>;
      run(kernel, 2, kBlocks, cap_blocks_shared_bytes<kernel>(kBlocks, kThreads, op));
      break;
    }
    case 44: {
      constexpr auto kernel = nvfp4_gemv_kernel<kSparse, 4, 4>;
      constexpr int kBlocks = kBlocksPerSm<4, 4>;
      run(kernel, 4, kBlocks, cap_blocks_shared_bytes<kernel>(kBlocks, kThreads, op));
      break;
    }
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
      choose_nvfp4_gemv_config(p.rows, p.cols, p.slots, p.output_rows, p.tokens, sparse);
  if (sparse) {
    launch<true>(p, config, stream);
  } else {
    launch<false>(p, config, stream);
  }
}

}  // namespace lowbit::cuda
