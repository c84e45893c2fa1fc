// cuBLASLt baselines (see cublaslt_gemm.cuh). Column-major view: D[N, M] = op(A)[N, K] . B[K, M]
// with A = w ([N, K] row-major is [K, N] column-major, transposed) and B = x.
#include "cublaslt_gemm.cuh"

#include <string>
#include <vector>

namespace lowbit::bench {

namespace {

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw Error("cublasLt baseline", what, "CUBLAS_STATUS_SUCCESS",
                std::to_string(static_cast<int>(status)));
  }
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                                   std::int64_t batch) {
  cublasLtMatrixLayout_t layout;
  check_lt(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, rows), "layout");
  if (batch > 1) {
    const int count = static_cast<int>(batch);
    const std::int64_t stride = rows * cols;
    check_lt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                              sizeof(count)), "batch count");
    check_lt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride, sizeof(stride)), "batch stride");
  }
  return layout;
}

}  // namespace

CublasLtPlan::CublasLtPlan(bool int32_compute) : int32_compute_(int32_compute) {
  check_lt(cublasLtCreate(&handle_), "cublasLtCreate");
  check_lt(cublasLtMatmulDescCreate(&desc_, int32_compute ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                                    int32_compute ? CUDA_R_32I : CUDA_R_32F), "desc");
  const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                          sizeof(transpose)), "transa");
  check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof(none)),
           "transb");
  check_lt(cublasLtMatmulPreferenceCreate(&preference_), "preference");
  const std::size_t bytes = kWorkspaceBytes;
  check_lt(cublasLtMatmulPreferenceSetAttribute(preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &bytes, sizeof(bytes)), "workspace preference");
  workspace_ = std::make_unique<DeviceMemory>(kWorkspaceBytes);
}

CublasLtPlan::~CublasLtPlan() {
  cublasLtMatmulPreferenceDestroy(preference_);
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (d_) cublasLtMatrixLayoutDestroy(d_);
  cublasLtMatmulDescDestroy(desc_);
  cublasLtDestroy(handle_);
}

void CublasLtPlan::choose_algorithm() {
  int found = 0;
  check_lt(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, d_, d_, preference_, 1,
                                          &heuristic_, &found), "heuristic");
  if (found == 0) throw Error("cublasLt baseline", "algorithm", "one for this problem", "none");
}

void CublasLtPlan::matmul(const void* a, const void* b, void* d) const {
  const float one = 1.0f, zero = 0.0f;
  const std::int32_t one_i = 1, zero_i = 0;
  const void* alpha = int32_compute_ ? static_cast<const void*>(&one_i) : &one;
  const void* beta = int32_compute_ ? static_cast<const void*>(&zero_i) : &zero;
  check_lt(cublasLtMatmul(handle_, desc_, alpha, a, a_, b, b_, beta, d, d_, d, d_, &heuristic_.algo,
                          workspace_->get(), kWorkspaceBytes, bench_stream()),
           "cublasLtMatmul");
}

CublasLtBf16Gemm::CublasLtBf16Gemm(std::int64_t m, std::int64_t n, std::int64_t k,
                                   std::int64_t batch) {
  a_ = make_layout(CUDA_R_16BF, k, n, batch);
  b_ = make_layout(CUDA_R_16BF, k, m, batch);
  d_ = make_layout(CUDA_R_16BF, n, m, batch);
  choose_algorithm();
}

CublasLtFp8Gemm::CublasLtFp8Gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool block_scaled,
                                 bool weights_as_a, const float* w_scales, const float* x_scales,
                                 bool fast_accum)
    : weights_as_a_(weights_as_a) {
  const std::int8_t fast = fast_accum ? 1 : 0;
  check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)),
           "fast accumulation");
  const std::int32_t weight_mode = block_scaled ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                                : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  const std::int32_t act_mode = block_scaled ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                                             : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  const std::int32_t a_mode = weights_as_a ? weight_mode : act_mode;
  const std::int32_t b_mode = weights_as_a ? act_mode : weight_mode;
  check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode,
                                          sizeof(a_mode)), "a scale mode");
  check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode,
                                          sizeof(b_mode)), "b scale mode");
  set_scales(w_scales, x_scales);
  const std::int64_t rows_a = weights_as_a ? n : m, rows_b = weights_as_a ? m : n;
  a_ = make_layout(CUDA_R_8F_E4M3, k, rows_a, 1);
  b_ = make_layout(CUDA_R_8F_E4M3, k, rows_b, 1);
  d_ = make_layout(CUDA_R_16BF, rows_a, rows_b, 1);
  choose_algorithm();
}

CublasLtInt8Gemm::CublasLtInt8Gemm(std::int64_t m, std::int64_t n, std::int64_t k)
    : CublasLtPlan(true) {
  a_ = make_layout(CUDA_R_8I, k, n, 1);
  b_ = make_layout(CUDA_R_8I, k, m, 1);
  d_ = make_layout(CUDA_R_32I, n, m, 1);
  choose_algorithm();
}

void CublasLtFp8Gemm::run(const void* w, const float* w_scales, const void* x,
                          const float* x_scales, void* y) const {
  set_scales(w_scales, x_scales);
  matmul(weights_as_a_ ? w : x, weights_as_a_ ? x : w, y);
}

void CublasLtFp8Gemm::set_scales(const float* w_scales, const float* x_scales) const {
  const float* a_scales = weights_as_a_ ? w_scales : x_scales;
  const float* b_scales = weights_as_a_ ? x_scales : w_scales;
  check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scales,
                                          sizeof(a_scales)), "a scale pointer");
  check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scales,
                                          sizeof(b_scales)), "b scale pointer");
}

double measure_cublaslt_fp8_tflops(int samples) {
  constexpr std::int64_t kSize = 8192;
  std::vector<std::uint8_t> codes(kSize * kSize);
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (std::uint8_t& code : codes) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    code = static_cast<std::uint8_t>(state >> 56) & 0xF7;  // clears the NaN pattern 0x7F/0xFF
  }
  DeviceMemory a(codes.size()), b(codes.size()), d(kSize * kSize * 2), scale(sizeof(float));
  check(cudaMemcpy(a.get(), codes.data(), codes.size(), cudaMemcpyHostToDevice), "copy");
  check(cudaMemcpy(b.get(), codes.data(), codes.size(), cudaMemcpyHostToDevice), "copy");
  const float one = 1.0f;
  check(cudaMemcpy(scale.get(), &one, sizeof(one), cudaMemcpyHostToDevice), "copy");
  const auto* s = static_cast<const float*>(scale.get());
  const CublasLtFp8Gemm gemm(kSize, kSize, kSize, false, true, s, s);
  const Timing t = time_launches([&](int) { gemm.run(a.get(), s, b.get(), s, d.get()); }, 1, samples);
  return 2.0 * kSize * kSize * kSize / (t.median_ms * 1e-3) / 1e12;
}

}  // namespace lowbit::bench
