// Probe (not part of the library): how fast the copy engine streams a K-major fp8 weight [N, K]
// into shared-memory rings with no math at all, by grid shape, ring depth, cluster launch, box
// shape and which SMs do the work, against a plain read and cuBLASLt's FP8 GEMM at M = 1 on the
// same bytes (docs/perf/scaled_gemm.md, "Fewer, larger stages in `gemv_tma`").
//
// Every variant is the stream alone: thread 0 of a block requests `stages` boxes of 64 rows,
// waits for the oldest, re-requests it, until its rows' K range is read (gemv_tma's ring with the
// wgmma and the block barrier removed). Timed held, sampled in turn, inputs rotated over 2.5x L2
// (bench/harness.cuh).
//
// Build (from the repository root; nvcc 13, sm_90a):
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//     -Iinclude -Ibench -Isrc \
//     bench/probes/tma_stream_probe.cu bench/harness.cu bench/stream_hold.cu \
//     bench/cublaslt_gemm.cu src/core/error.cpp -lcublasLt -o tma_stream_probe
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cublaslt_gemm.cuh"
#include "cuda/common/bulk_copy.cuh"
#include "cuda/common/gemv_tma.cuh"
#include "cuda/common/kernel_launch.cuh"
#include "cuda/common/tensor_map.cuh"
#include "harness.cuh"

namespace {

using namespace lowbit;
using namespace lowbit::cuda;
using namespace lowbit::bench;

constexpr int kRows = 64;
constexpr int kMaxStages = 32;

__device__ __forceinline__ unsigned sm_id() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// How a copy reads its bytes.
enum class Copy {
  k2d,  // one box of box_k bytes x 64 rows per K step
  k3d,  // a [steps][N][128] view of the weight: a box is 64 rows x `steps_per_copy` steps
  k1d,  // 1D bulk copy of a row block's contiguous bytes (row stride K)
};

struct StreamParams {
  CUtensorMap map;              // [N, K] bytes (2D) or its [K / 128][N][128] view (3D)
  const std::uint8_t* weights;  // [N, K], row stride K (for the 1D copies)
  std::int64_t k;
  int copy_bytes;
  int copies;            // copies per row block (over this split)
  int copies_per_stage;  // completing on one barrier
  int stages;
  int steps_per_copy;    // K steps (box_k bytes) per copy
  int box_k;
  Copy kind;
  bool evict_first;
  bool test_wait;         // spin on mbarrier.test_wait instead of try_wait
  bool whole_block;       // every thread waits for each stage, a block barrier before its refill
  int work_items;         // row blocks (64 rows each)
  const int* work_of_sm;  // non-null: a block works on item work_of_sm[smid] (-1: idle)
  unsigned* sink;
};

__device__ __forceinline__ void load_box_3d(const CUtensorMap& map, std::uint32_t destination,
                                            std::uint64_t* barrier, int step, int row0,
                                            std::uint64_t policy, bool hinted) {
  if (hinted) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
        " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(destination),
        "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(0), "r"(row0), "r"(step),
        "r"(shared_address(barrier)), "l"(policy)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(destination),
        "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(0), "r"(row0), "r"(step),
        "r"(shared_address(barrier))
        : "memory");
  }
}

__device__ __forceinline__ void test_wait_spin(std::uint64_t* barrier, std::uint32_t phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "spin_again:\n"
      "mbarrier.test_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra spin_again;\n"
      "}\n" ::"r"(shared_address(barrier)),
      "r"(phase)
      : "memory");
}

