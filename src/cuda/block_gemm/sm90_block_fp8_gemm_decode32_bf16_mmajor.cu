// Instantiation of the block-scaled FP8 GEMM: swapped decode tile (32 tokens), bf16 output, M-major activation scales.
#include "sm90_block_fp8_gemm.cuh"
#include "sm90_block_fp8_gemm_instances.h"

namespace lowbit::cuda::block_gemm {
LOWBIT_BLOCK_GEMM_ENTRY(BlockGemmTile::kDecode32, DType::kBF16, true,
                        (BlockFp8Gemm<cutlass::bfloat16_t, 128, 32, true, true>))
}  // namespace lowbit::cuda::block_gemm
