// Group quantization for sm_90a: [M, K] values -> fp8 e4m3fn or int8 in 1 x G groups with one
// fp32 scale per group (recipe: docs/quant.md; bit-identical to src/reference/). The values are
// either the input itself (per_token_group_quant: bf16/fp16/fp32) or silu(gate) * up computed
// from an input [M, 2K] = [gate | up] (silu_and_mul_quant: bf16/fp16, docs/activation.md).
// Two kernels, chosen in quant_heuristics.cpp:
//
// - direct (small problems, decode): each lane loads one 16-byte piece (8 elements) of a group
//   straight into registers; G / 8 lanes share a group. Most parallelism, least latency.
// - pipelined (large problems): a persistent grid in which thread 0 of each block streams row
//   tiles of 8 x 1024 (or 8 x 512) elements into a ring of shared-memory stages with bulk async
//   copies (TMA engine) completing on mbarriers, while all threads quantize the current tile.
//   NOTE: loads held in registers cannot keep enough bytes in flight on Hopper (ncu: L1TEX
//   scoreboard stalls, 50% occupancy from registers, ~70% of copy bandwidth); the copy engine
//   keeps kStages tiles in flight per block without registers.
//
// Programmatic dependent launch (docs/pdl.md): every block lets the next kernel start as it does
// (so a GEMM launched with PDL behind the quantizer asks for its weights while it runs, and waits
// for it before reading its output; LOWBIT_QUANT_RELEASE=after_wait moves the release after the
// wait), and reads its input only after the previous kernel is done.
//
// In both, a lane holds kVectors pieces of one group; piece j of a lane is piece
// j * kLanes + lane of the group, so every store instruction writes whole 32-byte sectors.
// The group amax is reduced over its lanes with shuffles.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../common/bulk_copy.cuh"
#include "../common/check.cuh"
#include "../common/device_properties.cuh"
#include "../common/dispatch.cuh"
#include "../common/exact_division.cuh"
#include "../common/integer_division.cuh"
#include "../common/kernel_launch.cuh"
#include "../common/vector_io.cuh"
#include "lowbit/formats.h"
#include "../../common/silu.h"
#include "group_quant_launch.h"
#include "quant_dependent_launch.cuh"
#include "quant_heuristics.h"

namespace lowbit::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kElementsPerVector = 8;
// Shared-memory stages of the pipelined kernel: 4 x 16 KB for one operand (bf16), 3 x 32 KB for
// the two operands of silu_and_mul_quant, so two blocks fit on an SM either way.
template <bool kSiluMul>
inline constexpr int kStages = kSiluMul ? 3 : 4;

struct KernelParams {
  const char* input;  // bytes
  char* output;       // bytes
  float* scales;
  std::uint32_t rows;
  std::uint32_t cols;
  std::uint32_t total_groups;
  UintDivisor groups_per_row;
  std::int64_t input_row_bytes;
  std::int64_t output_row_bytes;
  std::int64_t scale_stride_row;
  std::int64_t scale_stride_group;
  float eps;
  float amax_bound;
  float qmax;
  bool power_of_two_scale;
  std::int64_t up_offset_bytes;  // silu_mul: the up value of column c is this far past gate c
  bool clamp;
  float limit;
  bool release_at_start;  // quant_releases_at_start(): else the release follows the PDL wait
};

// 8 consecutive values of x: loaded as is, or silu(gate) * up with up `up_offset` bytes further.
template <bool kSiluMul, bool kShared, typename InTag>
__device__ __forceinline__ void load8_values(InTag tag, const char* pointer,
                                             std::int64_t up_offset, const KernelParams& p,
                                             float (&x)[kElementsPerVector]) {
  auto load = [&](const char* at, float (&values)[kElementsPerVector]) {
    if constexpr (kShared) {
      load8_shared_as_float(tag, at, values);
    } else {
      load8_as_float(tag, at, values);
    }
  };
  if constexpr (kSiluMul) {
    float up[kElementsPerVector];
    load(pointer, x);
    load(pointer + up_offset, up);
#pragma unroll
    for (int i = 0; i < kElementsPerVector; ++i) {
      x[i] = detail::silu_mul(x[i], up[i], p.clamp, p.limit);
    }
  } else {
    load(pointer, x);
  }
}

