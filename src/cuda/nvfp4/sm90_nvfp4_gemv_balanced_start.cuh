// Where each warp of the balanced NVFP4 GEMV kernel starts (sm90_nvfp4_gemv_balanced.cuh):
// the unit holding the first round of its share of its block's stream, and that share.
// Included by sm90_nvfp4_gemv_balanced.cuh only.
//
// The start runs before a warp's first weight request, in every warp of an SM at once, so its
// instructions queue at the schedulers. A per-warp timeline of DeepSeek down at M = 1 (NVIDIA
// H200, thirty-ninth session; docs/perf/nvfp4_gemv.md, "The balanced kernel's start") had the
// first requests ~1.5 us after the routing could be read: arithmetic before the routing read,
// its round trip, ~0.9 us of arithmetic on it (the block's slots in turn, then a search for
// the warp's unit), and a scale-table fill. So the kernel reads the routing first, and blocks
// whose slots each have one pass (decode) take their start from the item range alone.

#pragma once

#include <cstdint>

#include "sm90_nvfp4_gemv_device.cuh"

namespace lowbit::cuda::nvfp4_gemv {

// Position of a warp in its block's unit stream (32-bit: the launch bounds the stream's size).
struct UnitWalker {
  int slot, tile, pass;
  SlotInfo info;

  __device__ __forceinline__ void next(const Nvfp4GemvParams& p) {
    if (++pass < info.passes) return;
    pass = 0;
    if (++tile < p.rows / 16) return;
    tile = 0;
    do info = slot_info(p, ++slot);
    while (info.passes == 0);
  }
  __device__ __forceinline__ SlotRows rows(const Nvfp4GemvParams& p) const {
    const int first = info.begin + 8 * pass;
    return SlotRows{info.expert, info.expert < p.experts, first, min(8, info.end - first)};
  }
};

// A lane's slot in its block's run of items: the slot's routing, the block's first item in it,
// and the block's rounds in it and in the lanes up to this one (an inclusive warp scan).
struct SlotShare {
  SlotInfo info;
  int first_item;
  int rounds, rounds_through;
};

// The routing of slot `slot` (read_slot) and the slot's share of items [item_begin, item_end),
// turned into rounds and scanned over the warp (share_rounds): split so that the reads come
// first and everything that does not depend on them runs while they are in flight.
__device__ __forceinline__ SlotInfo read_slot(const Nvfp4GemvParams& p, int slot) {
  return slot < p.slots ? read_slot_info(p, slot) : SlotInfo{-1, 0, 0, 0};
}

__device__ __forceinline__ SlotShare share_rounds(const SlotInfo& read, int slot, int item_begin,
                                                  int item_end, int tiles, int rounds_per_unit) {
  const std::int64_t slot_begin = std::int64_t{slot} * tiles;
  SlotShare share;
  share.first_item = static_cast<int>(max(std::int64_t{item_begin}, slot_begin));
  const int items =
      max(static_cast<int>(min(std::int64_t{item_end}, slot_begin + tiles) - share.first_item), 0);
  share.info = with_passes(read);
  share.rounds = items * share.info.passes * rounds_per_unit;
  share.rounds_through = share.rounds;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int below = __shfl_up_sync(0xffffffffu, share.rounds_through, d);
    if (lane >= d) share.rounds_through += below;
  }
  return share;
}

// The token list of a launch of at most 32 routed rows, read with the routing (lane r holds row
// r's token): the first activation rows then cost a shuffle, not a read of the list between the
// routing and the first weight requests.
struct RowTokens {
  int lane_token;

