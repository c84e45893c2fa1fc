// `prefill256x128mc`: block_fp8_mm's own 256 x 128 prefill tile (block_fp8_gemm_tall.cuh).
#include "block_fp8_gemm_tall_launch.h"
#include "block_fp8_gemm_tall.cuh"
#include "block_gemm_config.h"

namespace lowbit::cuda {

void launch_block_fp8_gemm_256x128(const BlockFp8GemmProblem& p, const float* a_scales,
                                   std::int64_t a_scale_stride_k, cudaStream_t stream) {
  if (store_256x128_by_box(p.k)) {
    tall::launch<256, 128, true>(p, a_scales, a_scale_stride_k, stream, "prefill256x128mc");
  } else {
    tall::launch<256, 128>(p, a_scales, a_scale_stride_k, stream, "prefill256x128mc");
  }
}

}  // namespace lowbit::cuda
