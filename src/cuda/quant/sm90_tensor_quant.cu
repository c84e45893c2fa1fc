// Per-tensor quantization for sm_90a (recipe: docs/quant.md; bit-identical to
// src/reference/token_quant.cpp).
//
// - static: one elementwise kernel with the caller's scale.
// - dynamic, tensors of up to 1 MB (decode activations): one launch of one 16-block
//   thread-block cluster that holds the tensor in registers, meets at the cluster barrier with the amax
//   exchanged through distributed shared memory, and quantizes from the registers. One read,
//   one launch, no workspace.
// - dynamic, larger tensors: an amax kernel (grid-stride, one atomicMax per block into a 4-byte
//   workspace zeroed by cudaMemsetAsync) and the elementwise kernel deriving the scale from the
//   workspace, so nothing synchronizes the host. Its quantize pass walks the tensor backwards:
//   the amax pass ended on its tail, which the L2 still holds.
// Programmatic dependent launch (docs/pdl.md): every kernel lets the next one start as its blocks
// do (after its wait with LOWBIT_QUANT_RELEASE=after_wait), and reads nothing (input, scale,
// amax) before the previous kernel is done; with enable_pdl the amax and quantize passes also
// start each other early.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

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

// Element offsets of 8-element vector v in the input and the output. Contiguous tensors (the
// common case) skip the 64-bit division that strided rows need.
template <bool kContiguous>
__device__ __forceinline__ void vector_offsets(const RowQuantParams& p, std::int64_t v,
                                               std::int64_t& input_offset,
                                               std::int64_t& output_offset) {
  if constexpr (kContiguous) {
    input_offset = output_offset = v * 8;
  } else {
    const std::int64_t vectors_per_row = p.cols / 8;
    const std::int64_t row = v / vectors_per_row;
    const std::int64_t col = (v - row * vectors_per_row) * 8;
    input_offset = row * p.input_row_stride + col;
    output_offset = row * p.output_row_stride + col;
  }
}

// The 16-byte words of the 8-element vector at element offset `in_offset` (plain loads).
template <typename InTag>
__device__ __forceinline__ void load_vector_words(const RowQuantParams& p, std::int64_t in_offset,
                                                  uint4 (&raw)[kWordsPer8<InTag>]) {
  const uint4* in = reinterpret_cast<const uint4*>(static_cast<const char*>(p.input) +
                                                   in_offset * kInputBytes<InTag>);
#pragma unroll
  for (int w = 0; w < kWordsPer8<InTag>; ++w) raw[w] = in[w];
}

// amax raised to the largest |x| of one held vector (fmaxf drops NaN, as in the reference).
template <typename InTag>
__device__ __forceinline__ float vector_amax(const uint4 (&raw)[kWordsPer8<InTag>], float amax) {
  float x[8];
  unpack8(InTag{}, raw, x);
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(x[i]));
  return amax;
}

// Quantizes 8 values with the tensor's scale and stores their codes at element `out_offset`.
template <typename OutTag>
__device__ __forceinline__ void quantize_store8(const RowQuantParams& p, const float (&x)[8],
                                                float scale, std::int64_t out_offset) {
  float local_amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) local_amax = fmaxf(local_amax, fabsf(x[i]));
  float q[8];
  divide_group(x, make_shared_divisor(scale, local_amax), q);
  store8_quantized(OutTag{}, static_cast<char*>(p.output) + out_offset, q);
}

// Grid-stride amax with kUnroll loads in flight per thread. Plain (not evict-first) loads: the
// tail of the tensor, read last, should still be in L2 when the quantize pass starts there.
template <typename InTag, bool kContiguous>
__global__ void __launch_bounds__(kThreads)
    tensor_amax_kernel(RowQuantParams p, std::uint32_t* amax_bits) {
  __shared__ float scratch[kWarps];
  release_and_wait(p.release_at_start);  // the input, and the workspace reset before this kernel
  const std::int64_t total = p.rows * (p.cols / 8);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kThreads;
  float amax = 0.0f;
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x;
       base < total; base += stride * kUnroll) {
    uint4 raw[kUnroll][kWordsPer8<InTag>];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = base + u * stride;
      if (v >= total) continue;
      std::int64_t in_offset, out_offset;
      vector_offsets<kContiguous>(p, v, in_offset, out_offset);
      load_vector_words<InTag>(p, in_offset, raw[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * stride < total) amax = vector_amax<InTag>(raw[u], amax);
    }
  }
  amax = block_reduce(amax, MaxOp{}, scratch);
  // Non-negative floats order like their bit patterns.
  if (threadIdx.x == 0) atomicMax(amax_bits, __float_as_uint(amax));
}

