// CPU references of the quantization ops (arguments already validated by src/ops).
#pragma once

#include "lowbit/quant.h"

namespace lowbit::reference {

void per_token_group_quant(const PerTokenGroupQuantArgs& args);

}  // namespace lowbit::reference
