// CUTLASS's sm90 TMA warp-specialized mainloop (the collective that CollectiveBuilder gives the
// pingpong and cooperative kernels with both operands loaded by TMA) as a programmatic dependent
// that requests its weights before it waits for the previous kernel.
//
// Why: compiled with CUTLASS_ENABLE_GDC_FOR_SM90, the kernel's producer warp waits
// (griddepcontrol.wait) before its first load of either operand, so under programmatic dependent
// launch only the launch and the prologue overlap the previous kernel, and the weights, which
// no earlier kernel writes, wait too. gemv_tma requests its first stages' weights before its
// wait and ran 1.2-2.1 us faster than these tiles under graph + PDL on 6144 x 4096 and 6144 x
// 3072 at 16 tokens (docs/perf/scaled_gemm.md, thirty-second session). Here the producer's
// first tile fills every stage with its weight tile, waits, then adds the activations to those
// stages; a stage's barrier expects both, so no consumer reads one before its activations land.
//
// Contract (common/kernel_launch.cuh). The instances are compiled without
// CUTLASS_ENABLE_GDC_FOR_SM90, so the kernel itself neither waits nor releases; this does both.
// - Wait: the producer warp, once, before its first activation load. Every other global
//   access of the kernel follows it: the consumers' epilogue (scales, bias, zero points, the
//   stores of D) runs on stages whose activations were loaded after the wait; the epilogue's
//   producer warp loads nothing (no C; the broadcast vectors are read by the consumers), nor
//   does the static persistent scheduler.
// - Release (griddepcontrol.launch_dependents): each consumer warpgroup after a tile's
//   mainloop. CUTLASS releases after a CTA's last tile, which is the same where a CTA has one
//   tile (decode sizes); and a pingpong consumer without a tile no longer releases at launch.
#pragma once

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "kernel_launch.cuh"

#ifdef CUTLASS_ENABLE_GDC_FOR_SM90
#error "the kernel's own wait would come before the weights: compile without the macro"
#endif

namespace lowbit::cuda {

template <class Mainloop>
inline constexpr bool kIsTmaWarpSpecializedMainloop = false;

template <int kStages, class Cluster, class Schedule>
inline constexpr bool kIsTmaWarpSpecializedMainloop<
    cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<kStages, Cluster, Schedule>> = true;

// kWeightsAreA: the weights are CUTLASS's A (the swapped orientation), else its B.
template <class Base, bool kWeightsAreA>
struct WeightsFirstMainloop : Base {
  static_assert(kIsTmaWarpSpecializedMainloop<typename Base::DispatchPolicy>,
                "load() below follows the sm90 TMA warp-specialized mainloop's shared layout");
  using typename Base::MainloopPipeline;
  using typename Base::Params;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;
  using ClusterShape = typename Base::DispatchPolicy::ClusterShape;
  static constexpr int kStages = Base::DispatchPolicy::Stages;

