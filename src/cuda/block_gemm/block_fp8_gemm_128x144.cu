// block_fp8_mm's own 128 x 144 prefill tile (block_fp8_gemm_tall.cuh): for narrow weights whose
// 192-row blocks leave SMs idle or a block dead, e.g. DeepSeek-V3's kv_a (N = 576: four 144-row
// blocks, two whole cluster pairs, against three 192-row blocks in two pairs, one of them dead).
#include "block_fp8_gemm_tall_launch.h"
#include "block_fp8_gemm_tall.cuh"

namespace lowbit::cuda {

void launch_block_fp8_gemm_128x144(const BlockFp8GemmProblem& p, const float* a_scales,
                                   std::int64_t a_scale_stride_k, cudaStream_t stream) {
  tall::launch<128, 144>(p, a_scales, a_scale_stride_k, stream, "prefill128x144mc");
}

}  // namespace lowbit::cuda
