// A CUTLASS sm90 mainloop collective as a programmatic dependent: its producer waits for the
// previous kernel before its first load, and the next kernel may launch once a tile's mainloop
// is done, or for some tiles as soon as this one starts.
//
// Why not CUTLASS_ENABLE_GDC_FOR_SM90: with it, a pingpong consumer warpgroup without a tile
// (one tile per CTA, as at decode sizes) lets the next kernel launch as soon as the kernel
// starts, and which is better depends on the grid. In graph replays of one GEMM with PDL (H200,
// docs/perf/scaled_gemm.md, thirty-third session), releasing after the mainloop ran the 64-
// and 128-channel swapped tiles 4-15% faster on 6144 x 4096 and 7168 x 18432 and the 192 x 64
// one 6-18% faster than a plain launch, where CUTLASS's early release had lost to it; but on the
// 4096-wide weights the early release kept the swapped tiles 1-9% ahead. So the tile chooses
// (TileSpec's kReleaseAtLaunch in scaled_gemm/sm90_scaled_gemm.cuh).
//
// Asking for every stage's weights before the wait (they depend on no earlier kernel) was
// measured too (same section): 0.5-1.1 us slower on a stream wherever a CUTLASS tile ran, and
// slower under PDL on most rows. The copy engine served all the weights before the first
// stage's activations, so the ring drained before a stage could be refilled; and a kernel that
// fills shared memory cannot start on an SM before the previous one leaves it, so a chain of
// GEMMs had little to overlap.
//
// Contract (common/kernel_launch.cuh): the instances are compiled without
// CUTLASS_ENABLE_GDC_FOR_SM90, so the kernel itself neither waits nor releases. Every global
// access of the kernel follows the producer's wait: the consumers' epilogue (scales, bias, zero
// points, the stores of D) runs on stages loaded after it; the epilogue's producer warp loads
// nothing (no C; the broadcast vectors are read by the consumers), nor does the static
// persistent scheduler.
#pragma once

#include <utility>

#include "cutlass/cutlass.h"
#include "kernel_launch.cuh"

#ifdef CUTLASS_ENABLE_GDC_FOR_SM90
#error "the kernel's own release comes at launch on an idle pingpong consumer: compile without"
#endif

namespace lowbit::cuda {

// kReleaseAtLaunch: the producer lets the next kernel launch before it waits, as CUTLASS's idle
// pingpong consumer does; else each consumer after a tile's mainloop.
template <class Base, bool kReleaseAtLaunch>
struct ProgrammaticMainloop : Base {
  // The producer's loads of one tile (after the wait, which returns at once after the first).
  template <class... Args>
  CUTLASS_DEVICE void load(Args&&... args) {
    if constexpr (kReleaseAtLaunch) allow_dependent_launch();
    wait_for_prerequisite_grids();
    Base::load(std::forward<Args>(args)...);
  }

  // A consumer warpgroup's mainloop of one tile. CUTLASS releases after a CTA's last tile: the
  // same where a CTA has one; with several, the next kernel may launch earlier than there.
  template <class... Args>
  CUTLASS_DEVICE void mma(Args&&... args) {
    Base::mma(std::forward<Args>(args)...);
    if constexpr (!kReleaseAtLaunch) allow_dependent_launch();
  }
};

}  // namespace lowbit::cuda
