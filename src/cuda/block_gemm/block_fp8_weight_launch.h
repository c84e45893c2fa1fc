// Launchers of the 128 x 128 block FP8 weight quantizer and dequantizer (sm_90a).
#pragma once

#include "lowbit/block_gemm.h"

namespace lowbit::cuda {

void launch_block_fp8_quantize_weight(const BlockFp8QuantizeWeightArgs& args, cudaStream_t stream);
void launch_block_fp8_dequantize_weight(const BlockFp8DequantizeWeightArgs& args,
                                        cudaStream_t stream);

}  // namespace lowbit::cuda
