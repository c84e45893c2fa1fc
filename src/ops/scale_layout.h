// Element strides of each ScaleLayout, shared by the reference and the kernel launcher.
#pragma once

#include <cstdint>

#include "lowbit/quant.h"

namespace lowbit::detail {

// scale(m, g) lives at m * per_row + g * per_group.
struct ScaleStrides {
  std::int64_t per_row;
  std::int64_t per_group;
};

ScaleStrides scale_strides(ScaleLayout layout, std::int64_t m, std::int64_t groups_per_row);

}  // namespace lowbit::detail
