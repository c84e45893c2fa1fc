// block_fp8_mm's own 128 x 192 prefill tile (block_fp8_gemm_tall.cuh): DeepGEMM's best tile
// for DeepSeek-V3's narrow weights (q_a+kv_a, kv_a) in the side-by-side of
// docs/perf/block_gemm.md.
#include "block_fp8_gemm_tall_launch.h"
#include "block_fp8_gemm_tall.cuh"

namespace lowbit::cuda {

void launch_block_fp8_gemm_128x192(const BlockFp8GemmProblem& p, const float* a_scales,
                                   std::int64_t a_scale_stride_k, cudaStream_t stream) {
  tall::launch<128, 192>(p, a_scales, a_scale_stride_k, stream, "prefill128x192mc");
}

}  // namespace lowbit::cuda
