// Validation shared by the NVFP4 ops (see nvfp4_check.h).
#include "nvfp4_check.h"

#include <string>

namespace lowbit::detail {

void check_expert_bytes(const ArgCheck& check, const char* name, const TensorView& t,
                        std::int64_t experts, std::int64_t rows, std::int64_t cols, DType dtype,
                        const TensorView& ref) {
  check.dtype_in(name, t, {dtype});
  const std::string want = "[" + std::to_string(experts) + ", " + std::to_string(rows) + ", " +
                           std::to_string(cols) + "]";
  if (t.rank == 3) {
    if (t.shape[0] != experts || t.shape[1] != rows || t.shape[2] != cols) {
      check.fail(name, "shape " + want, t.describe());
    }
  } else if (t.rank == 2 && experts == 1) {
    if (t.shape[0] != rows || t.shape[1] != cols) {
      check.fail(name, "shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "]",
                 t.describe());
    }
  } else {
    check.fail(name, experts == 1 ? "rank 2 or 3" : "shape " + want, t.describe());
  }
  check.contiguous(name, t);
  check.same_device(name, t, "the input", ref);
  if (t.numel() > 0) check.not_null(name, t);
}

void check_workspace(const ArgCheck& check, const TensorView& workspace, std::int64_t bytes) {
  const std::int64_t have =
      workspace.data ? workspace.numel() * static_cast<std::int64_t>(dtype_size(workspace.dtype)) : 0;
  if (workspace.device != Device::kCUDA || have < bytes) {
    check.fail("workspace", "a CUDA buffer of >= " + std::to_string(bytes) + " bytes",
               workspace.data == nullptr ? std::string("none") : workspace.describe());
  }
  check.aligned("workspace", workspace, 4);
}

}  // namespace lowbit::detail
