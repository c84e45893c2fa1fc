// A CUTLASS sm90 mainloop collective as a programmatic dependent: its producer waits for the
// previous kernel before its first load, and each consumer warpgroup lets the next kernel
// launch once a tile's mainloop is done.
//
// Why not CUTLASS_ENABLE_GDC_FOR_SM90: with it, a pingpong consumer warpgroup without a tile
// (one tile per CTA, as at decode sizes) lets the next kernel launch as soon as the kernel
// starts. Graph replays with PDL then lost 2-18% on pingpong grids of one tile per CTA filling
// 40-90% of the SMs (H200, 18432 x 7168 at 64 tokens on the 192 x 64 swapped tile: 36.9 us
// without PDL, 39.4 with it; docs/perf/scaled_gemm.md, thirty-second session).
//
// Asking for the weights before the wait (they depend on no earlier kernel) was measured too
// and lost everywhere (docs/perf/scaled_gemm.md, thirty-third session): the copy engine served
// every stage's weights before the first stage's activations, so the ring drained before any
// stage could be refilled; and a kernel that fills shared memory cannot start on an SM before
// the previous one leaves it, so there was little to overlap.
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

template <class Base>
struct ProgrammaticMainloop : Base {
  // The producer's loads of one tile (after the wait, which returns at once after the first).
  template <class... Args>
  CUTLASS_DEVICE void load(Args&&... args) {
    wait_for_prerequisite_grids();
    Base::load(std::forward<Args>(args)...);
  }

  // A consumer warpgroup's mainloop of one tile. CUTLASS releases after a CTA's last tile: the
  // same where a CTA has one; with several, the next kernel may launch earlier, but it cannot
  // start on an SM before this kernel's CTA there exits (it fills the shared memory).
  template <class... Args>
  CUTLASS_DEVICE void mma(Args&&... args) {
    Base::mma(std::forward<Args>(args)...);
    allow_dependent_launch();
  }
};

}  // namespace lowbit::cuda
