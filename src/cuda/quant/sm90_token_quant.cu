// Per-token and per-tensor quantization for sm_90a (recipes: docs/quant.md; bit-identical to
// src/reference/token_quant.cpp).
//
// per-token: one block per row.
// - resident (rows up to 32K 16-bit or 16K fp32 elements): the block loads its whole row into
//   registers with every 16-byte load in flight at once, reduces amax (or min and max), and
//   quantizes from the registers. One DRAM read, and 2-3 rows in flight per SM.
// - two-pass (longer rows): pass 1 reads the row with 16-byte loads (4 in flight per thread)
//   and reduces; pass 2 reads the row again, which an L2 of 50-60 MB still holds, and writes.
// Per-tensor quantization is in sm90_tensor_quant.cu.
// Programmatic dependent launch (docs/pdl.md): every block lets the next kernel start as it does
// (a GEMM launched with PDL behind the quantizer asks for its weights while it runs;
// LOWBIT_QUANT_RELEASE=after_wait moves the release after the wait), and reads its row only after
// the previous kernel is done.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../../common/asymmetric_int8.h"
#include "../common/block_reduce.cuh"
#include "../common/check.cuh"
#include "../common/device_properties.cuh"
#include "../common/dispatch.cuh"
#include "../common/exact_division.cuh"
#include "../common/kernel_launch_args.cuh"
#include "../common/vector_io.cuh"
#include "lowbit/formats.h"
#include "quant_dependent_launch.cuh"
#include "quant_heuristics.h"
#include "token_quant_launch.h"

namespace lowbit::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kUnroll = 4;

// Block-wide min of lo and max of hi in one pass: one pair of barriers for both. scratch holds
// one float2 per warp.
__device__ float2 block_reduce_range(float lo, float hi, float2* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    lo = fminf(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, offset));
    hi = fmaxf(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, offset));
  }
  __syncthreads();  // scratch may still be read from a previous reduction
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = make_float2(lo, hi);
  __syncthreads();
  float2 range = scratch[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) {
    range.x = fminf(range.x, scratch[w].x);
    range.y = fmaxf(range.y, scratch[w].y);
  }
  return range;
}

// Four asymmetric int8 codes clamp(round(q) + zp, -128, 127) packed little-endian, for quotients
// of the fast division path: there |q| <= 255 (scale >= (hi - lo) / 255 >= |x| / 255), so
// round(q) + zp cannot overflow and the saturating packs (cvt.pack.sat) do the clamp. Same
// bytes as detail::asymmetric_int8_code, NaN included (cvt.rni gives 0, so the code is zp).
__device__ __forceinline__ std::uint32_t pack4_asymmetric_codes(float q0, float q1, float q2,
                                                                float q3, std::int32_t zp) {
  const std::int32_t c0 = __float2int_rn(q0) + zp, c1 = __float2int_rn(q1) + zp;
  const std::int32_t c2 = __float2int_rn(q2) + zp, c3 = __float2int_rn(q3) + zp;
  std::uint32_t high, word;
  asm("cvt.pack.sat.s8.s32.b32 %0, %1, %2, 0;" : "=r"(high) : "r"(c3), "r"(c2));
  asm("cvt.pack.sat.s8.s32.b32 %0, %1, %2, %3;" : "=r"(word) : "r"(c1), "r"(c0), "r"(high));
  return word;
}

