// The balanced NVFP4 GEMV kernel (one warp per 16-row tile, Nvfp4GemvConfig::balanced).
// Included by sm90_nvfp4_gemv.cu only.
//
// A unit is one pass of up to 8 tokens over a (slot, tile) item: rounds_per_unit rounds of
// kUnroll chunks. The blocks own consecutive runs of floor(I / B) items (the first I % B blocks
// one more); a block's units, in item order and pass order within an item, form a stream of
// rounds that its warps (4; 8 or 12 in 2 blocks per SM; kWideBalancedWarps in one) split into equal
// contiguous shares. A warp runs its share with one window across units (the next unit's first
// half-round is requested while the current unit's last half is computed), so a warp waits for
// memory once, not once per item, and no warp gets a whole item more than another (DeepSeek
// down at M = 1: 3584 items of 32 chunks on 2112 warps left a third of the warps idle for the
// second half). A unit split between warps is summed in shared memory in warp order by the warp
// that ran its last round. Where the next unit is the same slot's next tile, stored right after
// this one, the addresses just run on.

#pragma once

#include <algorithm>
#include <cstdint>

#include "../common/kernel_launch.cuh"
#include "sm90_nvfp4_gemv_balanced_start.cuh"
#include "sm90_nvfp4_gemv_device.cuh"
#include "sm90_nvfp4_gemv_early_prefetch.cuh"
#include "sm90_nvfp4_gemv_staged_x.cuh"