// The stream alone: a ring of `stages` stages of `copies_per_stage` copies each; thread 0 waits
// for the oldest stage and re-requests it.
__global__ void __launch_bounds__(128) ring_stream_kernel(const __grid_constant__ StreamParams p) {
  extern __shared__ unsigned char shared[];
  __shared__ std::uint64_t full[kMaxStages];
  if (!p.whole_block && threadIdx.x != 0) return;
  int work = blockIdx.x;
  if (p.work_of_sm != nullptr) work = p.work_of_sm[sm_id()];
  if (work < 0 || work >= p.work_items) return;
  const std::uint32_t raw = shared_address(shared);
  const std::uint32_t ring = (raw + 1023) & ~1023u;
  const int stage_bytes = p.copy_bytes * p.copies_per_stage;
  const int first_copy = blockIdx.y * p.copies;  // this split's copies
  const int stage_count = p.copies / p.copies_per_stage;
  std::uint64_t policy = 0;
  if (p.evict_first) policy = gemv_tma::evict_first_policy();
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) mbarrier_init(&full[s], 1);
    fence_barrier_init();
    if (p.kind != Copy::k1d) prefetch_tensor_map(p.map);
  }
  if (p.whole_block) __syncthreads();
  auto request = [&](int i) {
    const int s = i % p.stages;
    mbarrier_arrive_expect_bytes(&full[s], stage_bytes);
    for (int c = 0; c < p.copies_per_stage; ++c) {
      const int copy = first_copy + i * p.copies_per_stage + c;
      const std::uint32_t destination = ring + s * stage_bytes + c * p.copy_bytes;
      if (p.kind == Copy::k1d) {
        const std::uint8_t* source = p.weights + static_cast<std::int64_t>(work) * kRows * p.k +
                                     static_cast<std::int64_t>(copy) * p.copy_bytes;
        bulk_copy_to_shared(shared + (destination - raw), source, p.copy_bytes, &full[s]);
      } else if (p.kind == Copy::k3d) {
        load_box_3d(p.map, destination, &full[s], copy * p.steps_per_copy, work * kRows, policy,
                    p.evict_first);
      } else if (p.evict_first) {
        gemv_tma::load_box_with_policy(p.map, destination, &full[s], copy * p.box_k, work * kRows,
                                       policy);
      } else {
        gemv_tma::load_box(p.map, destination, &full[s], copy * p.box_k, work * kRows);
      }
    }
  };
  const int prologue = min(p.stages, stage_count);
  if (threadIdx.x == 0) {
    for (int i = 0; i < prologue; ++i) request(i);
  }
  unsigned word = 0;
  for (int i = 0; i < stage_count; ++i) {
    const int s = i % p.stages;
    if (p.test_wait) {
      test_wait_spin(&full[s], (i / p.stages) & 1);
    } else {
      mbarrier_wait(&full[s], (i / p.stages) & 1);
    }
    const unsigned char* stage = shared + (ring - raw) + s * stage_bytes;
    word ^= *reinterpret_cast<const unsigned*>(stage + 4 * threadIdx.x);
    if (p.whole_block) __syncthreads();
    if (threadIdx.x == 0 && i + p.stages < stage_count) request(i + p.stages);
  }
  if (word == 0x9E3779B9u) p.sink[blockIdx.x] = word;
}

struct Shape {
  std::int64_t n, k;
  int splits;  // gemv_tma's K split at M = 1
};

struct Probe {
  std::string name;
  int splits;            // grid y: K split
  int stages;
  Copy kind;
  int box_k;             // 128 (swizzled) or 256 (2D, unswizzled)
  int steps_per_copy;    // 3D: 128-byte K steps per box; 1D: per copy
  int copies_per_stage;
  bool evict_first;
  bool test_wait = false;
  bool whole_block = false;
  int cluster_x = 1;     // cluster along the row blocks
  int sm_selection = 0;  // 0: none; 1: even SMs; 2: SMs 0..63 (grid of one block per SM)
};

// The weight [N, K] viewed as [K / 128][N][128]: a box of 128 bytes x 64 rows x `steps` lands
// as `steps` consecutive 8 KB stages of the 2D layout, each swizzled alike.
bool encode_step_boxes(CUtensorMap* map, const std::uint8_t* base, std::int64_t n,
                       std::int64_t k, std::uint32_t steps) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  const cuuint64_t dims[3] = {128, static_cast<cuuint64_t>(n), static_cast<cuuint64_t>(k / 128)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(k), 128};
  const cuuint32_t box[3] = {128, kRows, steps};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  return encode != nullptr &&
         encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<std::uint8_t*>(base), dims,
                strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