// Calls visit(v, x) for every 8-element vector v of a row this thread owns (v = threadIdx.x,
// + kThreads, ...), with kUnroll 16-byte loads issued before the first visit.
template <typename InTag, typename Visit>
__device__ __forceinline__ void for_each_row_vector(const char* row, int vectors, Visit&& visit) {
  for (int base = threadIdx.x; base < vectors; base += kThreads * kUnroll) {
    float x[kUnroll][8];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = base + u * kThreads;
      if (v < vectors) load8_as_float(InTag{}, row + v * 8 * kInputBytes<InTag>, x[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = base + u * kThreads;
      if (v < vectors) visit(v, x[u]);
    }
  }
}

// The row range (min and max) of 16-bit inputs on packed pairs, without converting to float32:
// one min and one max instruction per 2 elements. The min and max of the pairs equal those of
// the float32 values (the conversion is exact and monotonic), and the bf16x2/f16x2 min/max drop
// NaN as fminf/fmaxf do. (The same trick for the symmetric op's max |x| measured 3% slower at
// 4096 x 18432 on H200 than the float32 loop, so that one stays in float32.)
template <typename InTag>
struct PackedRowRange {
  static constexpr bool kBf16 = std::is_same_v<InTag, Bf16Tag>;
  std::uint32_t lo = kBf16 ? 0x7F807F80u : 0x7C007C00u;  // +Inf in both halves
  std::uint32_t hi = kBf16 ? 0xFF80FF80u : 0xFC00FC00u;  // -Inf

  static __device__ __forceinline__ std::uint32_t min2(std::uint32_t a, std::uint32_t b) {
    std::uint32_t d;
    if constexpr (kBf16) {
      asm("min.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    } else {
      asm("min.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    }
    return d;
  }
  static __device__ __forceinline__ std::uint32_t max2(std::uint32_t a, std::uint32_t b) {
    std::uint32_t d;
    if constexpr (kBf16) {
      asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    } else {
      asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    }
    return d;
  }
  static __device__ __forceinline__ float2 to_float2(std::uint32_t pair) {
    if constexpr (kBf16) {
      return make_float2(__uint_as_float(pair << 16), __uint_as_float(pair & 0xFFFF0000u));
    } else {
      __half2 h;
      memcpy(&h, &pair, sizeof(h));
      return __half22float2(h);
    }
  }

  __device__ __forceinline__ void add(const uint4& raw) {
    const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo = min2(lo, words[i]);
      hi = max2(hi, words[i]);
    }
  }
};

// The per-row recipe both per-token kernels share: accumulate() every value of the row, finish()
// (block reduction, scale and zero point, written by thread 0), then store() quantized vectors.
template <typename OutTag, bool kAsymmetric>
struct RowQuantizer {
  float amax = 0.0f;  // fminf/fmaxf drop NaN
  float lo = __builtin_huge_valf();
  float hi = -__builtin_huge_valf();
  std::int32_t zero_point = 0;
  SharedDivisor divisor;

  __device__ __forceinline__ void accumulate(const float (&x)[8]) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if constexpr (kAsymmetric) {
        lo = fminf(lo, x[i]);
        hi = fmaxf(hi, x[i]);
      } else {
        amax = fmaxf(amax, fabsf(x[i]));
      }
    }
  }

  // Folds a packed range of 16-bit inputs into the float32 one (asymmetric op).
  template <typename InTag>
  __device__ __forceinline__ void accumulate(const PackedRowRange<InTag>& range) {
    const float2 low = PackedRowRange<InTag>::to_float2(range.lo);
    const float2 high = PackedRowRange<InTag>::to_float2(range.hi);
    lo = fminf(lo, fminf(low.x, low.y));
    hi = fmaxf(hi, fmaxf(high.x, high.y));
  }

  __device__ __forceinline__ void finish(const RowQuantParams& p, std::int64_t row,
                                         float amax_bound, float qmax, float* scratch,
                                         float* scales, std::int32_t* zero_points) {
    float scale;
    if constexpr (kAsymmetric) {
      const float2 range = block_reduce_range(lo, hi, reinterpret_cast<float2*>(scratch));
      lo = range.x;
      hi = range.y;
      const detail::AsymmetricParams params = detail::asymmetric_int8_params(lo, hi, p.eps);
      scale = params.scale;
      zero_point = params.zero_point;
      amax = fmaxf(fabsf(lo), fabsf(hi));
    } else {
      amax = block_reduce(amax, MaxOp{}, scratch);
      scale = __fdiv_rn(fmaxf(fminf(amax, amax_bound), p.eps), qmax);
    }
    if (threadIdx.x == 0) {
      scales[row] = scale;
      if constexpr (kAsymmetric) zero_points[row] = zero_point;
    }
    divisor = make_shared_divisor(scale, amax);
  }

  __device__ __forceinline__ void store(char* out, const float (&x)[8]) const {
    float q[8];
    divide_group(x, divisor, q);
    if constexpr (kAsymmetric) {
      if (divisor.fast) {
        *reinterpret_cast<uint2*>(out) =
            make_uint2(pack4_asymmetric_codes(q[0], q[1], q[2], q[3], zero_point),
                       pack4_asymmetric_codes(q[4], q[5], q[6], q[7], zero_point));
        return;
      }
      std::uint32_t words[2] = {0, 0};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const std::uint32_t code =
            static_cast<std::uint8_t>(detail::asymmetric_int8_code(q[i], zero_point));
        words[i / 4] |= code << (8 * (i % 4));
      }
      *reinterpret_cast<uint2*>(out) = make_uint2(words[0], words[1]);
    } else {
      store8_quantized(OutTag{}, out, q);
    }
  }
};