// Reduces the amax over a group's lanes, then scales, divides and stores this lane's pieces.
// Every lane of the warp must call it (shuffles use the full mask); inactive lanes hold zeros.
template <typename OutTag, int kGroup, int kLanes, int kVectors>
__device__ __forceinline__ void quantize_group_slice(const KernelParams& p,
                                                     float (&x)[kVectors][kElementsPerVector],
                                                     bool active, std::uint32_t row,
                                                     std::uint32_t group_in_row, int lane) {
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < kVectors; ++j) {
#pragma unroll
    for (int i = 0; i < kElementsPerVector; ++i) amax = fmaxf(amax, fabsf(x[j][i]));  // no NaN
  }
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
  }
  if (!active) return;

  float scale = __fdiv_rn(fmaxf(fminf(amax, p.amax_bound), p.eps), p.qmax);
  if (p.power_of_two_scale) scale = round_scale_up_to_power_of_two(scale);
  const SharedDivisor divisor = make_shared_divisor(scale, amax);

  char* output_group = p.output + row * p.output_row_bytes +
                       static_cast<std::int64_t>(group_in_row) * kGroup;
#pragma unroll
  for (int j = 0; j < kVectors; ++j) {
    float q[kElementsPerVector];
    divide_group(x[j], divisor, q);
    store8_quantized(OutTag{}, output_group + (j * kLanes + lane) * kElementsPerVector, q);
  }
  if (lane == 0) {
    p.scales[row * p.scale_stride_row + group_in_row * p.scale_stride_group] = scale;
  }
}

// ---- direct kernel: loads straight from global memory into registers ------------------------
// kVectors pieces per lane: 1 for the quantizers (most parallelism, least latency); 2 or 4 for
// silu_and_mul_quant at large sizes, whose per-group work (index math, shuffles, the scale and
// its reciprocal) then spreads over 16 or 32 elements instead of 8.
// NOTE: 4 pieces per lane need 72 registers, so 256-thread blocks fit 3 per SM (24 warps) and a
// 64-register cap spills; 224-thread blocks fit 4 per SM (28 warps) at 72 registers.
template <int kVectors>
inline constexpr int kDirectMaxThreads = kVectors == 4 ? kWideLaneThreads : kThreads;

template <typename InTag, typename OutTag, int kGroup, int kVectors, bool kSiluMul>
__global__ void __launch_bounds__(kDirectMaxThreads<kVectors>, kVectors == 1 ? 1 : 4)
    group_quant_direct(KernelParams p) {
  if (p.release_at_start) allow_dependent_launch();
  constexpr int kLanes = kGroup / (kElementsPerVector * kVectors);
  const int lane = threadIdx.x % kLanes;
  const std::uint32_t group_id = blockIdx.x * (blockDim.x / kLanes) + threadIdx.x / kLanes;
  const bool active = group_id < p.total_groups;
  const std::uint32_t row = active ? p.groups_per_row.divide(group_id) : 0;
  const std::uint32_t group_in_row = active ? group_id - row * p.groups_per_row.divisor : 0;

  // The input is the previous kernel's output, and the outputs may be what it still reads.
  wait_then_release(p.release_at_start);
  // Every load is issued before any arithmetic, so a lane has all its bytes in flight at once.
  constexpr int kOperands = kSiluMul ? 2 : 1;  // gate and up
  constexpr int kWords = kWordsPer8<InTag>;
  uint4 raw[kOperands][kVectors][kWords];
  if (active) {
    const char* group_input = p.input + row * p.input_row_bytes +
                              static_cast<std::int64_t>(group_in_row) * kGroup * kInputBytes<InTag>;
#pragma unroll
    for (int operand = 0; operand < kOperands; ++operand) {
#pragma unroll
      for (int j = 0; j < kVectors; ++j) {
        const char* piece = group_input + operand * p.up_offset_bytes +
                            (j * kLanes + lane) * kElementsPerVector * kInputBytes<InTag>;
#pragma unroll
        for (int w = 0; w < kWords; ++w) raw[operand][j][w] = load_streaming_16b(piece + 16 * w);
      }
    }
  }
  float x[kVectors][kElementsPerVector] = {};
  if (active) {
#pragma unroll
    for (int j = 0; j < kVectors; ++j) {
      unpack8(InTag{}, raw[0][j], x[j]);
      if constexpr (kSiluMul) {
        float up[kElementsPerVector];
        unpack8(InTag{}, raw[kOperands - 1][j], up);
#pragma unroll
        for (int i = 0; i < kElementsPerVector; ++i) {
          x[j][i] = detail::silu_mul(x[j][i], up[i], p.clamp, p.limit);
        }
      }
    }
  }
  quantize_group_slice<OutTag, kGroup, kLanes, kVectors>(p, x, active, row, group_in_row, lane);
}

