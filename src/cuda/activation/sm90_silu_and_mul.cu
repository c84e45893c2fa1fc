// silu_and_mul for sm_90a: out[t, c] = silu(in[t, c]) * in[t, H + c] rounded once to bf16/fp16
// (recipe: docs/activation.md; bit-identical to src/reference/activation.cpp).
// Memory-bound and elementwise: each thread handles kVectors x 8 consecutive outputs with
// 16-byte loads of gate and up issued before any math, and 16-byte stores.
// Programmatic dependent launch (docs/pdl.md): every block lets the next kernel start as it does
// (so a following GEMV launched with PDL requests its weights while this kernel runs, and waits
// for it before reading its output), and reads its input only after the previous kernel is done.
#include <cuda_runtime.h>

#include <cstdint>

#include "../../common/silu.h"
#include "../common/check.cuh"
#include "../common/dispatch.cuh"
#include "../common/kernel_launch.cuh"
#include "../common/vector_io.cuh"
#include "lowbit/formats.h"
#include "silu_and_mul_launch.h"

namespace lowbit::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kVectors = 2;  // 8-element pieces per thread
constexpr int kElements = 8;

// Hardware round-to-nearest-even conversions (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32), equal to
// lowbit::float_to_bf16 / float_to_fp16 for every float32 (tests/gpu/test_formats_gpu.cu).
__device__ __forceinline__ std::uint32_t pack_pair(Bf16Tag, float a, float b) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(a, b);  // a in the low half
  std::uint32_t word;
  memcpy(&word, &pair, sizeof(word));
  return word;
}

__device__ __forceinline__ std::uint32_t pack_pair(Fp16Tag, float a, float b) {
  const __half2 pair = __floats2half2_rn(a, b);
  std::uint32_t word;
  memcpy(&word, &pair, sizeof(word));
  return word;
}

// 5 blocks per SM caps the kernel at 48 registers: 40 warps per SM. Left to itself ptxas takes
// 57 (32 warps), which measured 3-4% slower on H200 for this memory-bound kernel.
template <typename InTag, typename OutTag>
__global__ void __launch_bounds__(kThreads, 5)
    silu_and_mul_kernel(SiluAndMulParams p) {
  allow_dependent_launch();
  constexpr int kInBytes = 2;
  const std::int64_t pieces_per_row = p.cols / kElements, total = p.rows * pieces_per_row;
  const std::int64_t first = (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x);
  float gate[kVectors][kElements];
  float up[kVectors][kElements];
  std::int64_t row[kVectors], col[kVectors];
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    // Piece index strided by the grid's thread count: a warp's pieces stay contiguous.
    const std::int64_t piece = first + static_cast<std::int64_t>(v) * gridDim.x * kThreads;
    row[v] = piece < total ? piece / pieces_per_row : -1;
    col[v] = piece < total ? (piece - row[v] * pieces_per_row) * kElements : 0;
  }
  // The input is the previous kernel's output (gate_up's), and the output may be what it reads.
  wait_for_prerequisite_grids();
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    if (row[v] >= 0) {
      const char* at = static_cast<const char*>(p.input) +
                       (row[v] * p.input_row_stride + col[v]) * kInBytes;
      load8_as_float(InTag{}, at, gate[v]);
      load8_as_float(InTag{}, at + p.cols * kInBytes, up[v]);
    }
  }
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    if (row[v] < 0) continue;
    std::uint32_t words[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      words[i] = pack_pair(OutTag{}, detail::silu_mul(gate[v][2 * i], up[v][2 * i], p.clamp, p.limit),
                           detail::silu_mul(gate[v][2 * i + 1], up[v][2 * i + 1], p.clamp, p.limit));
    }
    char* out = static_cast<char*>(p.output) + (row[v] * p.output_row_stride + col[v]) * 2;
    *reinterpret_cast<uint4*>(out) = make_uint4(words[0], words[1], words[2], words[3]);
  }
}

}  // namespace

void launch_silu_and_mul(const char* op, const SiluAndMulParams& params, cudaStream_t stream) {
  const std::int64_t pieces_per_row = params.cols / kElements;
  const std::int64_t total = params.rows * pieces_per_row;
  if (total == 0) return;
  const std::int64_t threads_needed = (total + kVectors - 1) / kVectors;
  const std::int64_t blocks = (threads_needed + kThreads - 1) / kThreads;
  KernelLaunch shape;
  shape.grid = dim3(static_cast<unsigned>(blocks));
  shape.threads = kThreads;
  shape.dependent = params.dependent_launch;
  dispatch_half_input(op, params.input_dtype, [&](auto in_tag) {
    if (params.output_dtype == DType::kBF16) {
      check_cuda(launch_kernel(silu_and_mul_kernel<decltype(in_tag), Bf16Tag>, params, shape,
                               stream),
                 op, "kernel launch");
    } else {
      check_cuda(launch_kernel(silu_and_mul_kernel<decltype(in_tag), Fp16Tag>, params, shape,
                               stream),
                 op, "kernel launch");
    }
  });
  check_launch(op);
}

}  // namespace lowbit::cuda