std::vector<Probe> probes_for(int splits, bool small_grid) {
  const Copy k2d = Copy::k2d, k3d = Copy::k3d;
  std::vector<Probe> probes = {
      {"2d x 4 st (gemv_tma's stream)", splits, 4, k2d, 128, 1, 1, true},
      {"2d x 4 st, test_wait", splits, 4, k2d, 128, 1, 1, true, true},
      {"2d x 4 st, whole block", splits, 4, k2d, 128, 1, 1, true, false, true},
      {"2d x 8 st", splits, 8, k2d, 128, 1, 1, true},
      {"2d x 8 st, test_wait", splits, 8, k2d, 128, 1, 1, true, true},
      {"2d, 2 boxes a stage x 4 st", splits, 4, k2d, 128, 1, 2, true},
      {"2d, 2 boxes a stage x 4 st, whole block", splits, 4, k2d, 128, 1, 2, true, false, true},
      {"2d, 2 boxes a stage x 3 st, whole block", splits, 3, k2d, 128, 1, 2, true, false, true},
      {"2d, 4 boxes a stage x 2 st, whole block", splits, 2, k2d, 128, 1, 4, true, false, true},
      {"3d 2 steps x 4 st", splits, 4, k3d, 128, 2, 1, true},
      {"3d 4 steps x 2 st", splits, 2, k3d, 128, 4, 1, true},
  };
  if (small_grid) {
    probes.push_back({"64 blocks: 2d x 16 st", 1, 16, k2d, 128, 1, 1, true});
    probes.push_back({"64 blocks: 2d x 16 st, test_wait", 1, 16, k2d, 128, 1, 1, true, true});
    probes.push_back({"64 blocks: 2d, 2 boxes a stage x 8 st", 1, 8, k2d, 128, 1, 2, true});
    probes.push_back({"64 blocks: 2d, 4 boxes a stage x 4 st", 1, 4, k2d, 128, 1, 4, true});
    probes.push_back(
        {"64 blocks: 2d, 4 boxes a stage x 4 st, w b", 1, 4, k2d, 128, 1, 4, true, false, true});
    probes.push_back(
        {"64 blocks: 2d, 4 boxes a stage x 3 st, w b", 1, 3, k2d, 128, 1, 4, true, false, true});
    probes.push_back({"64 blocks: 3d 4 steps x 4 st", 1, 4, k3d, 128, 4, 1, true});
    probes.push_back(
        {"128 blocks (split 2): 2d, 4 boxes x 3 st, w b", 2, 3, k2d, 128, 1, 4, true, false, true});
    // Where the blocks run: clusters of 4 along the rows, or one block per SM with only the
    // even SMs, or only SMs 0..63, working.
    probes.push_back({"64 blocks: 2d x 16 st, cluster 4", 1, 16, k2d, 128, 1, 1, true, false,
                      false, 4});
    probes.push_back({"64 blocks: 2d x 16 st, even SMs", 1, 16, k2d, 128, 1, 1, true, false,
                      false, 1, 1});
    probes.push_back({"64 blocks: 2d x 16 st, SMs 0..63", 1, 16, k2d, 128, 1, 1, true, false,
                      false, 1, 2});
  }
  return probes;
}

}  // namespace

