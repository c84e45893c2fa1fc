// Instantiation of the block-scaled FP8 GEMM: pingpong prefill tile (64 x 128), bf16 output, M-major activation scales.
#include "sm90_block_fp8_gemm.cuh"
#include "sm90_block_fp8_gemm_instances.h"

namespace lowbit::cuda::block_gemm {
LOWBIT_BLOCK_GEMM_ENTRY(BlockGemmTile::kPrefill64x128Pingpong, DType::kBF16, true,
                        (BlockFp8Gemm<cutlass::bfloat16_t, 64, 128, false, true, true>))
}  // namespace lowbit::cuda::block_gemm