  __device__ __forceinline__ static RowTokens read(const Nvfp4GemvParams& p) {
    const int lane = threadIdx.x % 32;
    return RowTokens{p.output_rows <= 32 && lane < p.output_rows ? token_of(p, lane) : -1};
  }
  // The token of output column `column` of a unit (absent: -1).
  __device__ __forceinline__ int token(const Nvfp4GemvParams& p, const SlotRows& s, int column) const {
    if (p.output_rows > 32) return column < s.count ? token_of(p, s.first + column) : -1;
    const int token = __shfl_sync(0xffffffffu, lane_token, (s.first + column) & 31);
    return column < s.count ? token : -1;
  }
  // The lane's activation row for output column `column` of a unit (absent tokens: row 0).
  template <bool kSparse>
  __device__ __forceinline__ const std::uint16_t* x_row(const Nvfp4GemvParams& p, const SlotRows& s,
                                                        int column) const {
    if (p.output_rows > 32) return x_row_of<kSparse>(p, s, column);
    const int token = __shfl_sync(0xffffffffu, lane_token, (s.first + column) & 31);
    return x_row_of_token<kSparse>(p, column < s.count ? token : -1);
  }
  // store_outputs for one token group, the tokens from the lanes: the balanced kernel stores at
  // every unit's end, where a read of the token list was a round trip per stored value (DeepSeek
  // down at M = 1 on an NVIDIA H200: dense 0.8-1.0% and 2:4 1.5-1.7% faster without them,
  // forty-first session).
  __device__ __forceinline__ void store(const Nvfp4GemvParams& p, const float (&acc)[4],
                                        const SlotRows& s, std::int64_t tile) const {
    if (p.output_rows > 32) {
      store_outputs(p, acc, s, tile, 0);
      return;
    }
    const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
    const int tokens[2] = {__shfl_sync(0xffffffffu, lane_token, (s.first + 2 * quad) & 31),
                           __shfl_sync(0xffffffffu, lane_token, (s.first + 2 * quad + 1) & 31)};
    const float global = output_scale(p, s);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int column = 2 * quad + (i & 1);
      if (column >= s.count) continue;
      store_output(p, acc[i], global, s, tile * 16 + group + (i >= 2 ? 8 : 0), column,
                   tokens[i & 1]);
    }
  }
};

// a / b for 0 <= a, 0 < b (unsigned: fewer instructions than the signed division).
__device__ __forceinline__ int quotient(int a, int b) {
  return static_cast<int>(static_cast<unsigned>(a) / static_cast<unsigned>(b));
}

// A warp's share [round_begin, round_end) of its block's rounds, the unit holding round_begin
// and the round k within it.
struct WarpStart {
  int round_begin, round_end, k;
  UnitWalker walk;
};

// What a warp's start needs that the routing does not decide: the block's item range, its
// slots, and the warp's share if every slot has one pass. Computed before the kernel waits for
// the previous one (under programmatic dependent launch, while that one finishes).
struct BlockItems {
  int tiles, rounds_per_unit;
  int item_begin, item_end, slot_lo, slot_hi;
  int guess_begin, guess_end, guess_unit, guess_slot;
};

template <int kUnroll, int kWarps = kGemvWarpsPerBlock>
__device__ __forceinline__ BlockItems block_items(const Nvfp4GemvParams& p) {
  const int warp = threadIdx.x / 32;
  BlockItems b;
  // 32-bit positions (balanced_stream_fits bounds every count below 2^31; 64-bit divisions
  // made the start ~350 instructions a warp longer: ncu, thirty-eighth session).
  b.tiles = static_cast<int>(p.rows / 16);
  const int items = b.tiles * static_cast<int>(p.slots);
  b.rounds_per_unit = static_cast<int>(p.cols / 64 / kUnroll);
  const int blocks = static_cast<int>(gridDim.x), block = static_cast<int>(blockIdx.x);
  const int per_block = quotient(items, blocks), extra = items - per_block * blocks;
  b.item_begin = block * per_block + min(block, extra);
  b.item_end = b.item_begin + per_block + (block < extra ? 1 : 0);
  b.slot_lo = quotient(b.item_begin, b.tiles);
  b.slot_hi = quotient(max(b.item_end - 1, 0), b.tiles);
  // Every slot of the block with one pass (at most 8 tokens; decode): the block's rounds are
  // its items' in order, so the warp's first unit follows from the item range alone, and only
  // its expert comes from the routing (checked once it is in; otherwise the general search).
  const int guess_total = (b.item_end - b.item_begin) * b.rounds_per_unit;
  b.guess_begin = static_cast<int>(std::int64_t{warp} * guess_total / kWarps);
  b.guess_end = static_cast<int>(std::int64_t{warp + 1} * guess_total / kWarps);
  b.guess_unit = quotient(b.guess_begin, b.rounds_per_unit);
  b.guess_slot = quotient(b.item_begin + b.guess_unit, b.tiles);
  return b;
}

