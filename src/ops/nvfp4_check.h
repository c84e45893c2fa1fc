// Validation shared by the NVFP4 ops: per-expert byte tensors and device workspaces.
#pragma once

#include <cstdint>

#include "arg_check.h"

namespace lowbit::detail {

// [rows, cols] (experts == 1) or [experts, rows, cols] contiguous `dtype` on the device of `ref`.
void check_expert_bytes(const ArgCheck& check, const char* name, const TensorView& t,
                        std::int64_t experts, std::int64_t rows, std::int64_t cols, DType dtype,
                        const TensorView& ref);

// A CUDA buffer of at least `bytes` bytes, 4-byte aligned.
void check_workspace(const ArgCheck& check, const TensorView& workspace, std::int64_t bytes);

}  // namespace lowbit::detail
