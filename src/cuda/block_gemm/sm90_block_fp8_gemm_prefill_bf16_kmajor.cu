// Instantiation of the block-scaled FP8 GEMM: prefill tile, bf16 output, K-major (row-major) activation scales.
#include "sm90_block_fp8_gemm.cuh"
#include "sm90_block_fp8_gemm_instances.h"

namespace lowbit::cuda::block_gemm {
LOWBIT_BLOCK_GEMM_ENTRY(BlockGemmTile::kPrefill128x128, DType::kBF16, false,
                        (BlockFp8Gemm<cutlass::bfloat16_t, 128, 128, false, false>))
}  // namespace lowbit::cuda::block_gemm