// ---- pipelined kernel: bulk copies of tiles into a ring of shared-memory stages ---------------
// A tile is 8 rows x kTileCols columns (8192 or 4096 elements), and consecutive groups of a
// warp sit in consecutive rows, so with column-major scales a warp writes the 8 scales of one
// group column as one 32-byte sector. Measured on H200 against one-row tiles, 8-row tiles were
// as fast or faster for every layout (docs/perf/per_token_group_quant.md): K that is a multiple
// of 1024 leaves no partial tile.
constexpr int kTileRows = 8;

template <int kGroup>
struct PipelineShape {
  static constexpr int kVectors = kGroup >= 64 ? 4 : 2;                   // pieces per lane
  static constexpr int kLanes = kGroup / (kElementsPerVector * kVectors);  // 4, 2 or 2
  static constexpr int kTileElements = kThreads / kLanes * kGroup;         // 8192 or 4096
  static constexpr int kTileCols = kTileElements / kTileRows;
};

template <typename InTag, int kGroup, bool kSiluMul>
constexpr int pipeline_shared_bytes() {
  return kStages<kSiluMul> * (kSiluMul ? 2 : 1) * PipelineShape<kGroup>::kTileElements *
         kInputBytes<InTag>;
}

template <typename InTag, typename OutTag, int kGroup, bool kSiluMul>
__global__ void __launch_bounds__(kThreads) group_quant_pipelined(KernelParams p) {
  using Shape = PipelineShape<kGroup>;
  constexpr int kInBytes = kInputBytes<InTag>;
  constexpr int kStageCount = kStages<kSiluMul>;
  constexpr int kOperands = kSiluMul ? 2 : 1;           // gate and up tiles
  constexpr int kOperandBytes = Shape::kTileElements * kInBytes;
  constexpr int kTileBytes = kOperands * kOperandBytes;
  constexpr int kRowBytes = Shape::kTileCols * kInBytes;  // one tile row in shared memory
  // [kStageCount][kOperands][kTileRows][kTileCols]
  extern __shared__ __align__(128) char stage_memory[];
  __shared__ std::uint64_t tile_ready[kStageCount];

  const std::uint32_t col_tiles = (p.cols + Shape::kTileCols - 1) / Shape::kTileCols;
  const std::uint32_t row_bands = (p.rows + kTileRows - 1) / kTileRows;
  const std::uint32_t num_tiles = row_bands * col_tiles;
  struct Tile {
    std::uint32_t first_row, rows, first_column, columns;
  };
  auto locate = [&](std::uint32_t tile) {
    Tile t;
    const std::uint32_t band = tile / col_tiles;
    t.first_row = band * kTileRows;
    t.rows = min(static_cast<std::uint32_t>(kTileRows), p.rows - t.first_row);
    t.first_column = (tile - band * col_tiles) * Shape::kTileCols;
    t.columns = min(static_cast<std::uint32_t>(Shape::kTileCols), p.cols - t.first_column);
    return t;
  };
  auto issue = [&](std::uint32_t tile, int stage) {  // thread 0 only
    const Tile t = locate(tile);
    const std::uint32_t row_bytes = t.columns * kInBytes;
    mbarrier_arrive_expect_bytes(&tile_ready[stage], row_bytes * t.rows * kOperands);
    for (int operand = 0; operand < kOperands; ++operand) {
      for (std::uint32_t r = 0; r < t.rows; ++r) {
        bulk_copy_to_shared(
            stage_memory + stage * kTileBytes + operand * kOperandBytes + r * kRowBytes,
            p.input + (t.first_row + r) * p.input_row_bytes + operand * p.up_offset_bytes +
                static_cast<std::int64_t>(t.first_column) * kInBytes,
            row_bytes, &tile_ready[stage]);
      }
    }
  };

  if (p.release_at_start) allow_dependent_launch();
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStageCount; ++stage) mbarrier_init(&tile_ready[stage], 1);
    fence_barrier_init();
  }
  // As in the direct kernel: the input is the previous kernel's output. Every thread waits, as
  // every thread stores.
  wait_then_release(p.release_at_start);
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStageCount; ++stage) {
      const std::uint32_t tile = blockIdx.x + stage * gridDim.x;
      if (tile < num_tiles) issue(tile, stage);
    }
  }
  __syncthreads();

  const int lane = threadIdx.x % Shape::kLanes;
  const std::uint32_t group_index = threadIdx.x / Shape::kLanes;
  const std::uint32_t tile_row = group_index % kTileRows;
  const std::uint32_t tile_group = group_index / kTileRows;
  std::uint32_t iteration = 0;
  for (std::uint32_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x, ++iteration) {
    const int stage = iteration % kStageCount;
    const Tile t = locate(tile);
    mbarrier_wait(&tile_ready[stage], (iteration / kStageCount) & 1);

    const bool active = tile_row < t.rows && tile_group * kGroup < t.columns;
    const char* group_data = stage_memory + stage * kTileBytes + tile_row * kRowBytes +
                             tile_group * kGroup * kInBytes;
    float x[Shape::kVectors][kElementsPerVector] = {};
    if (active) {
#pragma unroll
      for (int j = 0; j < Shape::kVectors; ++j) {
        load8_values<kSiluMul, true>(
            InTag{}, group_data + (j * Shape::kLanes + lane) * kElementsPerVector * kInBytes,
            kOperandBytes, p, x[j]);
      }
    }
    __syncthreads();  // the stage is consumed: it may be refilled
    if (threadIdx.x == 0 && tile + kStageCount * gridDim.x < num_tiles) {
      issue(tile + kStageCount * gridDim.x, stage);
    }
    quantize_group_slice<OutTag, kGroup, Shape::kLanes, Shape::kVectors>(
        p, x, active, t.first_row + tile_row, t.first_column / kGroup + tile_group, lane);
  }
}