namespace lowbit::cuda::nvfp4_gemv {

// What a warp reads and writes only when a unit ends, kept out of the registers the window needs.
struct StreamState {
  UnitWalker walk;  // the unit being computed, then (from its last round on) the next one
  SlotRows rows;    // the unit being computed
  int tile;
  int partial_unit;  // unit whose first rounds this warp left in `partial` (-1: none)
  int owned_unit;    // unit whose last rounds this warp left in `owned` (-1: none)
  SlotRows owned_rows;
  int owned_tile;
};

// How many units after the walker's are the next tiles of its slot and pass: the rest of the
// slot's tiles when the slot has one pass (at most 8 tokens), else none (the next unit is the
// next pass of the same tile).
__device__ __forceinline__ int tiles_after(const Nvfp4GemvParams& p, const UnitWalker& walk) {
  return walk.info.passes == 1 ? static_cast<int>(p.rows / 16) - 1 - walk.tile : 0;
}

// The lane's ldmatrix address of a unit's staged activation rows (sm90_nvfp4_gemv_staged_x.cuh).
__device__ __forceinline__ unsigned staged_x_of(const Nvfp4GemvParams& p, const RowTokens& row_tokens,
                                                const SlotRows& rows, const std::uint8_t* staged,
                                                const StagedRows& staged_rows) {
  return staged_x_row(p, staged, staged_rows, row_tokens.token(p, rows, threadIdx.x % 8));
}

template <bool kSparse, int kUnroll, bool kStagedX, int kWarps = kGemvWarpsPerBlock>
__device__ __forceinline__ void balanced_rounds(const Nvfp4GemvParams& p, Tables& tables,
                                                const BlockItems& items, const SlotInfo& table_info,
                                                const RowTokens& row_tokens, std::uint8_t* staged) {
  __shared__ StreamState state[kWarps];
  __shared__ float partial[kWarps][4][32];
  __shared__ float owned[kWarps][4][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  StreamState& st = state[warp];
  const int rounds_per_unit = items.rounds_per_unit;
  const WarpStart start = warp_start<kWarps>(p, items, table_info);
  const int round_begin = start.round_begin, round_end = start.round_end;
  int k = start.k;
  // The first weight requests, then what can wait for them: the scale table's fill (on a stream;
  // under PDL the kernel filled it before its wait) and the block's barrier.
  const bool works = round_begin < round_end;
  // Two window halves in turn (start_half), for either window: the first half of a round
  // requests the round's second half, the second half the next round's first.
  constexpr int kHalf = kUnroll / 2;
  ChunkWeights<kSparse> w[kUnroll];
  const SlotRows first_rows = start.walk.rows(p);
  TileAddress cursor{};
  if (works) {
    const int expert = first_rows.expert_ok ? first_rows.expert : 0;
    cursor = tile_address<kSparse>(p, expert, start.walk.tile);
    cursor.advance<kSparse>(k * kUnroll);
#pragma unroll
    for (int u = 0; u < kHalf; ++u) w[u] = load_chunk<kSparse>(cursor, u);
  }
  if (!p.dependent_launch) fill_tables(tables);
  StagedRows window{};
  if constexpr (kStagedX) {
    window = staged_rows(p, items, table_info, row_tokens);
    stage_x(p, staged, window);
    wait_staged_x();
  }
  if (lane == 0) st.partial_unit = -1, st.owned_unit = -1;
  __syncthreads();
  if (works) {
    bool started_here = k == 0;
    // Global rows (x_cursor) or, kStagedX, the staged rows (x_staged, bytes): at the round.
    const std::uint16_t* x_cursor[1] = {nullptr};
    unsigned x_staged = 0;
    if constexpr (kStagedX) {
      x_staged = staged_x_of(p, row_tokens, first_rows, staged, window) + k * kUnroll * 128;
    } else {
      x_cursor[0] = row_tokens.x_row<kSparse>(p, first_rows, lane / 4);
      x_cursor[0] += k * kUnroll * 64;
    }
    auto load_x = [&](const std::uint16_t* const (&rows)[1], unsigned staged_row, int chunk,
                      std::uint32_t(&x)[1][8]) {
      if constexpr (kStagedX) {
        load_staged_activations(staged_row, chunk, x);
      } else {
        load_activations<kSparse>(rows, chunk, x);
      }
    };
    if (lane == 0) st.walk = start.walk, st.rows = first_rows, st.tile = start.walk.tile;
    __syncwarp();
    std::uint32_t x[1][8];
    load_x(x_cursor, x_staged, 0, x);
    float acc[1][4] = {};
    // Units left in this slot and pass after the current one, each the next tile (one pass).
    int next_tiles = tiles_after(p, start.walk);
    for (int round = round_begin; round < round_end; ++round) {
      const bool more = round + 1 < round_end;
      const bool unit_ends = k + 1 == rounds_per_unit;
      // Where the next round is: further along this tile, or the next unit's first round.
      TileAddress next = cursor;
      next.advance<kSparse>(kUnroll);
      const std::uint16_t* x_next[1] = {nullptr};
      unsigned x_staged_next = x_staged + kUnroll * 128;
      if constexpr (!kStagedX) x_next[0] = x_cursor[0] + kUnroll * 64;
      // The next unit reads the same token rows as this one: from their first chunk again.
      auto same_rows_next = [&] {
        if constexpr (kStagedX) {
          x_staged_next = x_staged - k * kUnroll * 128;
        } else {
          x_next[0] = x_cursor[0] - k * kUnroll * 64;
        }
      };
      if (unit_ends && more && next_tiles > 0) {
        // The next unit is this slot's and pass's next tile, which the layout stores right after
        // this one: `next` already points at it, and the token rows stay.
        --next_tiles;
        same_rows_next();
        __syncwarp();
        if (lane == 0) ++st.walk.tile;
      } else if (unit_ends && more) {
        UnitWalker walk = st.walk;
        walk.next(p);
        const SlotRows rows = walk.rows(p);
        next = tile_address<kSparse>(p, rows.expert_ok ? rows.expert : 0, walk.tile);
        // Units of one slot and pass share their token rows, so only a new slot or pass reads
        // the token list (its round trip held up the next round's start at every unit).
        if (walk.slot == st.walk.slot && walk.pass == st.walk.pass) {
          same_rows_next();
        } else if constexpr (kStagedX) {
          x_staged_next = staged_x_of(p, row_tokens, rows, staged, window);
        } else {
          x_next[0] = row_tokens.x_row<kSparse>(p, rows, lane / 4);
        }
        __syncwarp();
        if (lane == 0) st.walk = walk;
        next_tiles = tiles_after(p, walk);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        std::uint32_t step0[4];
        start_half(w[h * kHalf], tables, step0, [&] {
#pragma unroll
          for (int v = 0; v < kHalf; ++v) {
            if (h == 0) {
              w[kHalf + v] = load_chunk<kSparse>(cursor, kHalf + v);
            } else if (more) {
              w[v] = load_chunk<kSparse>(next, v);
            }
          }
        });
#pragma unroll
        for (int v = 0; v < kHalf; ++v) {
          const int u = h * kHalf + v;
          if (v == 0) {
            multiply_chunk(step0, w[u], tables, x, acc);
          } else {
            multiply_chunk(w[u], tables, x, acc);
          }
          if (u + 1 < kUnroll) {
            load_x(x_cursor, x_staged, u + 1, x);
          } else if (more) {
            load_x(x_next, x_staged_next, 0, x);
          }
        }
      }
      if (unit_ends || !more) {
        const int unit = round - k;
        __syncwarp();
        if (unit_ends && started_here) {
          row_tokens.store(p, acc[0], st.rows, st.tile);
        } else {  // shared with a neighbouring warp: summed after the block's barrier
          float (*slot)[32] = unit_ends ? owned[warp] : partial[warp];
#pragma unroll
          for (int i = 0; i < 4; ++i) slot[i][lane] = acc[0][i];
          if (lane == 0) {
            if (unit_ends) {
              st.owned_unit = unit, st.owned_rows = st.rows, st.owned_tile = st.tile;
            } else {
              st.partial_unit = unit;
            }
          }
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[0][i] = 0.0f;
        if (unit_ends && more) {
          __syncwarp();
          if (lane == 0) st.rows = st.walk.rows(p), st.tile = st.walk.tile;
        }
        __syncwarp();
      }
      k = unit_ends ? 0 : k + 1;
      started_here = started_here || unit_ends;
      cursor = next;
      x_cursor[0] = x_next[0];
      x_staged = x_staged_next;
    }
  }
  __syncthreads();
  const int unit = st.owned_unit;
  if (unit >= 0) {
    // Fixed order: this warp's rounds, then the earlier warps' from the nearest down.
    float sum[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) sum[i] = owned[warp][i][lane];
    for (int other = warp - 1; other >= 0; --other) {
      if (state[other].partial_unit != unit) {
        // Holds nothing for any unit (no rounds, or only units it stored itself): look past it.
        if (state[other].owned_unit == -1 && state[other].partial_unit == -1) continue;
        break;
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) sum[i] += partial[other][i][lane];
    }
    row_tokens.store(p, sum, st.owned_rows, st.owned_tile);
  }
}

// The window of 4 needs 80-89 registers here (5 blocks per SM), the window of 8 112-123 (4 blocks
// of 4 warps: the unstaged 2:4 kernel; the dense one runs 2 blocks of 8, kDensePairWarps).
template <int kUnroll>
inline constexpr int kBalancedBlocksPerSm = kUnroll == 8 ? 4 : 5;

// The staged 2:4 kernel (window of 8) fits 5 blocks per SM as well (80 registers, no spills).
// NVIDIA H200, forty-fifth session, DeepSeek-V3 down against 4 blocks, seven processes:
// - on a stream, M = 1: -2.8% (18.22-18.36 -> 17.68-17.86 us; 2:4 / dense 1.17 -> 1.21x);
//   M = 4: -2%;
// - under graph + PDL, M = 1: +2.3%. The launcher therefore runs it at 5 blocks per SM on a
//   stream and at 4 under PDL.
// Compiled for 5 blocks and run at 4, it measured as the 4-block build: the gain is the fifth
// block, not the schedule (docs/perf/nvfp4_gemv.md, "Five staged 2:4 blocks per SM").
// Forty-sixth session, the whole bench, three processes each: 2:4 down M = 1 18.37 -> 17.76 us
// on a stream (2:4 / dense 1.18-1.19 -> 1.21-1.22x), every other row within -1.8..+1.3%.
inline constexpr int kStagedBlocksPerSmOnStream = 5;

// The staged 2:4 kernel as one block of this many warps per SM (Nvfp4GemvConfig::wide; 78-80
// registers, no spills): every warp of an SM shares its items, where 4-warp blocks give whole
// items to blocks that the SM then runs unevenly (3 or 4 items a block on DeepSeek-V3 gate_up at
// M = 1). NVIDIA H200, forty-sixth session, DeepSeek-V3 gate_up at M = 1, 2:4, three processes
// (docs/perf/nvfp4_gemv.md, "One wide block per SM"):
// - per-item (1, 8) 31.32-31.47 us; 16 warps 30.95-31.11; 20 warps 30.82-30.93; 24 warps
//   30.49-30.57 (graph + PDL: 29.75-30.10 -> 29.00-29.03); 28 warps (72 registers) 30.64-30.77
//   on a stream, 28.74-28.78 under graph + PDL; 32 warps spill;
// - DeepSeek-V3 down (K = 2048, 4 rounds a unit) at M = 1: 24 warps 19.20-19.26 us against the
//   5-block kernel's 17.71-17.86, so the heuristic takes it for long rows only.
inline constexpr int kWideBalancedWarps = 24;

// Whether a launch can run balanced: whole rounds per tile, some token row to read for absent
// tokens, slots no more than routed rows (idle slots would unbalance the split by items), and
// stream positions within 32 bits (passes per slot <= its rows / 8 + 1).
inline bool balanced_stream_fits(const Nvfp4GemvParams& p, int unroll) {
  const std::int64_t chunks = p.cols / 64;
  const std::int64_t max_rounds = (p.rows / 16) * (p.slots + p.output_rows / 8 + 1) * (chunks / unroll);
  return chunks % unroll == 0 && p.tokens > 0 &&
         (p.expert_ids == nullptr || p.slots <= p.output_rows) && max_rounds < (std::int64_t{1} << 31);
}

// kStagedX (2:4 only): the token rows are copied to dynamic shared memory (tokens *
// staged_x_row_bytes).
template <bool kSparse, int kUnroll, bool kStagedX,
          int kBlocksPerSm = kBalancedBlocksPerSm<kUnroll>, int kWarps = kGemvWarpsPerBlock>
__global__ void __launch_bounds__(kWarps * 32, kBlocksPerSm)
    nvfp4_gemv_balanced_kernel(Nvfp4GemvParams p) {
  __shared__ Tables tables;
  allow_dependent_launch();
  // The block's items (block_items) do not depend on the routing. Under programmatic dependent
  // launch they and the scale table are computed before the wait, while the previous kernel
  // finishes; on a stream, after the routing reads are issued, while those are in flight. In
  // one place for both, ptxas put them between the wait and the reads: ~100 instructions a warp
  // before the routing's round trip (NVIDIA H200, forty-first session: DeepSeek down M = 1 about
  // 1% faster on a stream, 0.5% under graph + PDL; docs/perf/nvfp4_gemv.md). Under PDL the
  // warps' first rounds are asked of L2 then too (sm90_nvfp4_gemv_early_prefetch.cuh).
  BlockItems items{};
  if (p.dependent_launch) {
    items = block_items<kUnroll, kWarps>(p);
    if (p.prefetch_before_wait) prefetch_first_round<kSparse, kUnroll>(p, items);
    fill_tables(tables);
  }
  // The routing lists say which weights to read.
  wait_for_prerequisite_grids();
  const SlotInfo table_info =
      p.slots <= 32 ? read_slot(p, threadIdx.x % 32) : SlotInfo{-1, 0, 0, 0};
  const RowTokens row_tokens = RowTokens::read(p);
  if (!p.dependent_launch) items = block_items<kUnroll, kWarps>(p);
  if constexpr (kStagedX) {
    extern __shared__ __align__(16) std::uint8_t staged_x[];
    balanced_rounds<kSparse, kUnroll, kStagedX, kWarps>(p, tables, items, table_info, row_tokens,
                                                        staged_x);
  } else {
    balanced_rounds<kSparse, kUnroll, kStagedX, kWarps>(p, tables, items, table_info, row_tokens,
                                                        nullptr);
  }
}

}  // namespace lowbit::cuda::nvfp4_gemv
