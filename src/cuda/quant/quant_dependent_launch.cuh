// Where the quantizer kernels let a next kernel launched with programmatic dependent launch
// start (docs/pdl.md): at their own start, or, with `release_at_start` false
// (quant_releases_at_start: LOWBIT_QUANT_RELEASE=after_wait), once their own wait has returned.
#pragma once

#include "../common/kernel_launch.cuh"

namespace lowbit::cuda {

// Before the kernel's first read: waits for the previous kernel, then lets the next one launch
// if the kernel did not at its start.
__device__ __forceinline__ void wait_then_release(bool release_at_start) {
  wait_for_prerequisite_grids();
  if (!release_at_start) allow_dependent_launch();
}

// The release at the start and the wait, for kernels with nothing to do before their first read.
__device__ __forceinline__ void release_and_wait(bool release_at_start) {
  if (release_at_start) allow_dependent_launch();
  wait_then_release(release_at_start);
}

}  // namespace lowbit::cuda
