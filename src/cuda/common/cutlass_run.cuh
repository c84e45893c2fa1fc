// Runs a CUTLASS 3.x device GEMM (GemmUniversalAdapter): can_implement, initialize with the
// caller's workspace, run on the caller's stream. A failure names the stage, CUTLASS's status
// and the problem shape in a lowbit::Error of `op`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cutlass/cutlass.h"
#include "lowbit/error.h"

namespace lowbit::cuda {

template <typename Gemm>
void run_cutlass_gemm(const char* op, const typename Gemm::Arguments& args, void* workspace,
                      cudaStream_t stream, std::int64_t m, std::int64_t n, std::int64_t k) {
  Gemm gemm;
  const char* stage = "can_implement";
  cutlass::Status status = gemm.can_implement(args);
  if (status == cutlass::Status::kSuccess) {
    stage = "initialize";
    status = gemm.initialize(args, workspace, stream);
  }
  if (status == cutlass::Status::kSuccess) {
    stage = "run";
    status = gemm.run(stream);
  }
  if (status != cutlass::Status::kSuccess) {
    throw Error(op, std::string("CUTLASS ") + stage, "kSuccess",
                std::string(cutlass::cutlassGetStatusString(status)) + " for M=" +
                    std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k));
  }
}

}  // namespace lowbit::cuda