template <typename InTag, typename OutTag, int kGroup, bool kSiluMul>
void launch_pipelined(const KernelParams& p, int sm_count, int blocks_per_sm, bool dependent,
                      cudaStream_t stream, const char* op) {
  using Shape = PipelineShape<kGroup>;
  constexpr int kSharedBytes = pipeline_shared_bytes<InTag, kGroup, kSiluMul>();
  auto kernel = group_quant_pipelined<InTag, OutTag, kGroup, kSiluMul>;
  // Opting in to > 48 KB of dynamic shared memory is per device and kernel.
  check_cuda(opt_in_shared_bytes(reinterpret_cast<const void*>(kernel), kSharedBytes), op,
             "shared memory opt-in");
  // Up to 3 x 64 KB of stages per SM (228 KB available); fp32 inputs fit one 128 KB block.
  const int fitting_blocks = (220 * 1024) / kSharedBytes;
  const int blocks_on_sm = blocks_per_sm < fitting_blocks ? blocks_per_sm : fitting_blocks;
  const std::int64_t tiles =
      static_cast<std::int64_t>((p.rows + kTileRows - 1) / kTileRows) *
      ((p.cols + Shape::kTileCols - 1) / Shape::kTileCols);
  const std::int64_t blocks = std::min<std::int64_t>(tiles, std::int64_t{sm_count} * blocks_on_sm);
  KernelLaunch shape;
  shape.grid = dim3(static_cast<unsigned>(blocks));
  shape.threads = kThreads;
  shape.shared_bytes = kSharedBytes;
  shape.dependent = dependent;
  check_cuda(launch_kernel(kernel, p, shape, stream), op, "kernel launch");
}

}  // namespace