int main() {
  int device = 0, sms = 0, l2 = 0;
  check(cudaGetDevice(&device), "device");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, device), "properties");
  sms = prop.multiProcessorCount;
  l2 = prop.l2CacheSize;
  std::printf("device %s, %d SMs, L2 %d MB\n", prop.name, sms, l2 >> 20);
  const double copy_gbps = measure_copy_gbps(20);
  std::printf("copy %.0f GB/s\n", copy_gbps);
  check(cudaFuncSetAttribute(ring_stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             200 * 1024),
        "smem opt-in");

  // The weights and gemv_tma's K split for them at M = 1 (choose_plan).
  const std::vector<Shape> shapes = {{4096, 4096, 4}, {14336, 4096, 1}, {4096, 14336, 4},
                                     {7168, 2048, 2}};
  for (const Shape& shape : shapes) {
    const std::int64_t bytes = shape.n * shape.k;
    const int sets = rotation_sets(bytes, l2);
    DeviceMemory weights(static_cast<std::size_t>(bytes * sets));
    fill_random_bytes(weights.get(), bytes * sets, 7, 0xF7);
    DeviceMemory x(static_cast<std::size_t>(shape.k)), y(static_cast<std::size_t>(shape.n * 2));
    fill_random_bytes(x.get(), shape.k, 11, 0xF7);
    DeviceMemory scales(64), sink(4096 * 4), work_table(4 * 1024);
    fill_scales(static_cast<float*>(scales.get()), 2, 1.0f);
    const float* one = static_cast<const float*>(scales.get());
    CublasLtFp8Gemm lt(1, shape.n, shape.k, false, true, one, one, false);
    // SM selections: item i on the i-th even SM, or on SM i.
    std::vector<int> table(512, -1);
    for (int i = 0; i < 64; ++i) table[2 * i] = i, table[256 + i] = i;
    check(cudaMemcpy(work_table.get(), table.data(), table.size() * 4, cudaMemcpyHostToDevice),
          "table");

    const int row_blocks = static_cast<int>(shape.n / kRows);
    const std::vector<Probe> probes = probes_for(shape.splits, row_blocks == 64);
    std::vector<CUtensorMap> maps_128(sets), maps_256(sets), maps_3d2(sets), maps_3d4(sets);
    for (int s = 0; s < sets; ++s) {
      const std::uint8_t* base = static_cast<const std::uint8_t*>(weights.get()) + s * bytes;
      if (!encode_matrix_map(&maps_128[s], CU_TENSOR_MAP_DATA_TYPE_UINT8, base, shape.n, shape.k,
                             shape.k, 128, kRows, CU_TENSOR_MAP_SWIZZLE_128B,
                             CU_TENSOR_MAP_L2_PROMOTION_NONE) ||
          !encode_matrix_map(&maps_256[s], CU_TENSOR_MAP_DATA_TYPE_UINT8, base, shape.n, shape.k,
                             shape.k, 256, kRows, CU_TENSOR_MAP_SWIZZLE_NONE,
                             CU_TENSOR_MAP_L2_PROMOTION_NONE) ||
          !encode_step_boxes(&maps_3d2[s], base, shape.n, shape.k, 2) ||
          !encode_step_boxes(&maps_3d4[s], base, shape.n, shape.k, 4)) {
        std::fprintf(stderr, "tensor map refused\n");
        return 1;
      }
    }

    std::vector<Variant> variants;
    std::vector<std::string> names;
    variants.push_back({[&](int set) {
      lt.run(static_cast<const std::uint8_t*>(weights.get()) + set * bytes, one, x.get(), one,
             y.get());
    }});
    names.push_back("cuBLASLt fp8 M=1 (with math)");
    for (const Probe& probe : probes) {
      const int steps = static_cast<int>(shape.k / probe.box_k);
      const int copies = steps / probe.splits / probe.steps_per_copy;
      if (steps % (probe.splits * probe.steps_per_copy * probe.copies_per_stage) != 0) {
        std::printf("skipping %s: steps do not divide\n", probe.name.c_str());
        continue;
      }
      const int copy_bytes = probe.box_k * kRows * probe.steps_per_copy;
      variants.push_back({[&, probe, copies, copy_bytes](int set) {
        const CUtensorMap& map = probe.kind == Copy::k3d
                                     ? (probe.steps_per_copy == 2 ? maps_3d2[set] : maps_3d4[set])
                                     : (probe.box_k == 128 ? maps_128[set] : maps_256[set]);
        int* table = nullptr;
        if (probe.sm_selection != 0) {
          table = static_cast<int*>(work_table.get()) + (probe.sm_selection - 1) * 256;
        }
        const StreamParams p{map,
                             static_cast<const std::uint8_t*>(weights.get()) + set * bytes,
                             shape.k,
                             copy_bytes,
                             copies,
                             probe.copies_per_stage,
                             probe.stages,
                             probe.steps_per_copy,
                             probe.box_k,
                             probe.kind,
                             probe.evict_first,
                             probe.test_wait,
                             probe.whole_block,
                             row_blocks,
                             table,
                             static_cast<unsigned*>(sink.get())};
        KernelLaunch launch;
        launch.grid = dim3(probe.sm_selection != 0 ? sms : row_blocks, probe.splits, 1);
        launch.threads = 128;
        launch.shared_bytes =
            static_cast<std::size_t>(probe.stages) * copy_bytes * probe.copies_per_stage + 1024;
        if (probe.sm_selection != 0) {
          launch.shared_bytes = std::max<std::size_t>(launch.shared_bytes, 120 * 1024);
        }
        launch.cluster = dim3(probe.cluster_x, 1, 1);
        check(launch_kernel(ring_stream_kernel, p, launch, bench_stream()), "launch");
      }});
      names.push_back(probe.name);
    }

    const double read_us = measure_read_us(bytes, l2, 30, ReadLaunch::kStream);
    const std::vector<double> us = interleaved_median_us(variants, sets, 30);
    std::printf("\n%lld x %lld (%.1f MB, split %d): plain read %.2f us (%.1f%% of copy)\n",
                static_cast<long long>(shape.n), static_cast<long long>(shape.k), bytes / 1e6,
                shape.splits, read_us, 100.0 * bytes / (read_us * 1e3) / copy_gbps);
    for (std::size_t v = 0; v < variants.size(); ++v) {
      std::printf("  %-42s %7.2f us  %5.1f%% of copy\n", names[v].c_str(), us[v],
                  100.0 * bytes / (us[v] * 1e3) / copy_gbps);
    }
    std::fflush(stdout);
  }
  return 0;
}