// Two passes over the row (any length); the second one hits L2.
template <typename InTag, typename OutTag, bool kAsymmetric>
__global__ void __launch_bounds__(kThreads)
    per_token_quant_kernel(RowQuantParams p, float* scales, std::int32_t* zero_points,
                           float amax_bound, float qmax) {
  __shared__ __align__(8) float scratch[2 * kWarps];  // block_reduce_range: a float2 per warp
  release_and_wait(p.release_at_start);  // the row is the previous kernel's output
  const std::int64_t row = blockIdx.x;
  const char* in = static_cast<const char*>(p.input) + row * p.input_row_stride * kInputBytes<InTag>;
  char* out = static_cast<char*>(p.output) + row * p.output_row_stride;
  const int vectors = static_cast<int>(p.cols / 8);

  RowQuantizer<OutTag, kAsymmetric> quantizer;
  for_each_row_vector<InTag>(in, vectors,
                             [&](int, const float (&x)[8]) { quantizer.accumulate(x); });
  quantizer.finish(p, row, amax_bound, qmax, scratch, scales, zero_points);
  for_each_row_vector<InTag>(in, vectors, [&](int v, const float (&x)[8]) {
    quantizer.store(out + v * 8, x);
  });
}

// The row held in registers: kVectors 16-byte pieces per thread, all loaded before any math.
// 2 blocks of up to 512 threads per SM at <= 64 registers.
constexpr int kResidentMaxThreads = 512;

template <typename InTag, typename OutTag, bool kAsymmetric, int kVectors>
__global__ void __launch_bounds__(kResidentMaxThreads, 2)
    per_token_quant_resident_kernel(RowQuantParams p, float* scales, std::int32_t* zero_points,
                                    float amax_bound, float qmax) {
  __shared__ __align__(8) float scratch[2 * kResidentMaxThreads / 32];  // a float2 per warp
  release_and_wait(p.release_at_start);  // the row is the previous kernel's output
  const std::int64_t row = blockIdx.x;
  const char* in = static_cast<const char*>(p.input) + row * p.input_row_stride * kInputBytes<InTag>;
  char* out = static_cast<char*>(p.output) + row * p.output_row_stride;
  const int vectors = static_cast<int>(p.cols / 8);

  uint4 raw[kVectors][kWordsPer8<InTag>];
#pragma unroll
  for (int u = 0; u < kVectors; ++u) {
    const int v = threadIdx.x + u * blockDim.x;
    if (v >= vectors) continue;
#pragma unroll
    for (int w = 0; w < kWordsPer8<InTag>; ++w) {
      raw[u][w] = load_streaming_16b(in + v * 8 * kInputBytes<InTag> + 16 * w);
    }
  }
  RowQuantizer<OutTag, kAsymmetric> quantizer;
  if constexpr (kAsymmetric && !std::is_same_v<InTag, Fp32Tag>) {
    PackedRowRange<InTag> range;
#pragma unroll
    for (int u = 0; u < kVectors; ++u) {
      if (threadIdx.x + u * blockDim.x < vectors) range.add(raw[u][0]);
    }
    quantizer.accumulate(range);
  } else {
#pragma unroll
    for (int u = 0; u < kVectors; ++u) {
      if (threadIdx.x + u * blockDim.x >= vectors) continue;
      float x[8];
      unpack8(InTag{}, raw[u], x);
      quantizer.accumulate(x);
    }
  }
  quantizer.finish(p, row, amax_bound, qmax, scratch, scales, zero_points);
#pragma unroll
  for (int u = 0; u < kVectors; ++u) {
    const int v = threadIdx.x + u * blockDim.x;
    if (v >= vectors) continue;
    float x[8];
    unpack8(InTag{}, raw[u], x);
    quantizer.store(out + v * 8, x);
  }
}