void launch_group_quant(const char* op, const GroupQuantParams& params, cudaStream_t stream) {
  const std::int64_t groups_per_row = params.cols / params.group_size;
  const std::int64_t total_groups = params.rows * groups_per_row;
  if (total_groups == 0) return;
  const std::int64_t element_bytes = static_cast<std::int64_t>(dtype_size(params.input_dtype));

  KernelParams p;
  p.input = static_cast<const char*>(params.input);
  p.output = static_cast<char*>(params.output);
  p.scales = params.scales;
  p.rows = static_cast<std::uint32_t>(params.rows);
  p.cols = static_cast<std::uint32_t>(params.cols);
  p.total_groups = static_cast<std::uint32_t>(total_groups);
  p.groups_per_row = UintDivisor(static_cast<std::uint32_t>(groups_per_row));
  p.input_row_bytes = params.input_row_stride * element_bytes;
  p.output_row_bytes = params.output_row_stride;  // 1-byte outputs
  p.scale_stride_row = params.scale_stride_row;
  p.scale_stride_group = params.scale_stride_group;
  p.eps = params.eps;
  p.amax_bound = params.amax_bound;
  p.qmax = params.output_dtype == DType::kFP8E4M3 ? kFP8E4M3Max : kInt8Max;
  p.power_of_two_scale = params.power_of_two_scale;
  p.up_offset_bytes = params.silu_mul ? params.cols * element_bytes : 0;
  p.clamp = params.clamp;
  p.limit = params.limit;
  p.release_at_start = quant_releases_at_start();

  const int sm_count = current_device_sm_count(op);
  const std::int64_t input_bytes = params.rows * params.cols * element_bytes * (params.silu_mul ? 2 : 1);
  const GroupQuantConfig config =
      choose_group_quant_config(op, input_bytes, total_groups, params.group_size,
                                params.silu_mul, sm_count);

  auto launch = [&](auto in_tag, auto out_tag, auto group, auto silu_mul) {
    using In = decltype(in_tag);
    using Out = decltype(out_tag);
    constexpr int kGroup = decltype(group)::value;
    constexpr bool kSiluMul = decltype(silu_mul)::value;
    if (config.kernel == GroupQuantKernel::kPipelined) {
      launch_pipelined<In, Out, kGroup, kSiluMul>(p, sm_count, config.blocks_per_sm,
                                                  params.dependent_launch, stream, op);
      return;
    }
    auto launch_direct = [&](auto vectors) {
      constexpr int kVectors = decltype(vectors)::value;
      const int lanes = kGroup / (kElementsPerVector * kVectors);
      const int groups_per_block = config.threads_per_block / lanes;
      const std::int64_t blocks = (total_groups + groups_per_block - 1) / groups_per_block;
      KernelLaunch shape;
      shape.grid = dim3(static_cast<unsigned>(blocks));
      shape.threads = static_cast<unsigned>(config.threads_per_block);
      shape.dependent = params.dependent_launch;
      check_cuda(launch_kernel(group_quant_direct<In, Out, kGroup, kVectors, kSiluMul>, p, shape,
                               stream),
                 op, "kernel launch");
    };
    // Wide lanes only where they pay: the SiLU source (quant_heuristics.cpp).
    if constexpr (kSiluMul) {
      if (config.vectors_per_lane == 4) {
        launch_direct(std::integral_constant<int, 4>{});
        return;
      }
      if (config.vectors_per_lane >= 2) {
        launch_direct(std::integral_constant<int, 2>{});
        return;
      }
    }
    launch_direct(std::integral_constant<int, 1>{});
  };
  dispatch_quantized_output(op, params.output_dtype, [&](auto out_tag) {
    dispatch_group_size(op, params.group_size, [&](auto group) {
      if (params.silu_mul) {
        dispatch_half_input(op, params.input_dtype, [&](auto in_tag) {
          launch(in_tag, out_tag, group, std::true_type{});
        });
      } else {
        dispatch_float_input(op, params.input_dtype, [&](auto in_tag) {
          launch(in_tag, out_tag, group, std::false_type{});
        });
      }
    });
  });
  check_launch(op);
}

}  // namespace lowbit::cuda
