// sm_90a block-scaled FP8 GEMM (DeepSeek-V3 recipe) on CUTLASS 4.x's blockwise-scaling collective:
// TMA loads, wgmma FP8 with each 128-deep K block's partial sum promoted into FP32 registers
// scaled by As[m, kb] * Bs[n / 128, kb], warp-specialized producer/consumers, a stream-K tile
// scheduler. Two orientations:
//   prefill (kSwapAB = false): CUTLASS A = activations [M, K], B = weights [N, K];
//   decode  (kSwapAB = true):  CUTLASS A = weights, B = activations, D stored transposed, so a
//                              small M sits in wgmma's N (16..256) instead of padding M to 64.
// Each instantiation lives in its own translation unit (sm90_block_fp8_gemm_<config>.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "../common/cutlass_run.cuh"
#include "block_gemm_launch.h"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/detail/blockwise_scale_layout.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"

namespace lowbit::cuda::block_gemm {

using namespace cute;

// kPingpong: two consumer warpgroups on separate tiles (one's promotion overlaps the other's
// MMAs) instead of both on one tile (cooperative).
template <class ElementD_, int kTileMN_A, int kTileMN_B, bool kSwapAB_, bool kActScalesMMajor_,
          bool kPingpong = false>
struct BlockFp8Gemm {
  using ElementD = ElementD_;
  static constexpr bool kSwapAB = kSwapAB_;
  static constexpr bool kActScalesMMajor = kActScalesMMajor_;
  using Fp8 = cutlass::float_e4m3_t;
  using TileShape = Shape<Int<kTileMN_A>, Int<kTileMN_B>, _128>;
  // NOTE: a 1x2 cluster multicasts the A tile to two CTAs; swap-AB tiles are too narrow in N
  // for the multicast to pay, and a 1x1 cluster lets stream-K place every unit freely.
  using ClusterShape = cute::conditional_t<kSwapAB, Shape<_1, _1, _1>, Shape<_1, _2, _1>>;
  using MainloopSchedule =
      cute::conditional_t<kPingpong, cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8Blockwise,
                          cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8Blockwise>;
  // NOTE: CUTLASS's pingpong kernel has no stream-K; it uses the persistent data-parallel one.
  using TileScheduler = cute::conditional_t<kPingpong, cutlass::gemm::PersistentScheduler,
                                            cutlass::gemm::StreamKScheduler>;
  using EpilogueSchedule = cute::conditional_t<kPingpong, cutlass::epilogue::TmaWarpSpecialized,
                                               cutlass::epilogue::TmaWarpSpecializedCooperative>;

  // Scale granularity (M/N, K) of CUTLASS's A and B operands: activations 1 x 128, weights
  // 128 x 128. Weight scales are K-major ([N / 128, K / 128] row-major).
  static constexpr auto kMajorAct = kActScalesMMajor ? cute::GMMA::Major::MN : cute::GMMA::Major::K;
  static constexpr int kGranA = kSwapAB ? 128 : 1;
  static constexpr int kGranB = kSwapAB ? 1 : 128;
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<
      kGranA, kGranB, 128, kSwapAB ? cute::GMMA::Major::K : kMajorAct,
      kSwapAB ? kMajorAct : cute::GMMA::Major::K>;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());

