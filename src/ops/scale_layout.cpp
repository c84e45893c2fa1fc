// Scale layouts of the group quantizers: storage shapes and strides (docs/quant.md, "Layouts").
#include "scale_layout.h"

namespace lowbit {

namespace {
// DeepGEMM reads column-major scales through TMA, which wants 16-byte aligned rows: 4 floats.
constexpr std::int64_t kTmaAlignFloats = 4;
std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}
}  // namespace

const char* scale_layout_name(ScaleLayout layout) {
  switch (layout) {
    case ScaleLayout::kRowMajor: return "row_major";
    case ScaleLayout::kColumnMajor: return "column_major";
    case ScaleLayout::kColumnMajorTmaAligned: return "column_major_tma_aligned";
  }
  return "unknown";
}

ScaleShape scale_storage_shape(ScaleLayout layout, std::int64_t m, std::int64_t k,
                               int group_size) {
  const std::int64_t groups = group_size > 0 ? k / group_size : 0;
  switch (layout) {
    case ScaleLayout::kRowMajor: return {m, groups};
    case ScaleLayout::kColumnMajor: return {groups, m};
    case ScaleLayout::kColumnMajorTmaAligned: return {groups, round_up(m, kTmaAlignFloats)};
  }
  return {0, 0};
}

namespace detail {
ScaleStrides scale_strides(ScaleLayout layout, std::int64_t m, std::int64_t groups_per_row) {
  switch (layout) {
    case ScaleLayout::kRowMajor: return {groups_per_row, 1};
    case ScaleLayout::kColumnMajor: return {1, m};
    case ScaleLayout::kColumnMajorTmaAligned: return {1, round_up(m, kTmaAlignFloats)};
  }
  return {0, 0};
}
}  // namespace detail

}  // namespace lowbit