  // The producer's loads of one tile: k_tile_count K tiles of both operands from k_tile_iter.
  template <class TensorA, class TensorB, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, MainloopPipeline pipeline, PipelineState write,
                           cute::tuple<TensorA, TensorB> const& load_inputs,
                           BlockCoord const& blk_coord, KTileIterator k_tile_iter,
                           int k_tile_count, int /*thread_idx*/,
                           std::uint32_t block_rank_in_cluster, TensorStorage& shared_tensors) {
    using namespace cute;
    const bool leader = cute::elect_one_sync();
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()),
                            typename Base::SmemLayoutA{});  // (BLK_M, BLK_K, stage)
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()),
                            typename Base::SmemLayoutB{});  // (BLK_N, BLK_K, stage)
    // This block's place in the cluster: x along CUTLASS's M, y along its N.
    constexpr std::uint32_t kClusterX = size<0>(ClusterShape{});
    const std::uint32_t block_x = block_rank_in_cluster % kClusterX;
    const std::uint32_t block_y = block_rank_in_cluster / kClusterX;
    auto tma_a = params.tma_load_a.get_slice(block_y);  // A is shared along N: split by y
    auto tma_b = params.tma_load_b.get_slice(block_x);
    auto [m, n, k, l] = blk_coord;
    Tensor tAgA = tma_a.partition_S(get<0>(load_inputs)(_, _, m, _, l));  // (TMA, M, K, k)
    Tensor tAsA = tma_a.partition_D(sA);
    Tensor tBgB = tma_b.partition_S(get<1>(load_inputs)(_, _, n, _, l));  // (TMA, N, K, k)
    Tensor tBsB = tma_b.partition_D(sB);
    // A multicast copy lands in every block of the cluster's row (A) or column (B).
    auto cluster_blocks = Layout<ClusterShape>{};  // (x, y) -> block rank
    std::uint16_t mask_a = 0, mask_b = 0;
    if constexpr (cute::is_same_v<typename Base::GmemTiledCopyA, SM90_TMA_LOAD_MULTICAST>) {
      for (int y = 0; y < size<1>(cluster_blocks); ++y) {
        mask_a |= std::uint16_t(1) << cluster_blocks(block_x, y, Int<0>{});
      }
    }
    if constexpr (cute::is_same_v<typename Base::GmemTiledCopyB, SM90_TMA_LOAD_MULTICAST>) {
      for (int x = 0; x < size<0>(cluster_blocks); ++x) {
        mask_b |= std::uint16_t(1) << cluster_blocks(x, block_y, Int<0>{});
      }
    }
    // k_tile: a coordinate of k_tile_iter (which only steps forward).
    auto load_a = [&](const PipelineState& stage, const auto& k_tile) {
      copy(params.tma_load_a.with(*pipeline.producer_get_barrier(stage), mask_a),
           tAgA(_, _, _, k_tile), tAsA(_, _, _, stage.index()));
    };
    auto load_b = [&](const PipelineState& stage, const auto& k_tile) {
      copy(params.tma_load_b.with(*pipeline.producer_get_barrier(stage), mask_b),
           tBgB(_, _, _, k_tile), tBsB(_, _, _, stage.index()));
    };

    if (!waited_) {
      // Every stage is free at the kernel's start: its weights now, its activations after the
      // wait. acquire() arms the stage's barrier with both operands' bytes.
      const int ahead = k_tile_count < kStages ? k_tile_count : kStages;
      if (leader) {
        PipelineState stage = write;
        KTileIterator k_tile = k_tile_iter;
        for (int i = 0; i < ahead; ++i, ++stage, ++k_tile) {
          pipeline.producer_acquire(stage);
          if constexpr (kWeightsAreA) {
            load_a(stage, *k_tile);
          } else {
            load_b(stage, *k_tile);
          }
        }
      }
      __syncwarp();
      wait_for_prerequisite_grids();
      waited_ = true;
      for (int i = 0; i < ahead; ++i, ++write, ++k_tile_iter) {
        if (leader) {
          if constexpr (kWeightsAreA) {
            load_b(write, *k_tile_iter);
          } else {
            load_a(write, *k_tile_iter);
          }
        }
      }
      k_tile_count -= ahead;
    }
    if (leader) {
      for (; k_tile_count > 0; --k_tile_count, ++k_tile_iter, ++write) {
        pipeline.producer_acquire(write);
        load_a(write, *k_tile_iter);
        load_b(write, *k_tile_iter);
      }
    }
  }

  // A consumer warpgroup's mainloop of one tile, then the release of the next kernel.
  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState read, FrgTensorC& accum,
                          int k_tile_count, int thread_idx, TensorStorage& shared_tensors,
                          Params const& params) {
    Base::mma(pipeline, read, accum, k_tile_count, thread_idx, shared_tensors, params);
    allow_dependent_launch();
  }

 private:
  bool waited_ = false;  // the producer's first tile has passed the wait
};

}  // namespace lowbit::cuda
