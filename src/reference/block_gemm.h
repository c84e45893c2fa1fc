// CPU references of the block-scaled FP8 ops (arguments already validated by src/ops).
#pragma once

#include "lowbit/block_gemm.h"

namespace lowbit::reference {

void block_fp8_quantize_weight(const BlockFp8QuantizeWeightArgs& args);
void block_fp8_dequantize_weight(const BlockFp8DequantizeWeightArgs& args);
// Double accumulation of the dequantized operands, one rounding to the output dtype.
void block_fp8_mm(const BlockFp8MmArgs& args);

}  // namespace lowbit::reference