// kUnroll vectors per thread (a block covers kThreads * kUnroll consecutive vectors), all
// loaded before the first store.
template <typename InTag, typename OutTag, bool kContiguous>
__global__ void __launch_bounds__(kThreads)
    tensor_quant_kernel(RowQuantParams p, float* scale_slot, const std::uint32_t* amax_bits,
                        float amax_bound, float qmax) {
  release_and_wait(p.release_at_start);  // the input, and the amax pass's maximum
  float scale;
  if (amax_bits != nullptr) {  // dynamic: every block derives the same scale
    const float amax = __uint_as_float(*amax_bits);
    scale = __fdiv_rn(fmaxf(fminf(amax, amax_bound), p.eps), qmax);
    if (blockIdx.x == 0 && threadIdx.x == 0) *scale_slot = scale;
  } else {
    scale = *scale_slot;
  }
  const std::int64_t total = p.rows * (p.cols / 8);
  // Dynamic: the last blocks of the amax pass read the tensor's tail, so start there (L2 hits).
  const std::int64_t block = amax_bits != nullptr ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const std::int64_t first = block * kThreads * kUnroll + threadIdx.x;
  float x[kUnroll][8];
  // Strided tensors keep each output offset from the load loop (it costs a 64-bit division);
  // contiguous ones recompute v * 8 rather than hold 4 more 64-bit registers (measured: -4%).
  std::int64_t out_offsets[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const std::int64_t v = first + u * kThreads;
    if (v >= total) continue;
    std::int64_t in_offset;
    vector_offsets<kContiguous>(p, v, in_offset, out_offsets[u]);
    load8_as_float(InTag{}, static_cast<const char*>(p.input) + in_offset * kInputBytes<InTag>, x[u]);
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const std::int64_t v = first + u * kThreads;
    if (v >= total) continue;
    quantize_store8<OutTag>(p, x[u], scale, kContiguous ? v * 8 : out_offsets[u]);
  }
}

// ---- dynamic, small tensors: one cluster, one launch -------------------------------------------
// kClusterBlocks blocks of kClusterThreads threads, one per SM; thread t of block b holds vectors
// b * kClusterThreads + t + u * kClusterStride for u < kHeldVectors, as 16-byte words (64 bytes,
// 16 registers per thread), unpacked once for the amax and once for the codes. 16 blocks is a
// non-portable cluster size (H100/H200 run it). NOTE: measured as fast as the portable 8 with
// twice the registers per thread: the fixed cost (cluster launch, barriers), not the per-SM
// stream, sets this kernel's time (docs/perf/activation_quant.md).
constexpr int kClusterBlocks = 16;
constexpr int kClusterThreads = 1024;
constexpr int kClusterStride = kClusterBlocks * kClusterThreads;
constexpr int kHeldWords = 4;
template <typename InTag>
inline constexpr int kHeldVectors = kHeldWords / kWordsPer8<InTag>;

template <typename InTag, typename OutTag, bool kContiguous>
__global__ void __launch_bounds__(kClusterThreads, 1)
    tensor_quant_one_launch(RowQuantParams p, float* scale_slot, float amax_bound, float qmax) {
  namespace cg = cooperative_groups;
  constexpr int kVectors = kHeldVectors<InTag>;
  constexpr int kWords = kWordsPer8<InTag>;
  __shared__ float scratch[kClusterThreads / 32];
  __shared__ float block_amax;
  release_and_wait(p.release_at_start);  // the input is the previous kernel's output
  const std::int64_t total = p.rows * (p.cols / 8);
  const std::int64_t first = blockIdx.x * kClusterThreads + threadIdx.x;

  // Element offsets of vector v: the tensor holds at most 2^16 vectors, so 32-bit index math
  // (cheaper than the 64-bit division, and fewer registers under the 1024-thread cap of 64).
  const std::uint32_t vectors_per_row = static_cast<std::uint32_t>(p.cols / 8);
  auto offsets = [&](std::uint32_t v, std::int64_t& input_offset, std::int64_t& output_offset) {
    if constexpr (kContiguous) {
      input_offset = output_offset = std::int64_t{v} * 8;
    } else {
      const std::uint32_t row = v / vectors_per_row;
      const std::uint32_t col = (v - row * vectors_per_row) * 8;
      input_offset = row * p.input_row_stride + col;
      output_offset = row * p.output_row_stride + col;
    }
  };

  uint4 raw[kVectors][kWords];
#pragma unroll
  for (int u = 0; u < kVectors; ++u) {
    const std::int64_t v = first + u * kClusterStride;
    if (v >= total) continue;
    std::int64_t in_offset, out_offset;
    offsets(static_cast<std::uint32_t>(v), in_offset, out_offset);
    load_vector_words<InTag>(p, in_offset, raw[u]);
  }
  float amax = 0.0f;
#pragma unroll
  for (int u = 0; u < kVectors; ++u) {
    if (first + u * kClusterStride < total) amax = vector_amax<InTag>(raw[u], amax);
  }
  amax = block_reduce(amax, MaxOp{}, scratch);
  if (threadIdx.x == 0) block_amax = amax;

  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // release/acquire: every block's maximum is visible to the whole cluster
  float tensor_amax = 0.0f;
#pragma unroll
  for (int b = 0; b < kClusterBlocks; ++b) {
    tensor_amax = fmaxf(tensor_amax, *cluster.map_shared_rank(&block_amax, b));
  }
  const float scale = __fdiv_rn(fmaxf(fminf(tensor_amax, amax_bound), p.eps), qmax);
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale_slot = scale;

#pragma unroll
  for (int u = 0; u < kVectors; ++u) {
    const std::int64_t v = first + u * kClusterStride;
    if (v >= total) continue;
    std::int64_t in_offset, out_offset;
    offsets(static_cast<std::uint32_t>(v), in_offset, out_offset);
    float x[8];
    unpack8(InTag{}, raw[u], x);
    quantize_store8<OutTag>(p, x, scale, out_offset);
  }
  cluster.sync();  // no block may exit while another still reads its block_amax
}