// `table_info`: slot `lane`'s routing (read_slot) when the launch has at most 32 slots.
template <int kWarps = kGemvWarpsPerBlock>
__device__ __forceinline__ WarpStart warp_start(const Nvfp4GemvParams& p, const BlockItems& block,
                                                const SlotInfo& table_info) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool whole_table = p.slots <= 32;
  const int tiles = block.tiles, rounds_per_unit = block.rounds_per_unit;
  const int item_begin = block.item_begin, item_end = block.item_end;
  const int slot_lo = block.slot_lo, slot_hi = block.slot_hi;
  const int guess_begin = block.guess_begin, guess_end = block.guess_end;
  const int guess_unit = block.guess_unit, guess_slot = block.guess_slot;
  const int first_slot = whole_table ? 0 : slot_lo;
  const int batches =
      whole_table ? 1 : (item_end > item_begin ? (slot_hi - first_slot) / 32 + 1 : 0);
  const bool one_pass =
      lane < slot_lo || lane > slot_hi ||
      (table_info.expert >= 0 && static_cast<unsigned>(table_info.end - table_info.begin - 1) < 8u);
  WarpStart start{0, 0, 0, UnitWalker{}};
  int &round_begin = start.round_begin, &round_end = start.round_end, &k = start.k;
  UnitWalker& walk = start.walk;
  if (whole_table && __all_sync(0xffffffffu, one_pass)) {
    round_begin = guess_begin, round_end = guess_end;
    k = guess_begin - guess_unit * rounds_per_unit;
    const SlotInfo info{__shfl_sync(0xffffffffu, table_info.expert, guess_slot),
                        __shfl_sync(0xffffffffu, table_info.begin, guess_slot),
                        __shfl_sync(0xffffffffu, table_info.end, guess_slot), 1};
    walk = UnitWalker{guess_slot, item_begin + guess_unit - guess_slot * tiles, 0, info};
  } else {
    auto batch = [&](int b) {
      const int slot = first_slot + 32 * b + lane;
      return share_rounds(whole_table ? table_info : read_slot(p, slot), slot, item_begin,
                          item_end, tiles, rounds_per_unit);
    };
    const SlotShare first_batch = batch(0);
    int total = 0;
    for (int b = 0; b < batches; ++b) {
      total += __shfl_sync(0xffffffffu, (b == 0 ? first_batch : batch(b)).rounds_through, 31);
    }
    round_begin = static_cast<int>(std::int64_t{warp} * total / kWarps);
    round_end = static_cast<int>(std::int64_t{warp + 1} * total / kWarps);
    // The unit holding round_begin (in the slot whose rounds cover it), and the round k in it.
    int position = 0;
    for (int b = 0; b < batches && round_begin < round_end; ++b) {
      const SlotShare share = b == 0 ? first_batch : batch(b);
      const int offset = round_begin - position;
      const int below = share.rounds_through - share.rounds;  // the rounds of earlier lanes
      const unsigned holder =
          __ballot_sync(0xffffffffu, offset < share.rounds_through && offset >= below);
      if (holder == 0) {
        position += __shfl_sync(0xffffffffu, share.rounds_through, 31);
        continue;
      }
      const int from = __ffs(holder) - 1;
      const SlotInfo info{__shfl_sync(0xffffffffu, share.info.expert, from),
                          __shfl_sync(0xffffffffu, share.info.begin, from),
                          __shfl_sync(0xffffffffu, share.info.end, from),
                          __shfl_sync(0xffffffffu, share.info.passes, from)};
      const int item = __shfl_sync(0xffffffffu, share.first_item, from);
      const int in_slot = offset - __shfl_sync(0xffffffffu, below, from);
      const int unit = in_slot / rounds_per_unit;
      k = in_slot - unit * rounds_per_unit;
      const int tile_units = unit / info.passes;
      walk = UnitWalker{first_slot + 32 * b + from, item % tiles + tile_units,
                        unit - tile_units * info.passes, info};
      break;
    }
  }
  return start;
}

}  // namespace lowbit::cuda::nvfp4_gemv