// Largest row (in 8-element vectors) the resident kernel holds: 8 pieces per thread for 16-bit
// inputs, 4 for fp32 (two 16-byte words each), at 512 threads.
template <typename InTag>
inline constexpr int kResidentMaxVectorsPerThread = std::is_same_v<InTag, Fp32Tag> ? 4 : 8;

// Launches the resident kernel with the fewest pieces per thread that fit the row in 512
// threads; returns false when the row is too long for it.
template <typename InTag, typename OutTag, bool kAsymmetric>
bool launch_resident(const RowQuantParams& p, float* scales, std::int32_t* zero_points,
                     float amax_bound, float qmax, cudaStream_t stream, const char* op) {
  const std::int64_t vectors = p.cols / 8;
  bool launched = false;
  auto try_width = [&](auto width) {
    constexpr int kVectors = decltype(width)::value;
    if constexpr (kVectors <= kResidentMaxVectorsPerThread<InTag>) {
      const std::int64_t threads = (vectors + kVectors - 1) / kVectors;
      if (launched || threads > kResidentMaxThreads) return;
      KernelLaunch shape;
      shape.grid = dim3(static_cast<unsigned>(p.rows));
      shape.threads = static_cast<unsigned>((threads + 31) / 32 * 32);
      shape.dependent = p.dependent_launch;
      check_cuda(launch_kernel_with(per_token_quant_resident_kernel<InTag, OutTag, kAsymmetric, kVectors>,
                                    shape, stream, p, scales, zero_points, amax_bound, qmax),
                 op, "kernel launch");
      launched = true;
    }
  };
  try_width(std::integral_constant<int, 1>{});
  try_width(std::integral_constant<int, 2>{});
  try_width(std::integral_constant<int, 4>{});
  try_width(std::integral_constant<int, 8>{});
  return launched;
}

}  // namespace

void launch_per_token_quant(const char* op, const RowQuantParams& params, float* scales,
                            std::int32_t* zero_points, float amax_bound, cudaStream_t stream) {
  if (params.rows == 0 || params.cols == 0) return;
  RowQuantParams p = params;
  p.release_at_start = quant_releases_at_start();
  auto launch = [&](auto in_tag, auto out_tag, auto asymmetric, float qmax) {
    using In = decltype(in_tag);
    using Out = decltype(out_tag);
    constexpr bool kAsymmetric = decltype(asymmetric)::value;
    if (launch_resident<In, Out, kAsymmetric>(p, scales, zero_points, amax_bound, qmax, stream,
                                              op)) {
      return;
    }
    KernelLaunch shape;
    shape.grid = dim3(static_cast<unsigned>(p.rows));
    shape.threads = kThreads;
    shape.dependent = p.dependent_launch;
    check_cuda(launch_kernel_with(per_token_quant_kernel<In, Out, kAsymmetric>, shape, stream, p,
                                  scales, zero_points, amax_bound, qmax),
               op, "kernel launch");
  };
  dispatch_float_input(op, p.input_dtype, [&](auto in_tag) {
    if (zero_points != nullptr) {
      launch(in_tag, Int8Tag{}, std::true_type{}, kInt8Max);
      return;
    }
    dispatch_quantized_output(op, p.output_dtype, [&](auto out_tag) {
      launch(in_tag, out_tag, std::false_type{}, quantized_max(p.output_dtype));
    });
  });
  check_launch(op);
}

}  // namespace lowbit::cuda