  // D [M, N] row-major; in the swapped problem (N x M) that is column-major.
  using StrideD = cute::conditional_t<kSwapAB, Stride<_1, int64_t, int64_t>,
                                      Stride<int64_t, _1, int64_t>>;
  static constexpr int kAlignD = 16 / sizeof(ElementD);

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, StrideD, kAlignD,
      ElementD, StrideD, kAlignD, EpilogueSchedule>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Fp8,
      cute::tuple<cutlass::layout::RowMajor, LayoutSFA>, 16, Fp8,
      cute::tuple<cutlass::layout::ColumnMajor, LayoutSFB>, 16, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, TileScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  static typename Gemm::Arguments arguments(const BlockFp8GemmProblem& p, const float* a_scales,
                                            std::int64_t a_scale_stride_m,
                                            std::int64_t a_scale_stride_k) {
    [[maybe_unused]] const int m = static_cast<int>(p.m), n = static_cast<int>(p.n),
                               k = static_cast<int>(p.k);
    const int k_blocks = static_cast<int>((p.k + 127) / 128);
    const int n_blocks = static_cast<int>((p.n + 127) / 128);
    // Activation scales: ((1, M), (128, K/128)) with the caller's strides.
    auto act_scales = [&] {
      if constexpr (kActScalesMMajor) {
        // NOTE: TMA loads M-major scales, and CUTLASS requires their extent along M to be a
        // multiple of 16 bytes too: describe the padded rows (round_up(M, 4) <= the row
        // stride). Scales of rows >= M only meet zero-filled A rows and are never stored.
        const int m_padded = (m + 3) / 4 * 4;
        return make_layout(make_shape(make_shape(_1{}, m_padded), make_shape(_128{}, k_blocks), 1),
                           make_stride(make_stride(_0{}, _1{}),
                                       make_stride(_0{}, int(a_scale_stride_k)), 0));
      } else {
        return make_layout(make_shape(make_shape(_1{}, m), make_shape(_128{}, k_blocks), 1),
                           make_stride(make_stride(_0{}, int(a_scale_stride_m)),
                                       make_stride(_0{}, _1{}), 0));
      }
    }();
    auto weight_scales =
        make_layout(make_shape(make_shape(_128{}, n_blocks), make_shape(_128{}, k_blocks), 1),
                    make_stride(make_stride(_0{}, k_blocks), make_stride(_0{}, _1{}), 0));
    using StrideA = typename Kernel::StrideA;
    using StrideB = typename Kernel::StrideB;
    typename Gemm::Arguments args;
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.hw_info.sm_count = p.sm_count;
    [[maybe_unused]] auto* act = static_cast<const Fp8*>(p.a);
    [[maybe_unused]] auto* weight = static_cast<const Fp8*>(p.b);
    if constexpr (kSwapAB) {
      args.problem_shape = {n, m, k, 1};
      args.mainloop = {weight, StrideA{p.ldb, _1{}, 0}, act, StrideB{p.lda, _1{}, 0},
                       p.b_scales, weight_scales, a_scales, act_scales};
      args.epilogue.dD = StrideD{_1{}, p.ldd, 0};
    } else {
      args.problem_shape = {m, n, k, 1};
      args.mainloop = {act, StrideA{p.lda, _1{}, 0}, weight, StrideB{p.ldb, _1{}, 0}, a_scales,
                       act_scales, p.b_scales, weight_scales};
      args.epilogue.dD = StrideD{p.ldd, _1{}, 0};
    }
    args.epilogue.ptr_D = static_cast<ElementD*>(p.d);
    args.epilogue.dC = args.epilogue.dD;
    args.epilogue.thread.alpha = 1.0f;
    args.epilogue.thread.beta = 0.0f;
    // Stream-K's defaults: heuristic decomposition (data-parallel when the tiles fill
    // the GPU, else stream-K or split-K) and deterministic reduction of partials, so reruns
    // give identical bits.
    return args;
  }

  static std::size_t workspace_bytes(const BlockFp8GemmProblem& p) {
    return Gemm::get_workspace_size(arguments(p, p.a_scales, p.a_scale_stride_m,
                                              p.a_scale_stride_k));
  }

  static void run(const BlockFp8GemmProblem& p, const float* a_scales, std::int64_t stride_m,
                  std::int64_t stride_k, void* workspace, cudaStream_t stream) {
    // Never a dependent launch: these kernels do not wait for the previous one. With
    // CUTLASS_ENABLE_GDC_FOR_SM90, CUTLASS 4.2's stream-K scheduler does not compile and the
    // cooperative kernel's block-scale loads (MainloopAux warp) would still not wait.
    run_cutlass_gemm<Gemm>("block_fp8_mm", arguments(p, a_scales, stride_m, stride_k), workspace,
                           stream, p.m, p.n, p.k, /*dependent=*/false);
  }
};

}  // namespace lowbit::cuda::block_gemm
