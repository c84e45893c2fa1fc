// CPU references of the scaled GEMM ops (arguments already validated by src/ops).
#pragma once

#include "lowbit/scaled_gemm.h"

namespace lowbit::reference {

// acc exact (int64 for int8, double for fp8: every e4m3 product and their sum fit in 53 bits),
// then the epilogue in the kernel's float32 order (docs/scaled_gemm.md).
void scaled_mm(const ScaledMmArgs& args);
void scaled_mm_azp_adjustment(const ScaledMmAzpAdjustmentArgs& args);

}  // namespace lowbit::reference