template <typename InTag>
constexpr std::int64_t one_launch_capacity_vectors() {
  return std::int64_t{kClusterStride} * kHeldVectors<InTag>;
}

// Launches tensor_quant_one_launch as one cluster; false (nothing launched) where the device
// cannot schedule a 16-block cluster of it, checked once per kernel.
template <typename InTag, typename OutTag, bool kContiguous>
bool launch_one_cluster(const char* op, const RowQuantParams& p, float* scale, float amax_bound,
                        cudaStream_t stream) {
  auto kernel = tensor_quant_one_launch<InTag, OutTag, kContiguous>;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kClusterBlocks);
  config.blockDim = dim3(kClusterThreads);
  config.stream = stream;
  cudaLaunchAttribute cluster;
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = kClusterBlocks;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  cudaLaunchAttribute attributes[2] = {cluster, {}};
  attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attributes[1].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attributes;
  config.numAttrs = 1;
  static const bool launchable = [&] {
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
        cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return clusters >= 1;
  }();
  if (!launchable) return false;
  config.numAttrs = p.dependent_launch ? 2 : 1;
  check_cuda(cudaLaunchKernelEx(&config, kernel, p, scale, amax_bound,
                                quantized_max(p.output_dtype)),
             op, "cudaLaunchKernelEx");
  return true;
}

}  // namespace

void launch_per_tensor_quant(const char* op, const RowQuantParams& params, float* scale,
                             bool dynamic, float amax_bound, std::uint32_t* amax_workspace,
                             cudaStream_t stream) {
  if (params.rows == 0 || params.cols == 0) return;
  RowQuantParams p = params;
  p.release_at_start = quant_releases_at_start();
  const std::int64_t vectors = p.rows * (p.cols / 8);
  const std::int64_t quant_blocks = (vectors + kThreads * kUnroll - 1) / (kThreads * kUnroll);
  const bool contiguous = p.input_row_stride == p.cols && p.output_row_stride == p.cols;
  auto launch = [&](auto in_tag, auto contiguous_tag) {
    using In = decltype(in_tag);
    constexpr bool kContiguous = decltype(contiguous_tag)::value;
    if (dynamic && choose_per_tensor_one_launch(op, vectors <= one_launch_capacity_vectors<In>())) {
      bool launched = false;
      dispatch_quantized_output(op, p.output_dtype, [&](auto out_tag) {
        launched = launch_one_cluster<In, decltype(out_tag), kContiguous>(op, p, scale,
                                                                          amax_bound, stream);
      });
      if (launched) return;
    }
    if (dynamic) {
      check_cuda(cudaMemsetAsync(amax_workspace, 0, sizeof(std::uint32_t), stream), op,
                 "cudaMemsetAsync");
      const std::int64_t wanted = (vectors + kThreads * kUnroll - 1) / (kThreads * kUnroll);
      const std::int64_t blocks =
          std::min<std::int64_t>(wanted, std::int64_t{current_device_sm_count(op)} * 8);
      KernelLaunch amax_shape;
      amax_shape.grid = dim3(static_cast<unsigned>(blocks));
      amax_shape.threads = kThreads;
      amax_shape.dependent = p.dependent_launch;
      check_cuda(launch_kernel_with(tensor_amax_kernel<In, kContiguous>, amax_shape, stream, p,
                                    amax_workspace),
                 op, "kernel launch");
    }
    KernelLaunch quant_shape;
    quant_shape.grid = dim3(static_cast<unsigned>(quant_blocks));
    quant_shape.threads = kThreads;
    quant_shape.dependent = p.dependent_launch;
    dispatch_quantized_output(op, p.output_dtype, [&](auto out_tag) {
      check_cuda(launch_kernel_with(tensor_quant_kernel<In, decltype(out_tag), kContiguous>,
                                    quant_shape, stream, p, scale,
                                    dynamic ? amax_workspace : nullptr, amax_bound,
                                    quantized_max(p.output_dtype)),
                 op, "kernel launch");
    });
  };
  dispatch_float_input(op, p.input_dtype, [&](auto in_tag) {
    if (contiguous) {
      launch(in_tag, std::true_type{});
    } else {
      launch(in_tag, std::false_type{});
    }
  });
  check_launch(op);
}

}  // namespace lowbit::cuda
