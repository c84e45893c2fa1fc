// NVFP4 on the GPU: the quantizer and dequantizer bit for bit against the CPU reference, and the
// dense and 2:4-sparse GEMVs against (a) the CPU reference and (b) dequantize-then-matmul
// (nvfp4_dequantize_weight on the GPU, then a double-precision matmul here), within the tolerance
// below, for the MoE shapes of Qwen3-30B-A3B, DeepSeek-V3 and Qwen3-Next-80B-A3B with their real
// expert counts; 2:4 against dense on the pruned codes within the same tolerance; CUDA-graph
// replay with a new routing; programmatic dependent launch behind a kernel that writes the
// routing and the activations late. Outputs are poisoned with NaN before every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/device_buffer.cuh"
#include "common/slow_producer.cuh"
#include "common/test_data.h"
#include "lowbit/formats.h"
#include "lowbit/nvfp4.h"
#include "../../src/cuda/nvfp4/nvfp4_gemv_config.h"

namespace lowbit {
namespace {

using testing::DeviceBuffer;
using Bytes = std::vector<std::uint8_t>;

// GEMV tolerance (docs/nvfp4.md): |gpu - y| <= 2^-8 |y| + 2^-12 * sum_k |x_k * w_k| against the
// unrounded double y of dequantize-then-matmul, and 2^-7 |y| + the same sum term against the CPU
// reference. 2^-8 |y|: the kernel rounds to bf16 (half an ulp, at most 2^-8 relative); against
// the reference, which rounds too, the two may land one full ulp (2^-7 relative) apart.
// 2^-12 * sum |terms|:
// the tensor cores' fp32 accumulation over K <= 7168 products in an order unlike the
// reference's (a sum's rounding error grows with the sum of the magnitudes of its terms; the
// worst case K * 2^-24 is 2^-11.2 here, the typical one far below). A misplaced weight moves
// the result by a term of size ~ sum / K for every output, far beyond this bound in aggregate;
// the test also requires the mean error to stay below 2^-16 * sum.
constexpr double kRelativeTolerance = 1.0 / 256;
constexpr double kReferenceRelativeTolerance = 1.0 / 128;
constexpr double kSumTolerance = 1.0 / 4096;

std::uint64_t salt = 9000;

#define EXPECT_CUDA(call) EXPECT_EQ((call), cudaSuccess) << #call

// fn(i) for i in [0, count), spread over the host's cores.
void parallel_each(std::int64_t count, const std::function<void(std::int64_t)>& fn) {
  testing::parallel_for(count * 4096, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = (begin + 4095) / 4096; i * 4096 < end && i < count; ++i) fn(i);
  });
}

Bytes random_bytes(std::size_t n, std::mt19937_64& rng) {
  Bytes b(n);
  for (auto& v : b) v = static_cast<std::uint8_t>(rng());
  return b;
}

// e4m3 block scales 2^-4 .. 2^4 with random mantissas (no NaN codes).
Bytes random_scale_codes(std::size_t n, std::mt19937_64& rng) {
  Bytes b(n);
  std::uniform_int_distribution<int> code(0x18, 0x5F);
  for (auto& v : b) v = static_cast<std::uint8_t>(code(rng)) | static_cast<std::uint8_t>(rng() & 0x80);
  return b;
}

// ---- quantizer ---------------------------------------------------------------------------------

void expect_quantizer_matches(std::int64_t rows, std::int64_t cols, DType dtype, bool given_global) {
  SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " " + dtype_name(dtype) +
               (given_global ? " given global" : ""));
  const std::vector<std::uint8_t> w = testing::random_activations(dtype, rows, cols, cols, ++salt);
  float global = 0.0123f;
  Bytes packed(rows * cols / 2, 0xEE), scales(rows * cols / 16, 0xEE);
  Nvfp4QuantizeWeightArgs host;
  host.weight = TensorView::contiguous(const_cast<std::uint8_t*>(w.data()), dtype, {rows, cols});
  host.packed = TensorView::contiguous(packed.data(), DType::kUInt8, {rows, cols / 2});
  host.block_scales = TensorView::contiguous(scales.data(), DType::kFP8E4M3, {rows, cols / 16});
  host.global_scale = TensorView::contiguous(&global, DType::kFP32, {1});
  host.global_scale_is_input = given_global;
  nvfp4_quantize_weight(host);

  DeviceBuffer d_w(w.size()), d_packed(packed.size()), d_scales(scales.size()), d_global(4),
      d_workspace(nvfp4_quantize_weight_workspace_bytes());
  d_w.upload(w);
  d_packed.fill_byte(0xEE);
  d_scales.fill_byte(0xFF);
  const float initial_global = 0.0123f;
  d_global.upload(std::vector<float>{initial_global});
  Nvfp4QuantizeWeightArgs dev = host;
  dev.weight = TensorView::contiguous(d_w.data(), dtype, {rows, cols}, Device::kCUDA);
  dev.packed = TensorView::contiguous(d_packed.data(), DType::kUInt8, {rows, cols / 2}, Device::kCUDA);
  dev.block_scales = TensorView::contiguous(d_scales.data(), DType::kFP8E4M3, {rows, cols / 16}, Device::kCUDA);
  dev.global_scale = TensorView::contiguous(d_global.data(), DType::kFP32, {1}, Device::kCUDA);
  dev.workspace = TensorView::contiguous(d_workspace.data(), DType::kUInt8, {4}, Device::kCUDA);
  nvfp4_quantize_weight(dev);
  LOWBIT_TEST_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(d_global.download<float>()[0], global);
  EXPECT_EQ(d_scales.download<std::uint8_t>(), scales);
  EXPECT_EQ(d_packed.download<std::uint8_t>(), packed);

  // Dequantization, fp32 and bf16, bit for bit.
  for (DType out_dtype : {DType::kFP32, DType::kBF16}) {
    const std::size_t bytes = rows * cols * dtype_size(out_dtype);
    Bytes expected(bytes, 0xEE);
    Nvfp4DequantizeWeightArgs d;
    d.packed = host.packed;
    d.block_scales = host.block_scales;
    d.global_scale = host.global_scale;
    d.output = TensorView::contiguous(expected.data(), out_dtype, {rows, cols});
    nvfp4_dequantize_weight(d);
    DeviceBuffer d_out(bytes);
    d_out.fill_byte(0xFF);
    d.packed = dev.packed;
    d.block_scales = dev.block_scales;
    d.global_scale = dev.global_scale;
    d.output = TensorView::contiguous(d_out.data(), out_dtype, {rows, cols}, Device::kCUDA);
    nvfp4_dequantize_weight(d);
    LOWBIT_TEST_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(d_out.download<std::uint8_t>() == expected) << dtype_name(out_dtype);
  }
}

TEST(Nvfp4QuantizeGpu, BitExactAgainstCpu) {
  expect_quantizer_matches(7168, 2048, DType::kBF16, false);  // DeepSeek-V3 expert down_proj
  expect_quantizer_matches(1536, 2048, DType::kFP32, false);  // Qwen3-30B-A3B gate_up
  expect_quantizer_matches(1000, 528, DType::kFP16, false);   // K a multiple of 16 only
  expect_quantizer_matches(64, 4096, DType::kBF16, true);
}

// ---- GEMV --------------------------------------------------------------------------------------

struct Model {
  const char* name;
  std::int64_t experts, hidden, intermediate;
  int top_k;
};
constexpr Model kModels[] = {{"qwen3-30b-a3b", 128, 2048, 768, 8},
                             {"deepseek-v3", 256, 7168, 2048, 8},
                             {"qwen3-next-80b-a3b", 512, 2048, 512, 10}};

struct Routing {
  std::vector<std::int32_t> expert_ids, offsets, token_ids;
  std::vector<std::int32_t> active;  // distinct experts, in slot order
};

// Each token picks top_k distinct experts out of a pool of min(E, 2 top_k) experts spread over
// [0, E) (with `same_experts`, the pool's first top_k); slots list the experts in use plus, with
// `idle_slots`, two idle slots (the balanced kernels run only without them).
Routing route(std::int64_t tokens, const Model& m, std::mt19937_64& rng, bool idle_slots,
              bool same_experts) {
  std::vector<std::int32_t> pool;
  const std::int64_t pool_size = std::min<std::int64_t>(m.experts, 2 * m.top_k);
  for (std::int64_t i = 0; i < pool_size; ++i) pool.push_back(static_cast<std::int32_t>((i * 7919 + rng() % 7) % m.experts));
  std::sort(pool.begin(), pool.end());
  pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  std::map<std::int32_t, std::vector<std::int32_t>> lists;
  for (std::int32_t t = 0; t < tokens; ++t) {
    std::vector<std::int32_t> choice = pool;
    if (!same_experts) std::shuffle(choice.begin(), choice.end(), rng);
    for (int j = 0; j < m.top_k && j < static_cast<int>(choice.size()); ++j) lists[choice[j]].push_back(t);
  }
  Routing r;
  r.offsets.push_back(0);
  for (auto& [expert, list] : lists) {
    r.expert_ids.push_back(expert);
    r.active.push_back(expert);
    r.token_ids.insert(r.token_ids.end(), list.begin(), list.end());
    r.offsets.push_back(static_cast<std::int32_t>(r.token_ids.size()));
    if (idle_slots && r.expert_ids.size() == 1) {  // an idle slot inside the list
      r.expert_ids.push_back(-1);
      r.offsets.push_back(r.offsets.back());
    }
  }
  if (idle_slots) {
    r.expert_ids.push_back(-1);
    r.offsets.push_back(r.offsets.back());
  }
  return r;
}

template <typename T>
TensorView device_vector(DeviceBuffer& buffer, const std::vector<T>& host, DType dtype) {
  buffer.upload(host);
  return TensorView::contiguous(buffer.data(), dtype, {static_cast<std::int64_t>(host.size())}, Device::kCUDA);
}

struct Weights {  // canonical codes of the active experts, [A, N, K / 2] etc.
  Bytes packed, scales, values, indices, pruned;
  std::vector<float> globals;  // per active expert
};

std::vector<std::uint16_t> download_bf16(const DeviceBuffer& b) { return b.download<std::uint16_t>(); }

// row_per_pair: x holds a row per routed pair, as a MoE layer's down projection reads (SiLU * mul
// of the pair's gate_up row), in a shuffled order, instead of a row per token. same_experts:
// every token on the same top_k experts.
void gemv_case(const Model& m, bool gate_up, std::int64_t tokens, bool idle_slots = true,
               bool row_per_pair = false, bool same_experts = false) {
  const std::int64_t rows = gate_up ? 2 * m.intermediate : m.hidden;
  const std::int64_t cols = gate_up ? m.hidden : m.intermediate;
  SCOPED_TRACE(std::string(m.name) + (gate_up ? " gate_up" : " down") + " N=" +
               std::to_string(rows) + " K=" + std::to_string(cols) + " M=" + std::to_string(tokens) +
               (row_per_pair ? " x a row per pair" : "") + (same_experts ? " same experts" : ""));
  std::mt19937_64 rng(testing::test_seed() ^ (++salt * 0x9E3779B97F4A7C15ull));
  Routing r = route(tokens, m, rng, idle_slots, same_experts);
  const std::int64_t active = static_cast<std::int64_t>(r.active.size());
  const std::int64_t codes = rows * cols, out_rows = static_cast<std::int64_t>(r.token_ids.size());
  if (row_per_pair) {
    std::iota(r.token_ids.begin(), r.token_ids.end(), 0);
    std::shuffle(r.token_ids.begin(), r.token_ids.end(), rng);
    tokens = out_rows;  // rows of x from here on
  }

  // Canonical weights of the active experts, pruned copies, and both GEMV layouts.
  Weights w;
  w.packed = random_bytes(active * codes / 2, rng);
  w.scales = random_scale_codes(active * codes / 16, rng);
  w.values.resize(active * codes / 4);
  w.indices.resize(active * codes / 8);
  w.pruned.resize(active * codes / 2);
  for (std::int64_t a = 0; a < active; ++a) w.globals.push_back(std::ldexp(1.0f + (rng() % 64) / 64.0f, -8 - static_cast<int>(rng() % 4)));
  Bytes gemv_packed(w.packed.size()), gemv_scales(w.scales.size()), gemv_values(w.values.size()),
      gemv_indices(w.indices.size()), gemv_pruned(w.packed.size());
  parallel_each(active, [&](std::int64_t a) {
    {
      auto view = [&](Bytes& b, std::int64_t per_code_div, DType dtype) {
        return TensorView::contiguous(b.data() + a * codes / per_code_div, dtype, {rows, cols / per_code_div});
      };
      Nvfp4Sparsify24Args s{view(w.packed, 2, DType::kUInt8), view(w.scales, 16, DType::kFP8E4M3),
                            w.globals[a], view(w.values, 4, DType::kUInt8), view(w.indices, 8, DType::kUInt8)};
      nvfp4_sparsify_24(s);
      nvfp4_sparse24_to_dense(s.values, s.indices, view(w.pruned, 2, DType::kUInt8));
      nvfp4_relayout_for_gemv(s.packed, s.block_scales, view(gemv_packed, 2, DType::kUInt8),
                              view(gemv_scales, 16, DType::kFP8E4M3));
      nvfp4_relayout_for_gemv(view(w.pruned, 2, DType::kUInt8), s.block_scales,
                              view(gemv_pruned, 2, DType::kUInt8), view(gemv_scales, 16, DType::kFP8E4M3));
      nvfp4_sparse24_relayout_for_gemv(s.values, s.indices, s.block_scales,
                                       view(gemv_values, 4, DType::kUInt8), view(gemv_indices, 8, DType::kUInt8),
                                       view(gemv_scales, 16, DType::kFP8E4M3));
    }
  });

  // Device tensors hold all E experts; only the active ones are written (the rest is never read).
  const std::int64_t e = m.experts;
  DeviceBuffer d_packed(e * codes / 2), d_pruned(e * codes / 2), d_values(e * codes / 4),
      d_indices(e * codes / 8), d_scales(e * codes / 16), d_globals(e * 4);
  std::vector<float> all_globals(e, std::nanf(""));
  for (std::int64_t a = 0; a < active; ++a) {
    const std::int64_t x = r.active[a];
    auto put = [&](DeviceBuffer& d, const Bytes& h, std::int64_t div) {
      LOWBIT_TEST_CUDA(cudaMemcpy(static_cast<std::uint8_t*>(d.data()) + x * codes / div,
                                  h.data() + a * codes / div, codes / div, cudaMemcpyHostToDevice));
    };
    put(d_packed, gemv_packed, 2);
    put(d_pruned, gemv_pruned, 2);
    put(d_values, gemv_values, 4);
    put(d_indices, gemv_indices, 8);
    put(d_scales, gemv_scales, 16);
    all_globals[x] = w.globals[a];
  }
  d_globals.upload(all_globals);

  const std::vector<std::uint8_t> x_bytes = testing::random_activations(DType::kBF16, tokens, cols, cols, ++salt);
  DeviceBuffer d_x(x_bytes.size()), d_ids(4 * r.expert_ids.size()), d_offsets(4 * r.offsets.size()),
      d_tokens(4 * r.token_ids.size()), d_dense(out_rows * rows * 2), d_sparse(out_rows * rows * 2),
      d_pruned_out(out_rows * rows * 2);
  d_x.upload(x_bytes);
  const Nvfp4MoeRouting routing{device_vector(d_ids, r.expert_ids, DType::kInt32),
                                device_vector(d_offsets, r.offsets, DType::kInt32),
                                device_vector(d_tokens, r.token_ids, DType::kInt32)};
  const TensorView x = TensorView::contiguous(d_x.data(), DType::kBF16, {tokens, cols}, Device::kCUDA);
  auto dev3 = [&](DeviceBuffer& b, std::int64_t div, DType dtype) {
    return TensorView::contiguous(b.data(), dtype, {e, rows, cols / div}, Device::kCUDA);
  };
  const TensorView globals = TensorView::contiguous(d_globals.data(), DType::kFP32, {e}, Device::kCUDA);
  auto out_view = [&](DeviceBuffer& b) {
    b.fill_byte(0xFF);  // NaN
    return TensorView::contiguous(b.data(), DType::kBF16, {out_rows, rows}, Device::kCUDA);
  };
  nvfp4_gemv({x, dev3(d_packed, 2, DType::kUInt8), dev3(d_scales, 16, DType::kFP8E4M3), globals, out_view(d_dense), routing});
  nvfp4_gemv({x, dev3(d_pruned, 2, DType::kUInt8), dev3(d_scales, 16, DType::kFP8E4M3), globals, out_view(d_pruned_out), routing});
  nvfp4_sparse24_gemv({x, dev3(d_values, 4, DType::kUInt8), dev3(d_indices, 8, DType::kUInt8),
                       dev3(d_scales, 16, DType::kFP8E4M3), globals, out_view(d_sparse), routing});
  LOWBIT_TEST_CUDA(cudaDeviceSynchronize());
  const std::vector<std::uint16_t> dense = download_bf16(d_dense), sparse = download_bf16(d_sparse),
                                   pruned = download_bf16(d_pruned_out);

  // Under programmatic dependent launch (every configuration waits before its first read of
  // the routing): the plain launch's bits for dense. 2:4 is checked against the references
  // below: its staged balanced kernel runs 5 blocks per SM on a stream and 4 under PDL, so its
  // units split between warps at other points and round differently.
  std::vector<std::uint16_t> sparse_under_pdl, sparse_wide;
  {
    Nvfp4GemvArgs dense_pdl{x, dev3(d_packed, 2, DType::kUInt8), dev3(d_scales, 16, DType::kFP8E4M3), globals,
                            out_view(d_dense), routing};
    Nvfp4Sparse24GemvArgs sparse_pdl{x, dev3(d_values, 4, DType::kUInt8), dev3(d_indices, 8, DType::kUInt8),
                                     dev3(d_scales, 16, DType::kFP8E4M3), globals, out_view(d_sparse), routing};
    dense_pdl.enable_pdl = sparse_pdl.enable_pdl = true;
    cudaStream_t stream;
    LOWBIT_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    nvfp4_gemv(dense_pdl, stream);
    nvfp4_sparse24_gemv(sparse_pdl, stream);
    LOWBIT_TEST_CUDA(cudaStreamSynchronize(stream));
    cudaStreamDestroy(stream);
    EXPECT_TRUE(download_bf16(d_dense) == dense) << "dense under PDL";
    sparse_under_pdl = download_bf16(d_sparse);
  }

  // The balanced 2:4 kernel with its activations staged in shared memory (ldmatrix) and read
  // from global memory: the same B fragments, so the same bits (where the launch cannot run
  // balanced or staged, both settings run the same kernel). Under PDL, where both run 4 blocks
  // per SM and so split the work alike (on a stream the staged kernel runs 5), except on long
  // launches, where the staged kernel runs 2 blocks of 12 warps per SM (nvfp4_staged_pairs_pay)
  // and is checked against the references.
  std::vector<std::uint16_t> sparse_staged;
  {
    int sms = 0;
    LOWBIT_TEST_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const bool staged_in_pairs = cuda::nvfp4_staged_pairs_pay(
        rows, cols, static_cast<std::int64_t>(r.expert_ids.size()), out_rows, true, sms);
    auto run_with = [&](const char* config) {
      setenv("LOWBIT_NVFP4_GEMV", config, 1);
      Nvfp4Sparse24GemvArgs args{x, dev3(d_values, 4, DType::kUInt8),
                                 dev3(d_indices, 8, DType::kUInt8),
                                 dev3(d_scales, 16, DType::kFP8E4M3), globals,
                                 out_view(d_sparse), routing};
      args.enable_pdl = true;
      cudaStream_t stream = nullptr;
      EXPECT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      nvfp4_sparse24_gemv(args, stream);
      EXPECT_CUDA(cudaStreamSynchronize(stream));
      cudaStreamDestroy(stream);
      unsetenv("LOWBIT_NVFP4_GEMV");
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << config;
      return download_bf16(d_sparse);
    };
    const std::vector<std::uint16_t> global_x = run_with("1,8b");
    sparse_staged = run_with("1,8bs");
    if (!staged_in_pairs) EXPECT_TRUE(sparse_staged == global_x) << "2:4, staged activations";
    // One wide block per SM splits the rounds at other points: checked against the references.
    sparse_wide = run_with("1,8bsw");
  }

  // (a) CPU reference, slot by slot in parallel, over the active experts only.
  auto cpu_reference = [&](const Bytes& gemv_w, const Bytes* gemv_i) {
    std::vector<std::uint16_t> y(out_rows * rows, 0xFFFF);
    const std::int64_t slots = static_cast<std::int64_t>(r.expert_ids.size());
    parallel_each(slots, [&](std::int64_t s) {
      {
        const std::int32_t expert = r.expert_ids[s];
        const std::int32_t count = r.offsets[s + 1] - r.offsets[s];
        if (expert < 0 || count == 0) return;
        const std::int64_t a = std::find(r.active.begin(), r.active.end(), expert) - r.active.begin();
        std::vector<std::int32_t> ids = {0}, offsets = {0, count},
                                  token_ids(r.token_ids.begin() + r.offsets[s], r.token_ids.begin() + r.offsets[s + 1]);
        std::vector<float> g = {w.globals[a]};
        const Nvfp4MoeRouting host_routing{TensorView::contiguous(ids.data(), DType::kInt32, {1}),
                                           TensorView::contiguous(offsets.data(), DType::kInt32, {2}),
                                           TensorView::contiguous(token_ids.data(), DType::kInt32, {count})};
        const TensorView hx = TensorView::contiguous(const_cast<std::uint8_t*>(x_bytes.data()), DType::kBF16, {tokens, cols});
        const TensorView hs = TensorView::contiguous(gemv_scales.data() + a * codes / 16, DType::kFP8E4M3, {1, rows, cols / 16});
        const TensorView hg = TensorView::contiguous(g.data(), DType::kFP32, {1});
        const TensorView hy = TensorView::contiguous(y.data() + r.offsets[s] * rows, DType::kBF16, {count, rows});
        if (gemv_i == nullptr) {
          nvfp4_gemv({hx, TensorView::contiguous(const_cast<std::uint8_t*>(gemv_w.data()) + a * codes / 2, DType::kUInt8, {1, rows, cols / 2}),
                      hs, hg, hy, host_routing});
        } else {
          nvfp4_sparse24_gemv({hx, TensorView::contiguous(const_cast<std::uint8_t*>(gemv_w.data()) + a * codes / 4, DType::kUInt8, {1, rows, cols / 4}),
                               TensorView::contiguous(const_cast<std::uint8_t*>(gemv_i->data()) + a * codes / 8, DType::kUInt8, {1, rows, cols / 8}),
                               hs, hg, hy, host_routing});
        }
      }
    });
    return y;
  };
  const std::vector<std::uint16_t> ref_dense = cpu_reference(gemv_packed, nullptr);
  const std::vector<std::uint16_t> ref_sparse = cpu_reference(gemv_values, &gemv_indices);

  // (b) dequantize-then-matmul: the GPU dequantizer on canonical codes, a double matmul here.
  auto dequantized = [&](const Bytes& canonical) {
    std::vector<float> out(active * codes);
    DeviceBuffer d_c(codes / 2), d_s(codes / 16), d_g(4), d_out(codes * 4);
    for (std::int64_t a = 0; a < active; ++a) {
      EXPECT_CUDA(cudaMemcpy(d_c.data(), canonical.data() + a * codes / 2, codes / 2, cudaMemcpyHostToDevice));
      EXPECT_CUDA(cudaMemcpy(d_s.data(), w.scales.data() + a * codes / 16, codes / 16, cudaMemcpyHostToDevice));
      d_g.upload(std::vector<float>{w.globals[a]});
      nvfp4_dequantize_weight({TensorView::contiguous(d_c.data(), DType::kUInt8, {rows, cols / 2}, Device::kCUDA),
                               TensorView::contiguous(d_s.data(), DType::kFP8E4M3, {rows, cols / 16}, Device::kCUDA),
                               TensorView::contiguous(d_g.data(), DType::kFP32, {1}, Device::kCUDA),
                               TensorView::contiguous(d_out.data(), DType::kFP32, {rows, cols}, Device::kCUDA)});
      EXPECT_CUDA(cudaMemcpy(out.data() + a * codes, d_out.data(), codes * 4, cudaMemcpyDeviceToHost));
    }
    return out;
  };
  auto compare = [&](const char* what, const std::vector<std::uint16_t>& gpu, const std::vector<std::uint16_t>& ref,
                     const std::vector<float>& wf) {
    std::vector<float> xf(tokens * cols);
    for (std::int64_t i = 0; i < tokens * cols; ++i) {
      xf[i] = bf16_to_float(static_cast<std::uint16_t>(x_bytes[2 * i] | (x_bytes[2 * i + 1] << 8)));
    }
    std::vector<double> worst(out_rows, 0.0), total(out_rows, 0.0);
    std::vector<std::int64_t> failures(out_rows, 0);
    std::vector<std::int32_t> slot_of(out_rows);
    for (std::size_t s = 0; s + 1 < r.offsets.size(); ++s) {
      for (std::int32_t p = r.offsets[s]; p < r.offsets[s + 1]; ++p) slot_of[p] = static_cast<std::int32_t>(s);
    }
    parallel_each(out_rows, [&](std::int64_t p) {
      {
        const std::int64_t a = std::find(r.active.begin(), r.active.end(), r.expert_ids[slot_of[p]]) - r.active.begin();
        const float* xr = xf.data() + r.token_ids[p] * cols;
        for (std::int64_t n = 0; n < rows; ++n) {
          const float* wr = wf.data() + a * codes + n * cols;
          double acc = 0.0, magnitude = 0.0;
          for (std::int64_t k = 0; k < cols; ++k) {
            acc += static_cast<double>(xr[k]) * wr[k];
            magnitude += std::fabs(static_cast<double>(xr[k]) * wr[k]);
          }
          const double g = bf16_to_float(gpu[p * rows + n]);
          const double bound = kRelativeTolerance * std::fabs(acc) + kSumTolerance * magnitude;
          const double err_dm = std::fabs(g - acc);
          const double err_ref = std::fabs(g - bf16_to_float(ref[p * rows + n]));
          const double ref_bound = kReferenceRelativeTolerance * std::fabs(acc) + kSumTolerance * magnitude;
          if (!(err_dm <= bound && err_ref <= ref_bound)) {
            if (failures[p]++ == 0) {
              std::printf("  mismatch row %lld n %lld: gpu %.9g reference %.9g exact %.9g sum|xw| %.6g\n",
                          static_cast<long long>(p), static_cast<long long>(n), g,
                          bf16_to_float(ref[p * rows + n]), acc, magnitude);
            }
          }
          const double ratio = magnitude > 0 ? std::max(0.0, err_dm - kRelativeTolerance * std::fabs(acc)) / magnitude : 0.0;
          worst[p] = std::max(worst[p], ratio);
          total[p] += magnitude > 0 ? err_dm / magnitude : 0.0;
        }
      }
    });
    std::int64_t failed = 0;
    double worst_all = 0.0, mean = 0.0;
    for (std::int64_t p = 0; p < out_rows; ++p) {
      failed += failures[p];
      worst_all = std::max(worst_all, worst[p]);
      mean += total[p];
    }
    mean /= static_cast<double>(out_rows * rows);
    EXPECT_EQ(failed, 0) << what << ": outputs outside the tolerance";
    std::printf("[nvfp4] %s %s N=%lld K=%lld M=%lld rows=%lld: worst (err - 2^-8|y|)/sum|xw| = %.3g, mean err/sum = %.3g\n",
                m.name, what, static_cast<long long>(rows), static_cast<long long>(cols),
                static_cast<long long>(tokens), static_cast<long long>(out_rows), worst_all, mean);
  };
  compare(gate_up ? "dense gate_up" : "dense down", dense, ref_dense, dequantized(w.packed));
  const std::vector<float> pruned_weights = dequantized(w.pruned);
  compare(gate_up ? "2:4 gate_up" : "2:4 down", sparse, ref_sparse, pruned_weights);
  compare(gate_up ? "2:4 under PDL gate_up" : "2:4 under PDL down", sparse_under_pdl, ref_sparse,
          pruned_weights);
  compare(gate_up ? "2:4 wide gate_up" : "2:4 wide down", sparse_wide, ref_sparse, pruned_weights);
  compare(gate_up ? "2:4 staged under PDL gate_up" : "2:4 staged under PDL down", sparse_staged,
          ref_sparse, pruned_weights);
  // The sparse tensor cores add in another order than the dense kernel on the pruned codes, so
  // the two agree within the tolerance, not bit for bit.
  compare(gate_up ? "2:4 vs dense-on-pruned gate_up" : "2:4 vs dense-on-pruned down", sparse,
          pruned, pruned_weights);
}

TEST(Nvfp4GemvGpu, MoeShapesAgainstReferences) {
  for (const Model& m : kModels) {
    for (bool gate_up : {true, false}) {
      for (std::int64_t tokens : {1, 4, 16}) gemv_case(m, gate_up, tokens);
    }
  }
}

TEST(Nvfp4GemvGpu, ActivationRowsPerPair) {
  // A MoE layer's down input: a row of x per routed pair, shuffled. The staged 2:4 kernel stages
  // per block only the rows its slots read (DeepSeek-V3 down at M = 1: 8 rows, 1-2 a block);
  // forced to 1,8bs every shape that fits runs it.
  for (const Model& m : kModels) {
    for (std::int64_t tokens : {1, 4}) gemv_case(m, false, tokens, false, true);
  }
  gemv_case(kModels[0], true, 1, false, true);  // Qwen3-30B-A3B gate_up: 8 rows of K = 2048
}

TEST(Nvfp4GemvGpu, DecodeRoutingWithoutIdleSlots) {
  // A decode step's routing lists only active slots, so the balanced kernels run at one token
  // (with idle slots they cannot). At M = 1: DeepSeek-V3 2:4 gate_up as one wide block per SM,
  // down as 4-warp blocks; Qwen3-Next gate_up balanced with the window of 4 (640 tiles), Qwen3-30B
  // down balanced with the window of 4 (K = 768), Qwen3-Next down with the window of 8; Qwen3-30B
  // gate_up splits K. DeepSeek gate_up at M = 2: its forced wide launch stages 28 KB of rows, more
  // than the 48 KB a block gets without opting in leaves beside its static shared memory.
  for (const Model& m : kModels) {
    for (bool gate_up : {true, false}) gemv_case(m, gate_up, 1, false);
  }
  gemv_case(kModels[1], true, 2, false);
}

TEST(Nvfp4GemvGpu, EveryTokenOnTheSameExperts) {
  // At least 4 rows a slot (nvfp4_gemv_heuristics.cpp): 2:4 stages its rows in one wide block
  // per SM (DeepSeek-V3 gate_up at 8 tokens: 115 KB of rows; down at 16: two passes a slot),
  // dense runs balanced up to 8 tokens and per item beyond, as does 2:4 where the rows do not
  // fit (DeepSeek-V3 gate_up at 12 tokens: 172 KB). Qwen3-30B-A3B down at 16 tokens (K = 768,
  // 12 chunks, not whole rounds of 8) runs the window of 8 per item, whose two-token-group pass
  // loads 2:4 activations 16 bytes at a time.
  const Model& deepseek = kModels[1];
  gemv_case(deepseek, true, 8, false, false, true);
  gemv_case(deepseek, true, 12, false, false, true);
  gemv_case(deepseek, false, 16, false, false, true);
  gemv_case(kModels[2], false, 9, false, false, true);  // Qwen3-Next-80B-A3B down
  gemv_case(kModels[0], false, 16, false, false, true);  // Qwen3-30B-A3B down
}

TEST(Nvfp4GemvGpu, TwoTokenGroupsAndLongLists) {
  // 9..16 tokens per slot take the two-group path; 40 tokens on one slot loop 3 passes.
  const Model one_expert{"single-expert", 1, 2048, 512, 1};
  gemv_case(one_expert, true, 9);
  gemv_case(one_expert, false, 40);
}

TEST(Nvfp4GemvGpu, KNotAMultipleOf256) {
  // Chunk counts (K / 64) that no window or K split divides: gate_up K = 23 and 17 chunks (4
  // warps split K, unequal shares), down K = 7 (one warp per tile, a short last window) and 2
  // (fewer chunks than the window); 1 and 9 tokens on one expert (one and two token groups).
  const Model models[] = {{"k-tails-a", 1, 1472, 448, 1},
                          {"k-tails-b", 1, 1088, 128, 1}};
  for (const Model& m : models) {
    for (bool gate_up : {true, false}) {
      for (std::int64_t tokens : {1, 9}) gemv_case(m, gate_up, tokens);
    }
  }
}

// The small MoE of the routing tests: 16 experts of 256 x 512 in GEMV layout on the host, 6 tokens,
// 4 slots, 8 output rows.
constexpr std::int64_t kExperts = 16, kRows = 256, kCols = 512, kTokens = 6;
struct SmallMoe {
  Bytes gemv_packed, gemv_scales;
  Bytes gemv_values, gemv_indices, gemv_sparse_scales;  // its 2:4 pruning, in GEMV layout
  std::vector<float> globals;
  TensorView gp, gs;           // host views of the GEMV-layout weights
  TensorView gv, gi, gss;      // and of the 2:4 ones
};

SmallMoe make_small_moe(std::mt19937_64& rng) {
  SmallMoe w;
  const std::int64_t e = kExperts, n = kRows, k = kCols;
  Bytes packed = random_bytes(e * n * k / 2, rng), scales = random_scale_codes(e * n * k / 16, rng);
  w.gemv_packed.resize(packed.size());
  w.gemv_scales.resize(scales.size());
  w.gp = TensorView::contiguous(w.gemv_packed.data(), DType::kUInt8, {e, n, k / 2});
  w.gs = TensorView::contiguous(w.gemv_scales.data(), DType::kFP8E4M3, {e, n, k / 16});
  nvfp4_relayout_for_gemv(TensorView::contiguous(packed.data(), DType::kUInt8, {e, n, k / 2}),
                          TensorView::contiguous(scales.data(), DType::kFP8E4M3, {e, n, k / 16}),
                          w.gp, w.gs);
  w.globals.resize(e);
  for (auto& g : w.globals) g = std::ldexp(1.0f, -7 - static_cast<int>(rng() % 3));
  Bytes values(e * n * k / 4), indices(e * n * k / 8);
  for (std::int64_t a = 0; a < e; ++a) {
    nvfp4_sparsify_24({TensorView::contiguous(packed.data() + a * n * k / 2, DType::kUInt8, {n, k / 2}),
                       TensorView::contiguous(scales.data() + a * n * k / 16, DType::kFP8E4M3, {n, k / 16}),
                       w.globals[a],
                       TensorView::contiguous(values.data() + a * n * k / 4, DType::kUInt8, {n, k / 4}),
                       TensorView::contiguous(indices.data() + a * n * k / 8, DType::kUInt8, {n, k / 8})});
  }
  w.gemv_values.resize(values.size());
  w.gemv_indices.resize(indices.size());
  w.gemv_sparse_scales.resize(scales.size());
  w.gv = TensorView::contiguous(w.gemv_values.data(), DType::kUInt8, {e, n, k / 4});
  w.gi = TensorView::contiguous(w.gemv_indices.data(), DType::kUInt8, {e, n, k / 8});
  w.gss = TensorView::contiguous(w.gemv_sparse_scales.data(), DType::kFP8E4M3, {e, n, k / 16});
  nvfp4_sparse24_relayout_for_gemv(TensorView::contiguous(values.data(), DType::kUInt8, {e, n, k / 4}),
                                   TensorView::contiguous(indices.data(), DType::kUInt8, {e, n, k / 8}),
                                   TensorView::contiguous(scales.data(), DType::kFP8E4M3, {e, n, k / 16}),
                                   w.gv, w.gi, w.gss);
  return w;
}

// Outputs of the small MoE off its CPU reference: one bf16 ulp (both round), plus a loose
// allowance for the accumulation order. Rows of idle slots stay unwritten (NaN poison) on both
// sides.
std::int64_t outputs_off_reference(const std::vector<std::uint16_t>& got,
                                   const std::vector<std::uint16_t>& expected) {
  std::int64_t off = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = bf16_to_float(got[i]), e = bf16_to_float(expected[i]);
    if (std::isnan(g) && std::isnan(e)) continue;
    if (!(std::fabs(g - e) <= std::fabs(e) / 64 + 1e-3)) ++off;
  }
  return off;
}

TEST(Nvfp4GemvGpu, CudaGraphReplaysWithNewRouting) {
  std::mt19937_64 rng(testing::test_seed() ^ ++salt);
  SmallMoe w = make_small_moe(rng);
  const std::vector<std::uint8_t> x = testing::random_activations(DType::kBF16, kTokens, kCols, kCols, ++salt);

  DeviceBuffer d_packed(w.gemv_packed.size()), d_scales(w.gemv_scales.size()), d_globals(kExperts * 4),
      d_x(x.size()), d_ids(16), d_offsets(20), d_tokens(32), d_out(8 * kRows * 2);
  d_packed.upload(w.gemv_packed);
  d_scales.upload(w.gemv_scales);
  d_globals.upload(w.globals);
  d_x.upload(x);
  // Two routings of the same sizes: 4 slots, 8 output rows.
  const std::vector<std::int32_t> ids_a = {3, 7, -1, 9}, offsets_a = {0, 3, 5, 5, 8}, tokens_a = {0, 1, 2, 3, 4, 5, 0, 1};
  const std::vector<std::int32_t> ids_b = {9, -1, 3, 5}, offsets_b = {0, 2, 2, 6, 8}, tokens_b = {5, 4, 3, 2, 1, 0, 2, 2};
  const Nvfp4MoeRouting routing{device_vector(d_ids, ids_a, DType::kInt32), device_vector(d_offsets, offsets_a, DType::kInt32),
                                device_vector(d_tokens, tokens_a, DType::kInt32)};
  Nvfp4GemvArgs args{TensorView::contiguous(d_x.data(), DType::kBF16, {kTokens, kCols}, Device::kCUDA),
                     TensorView::contiguous(d_packed.data(), DType::kUInt8, {kExperts, kRows, kCols / 2}, Device::kCUDA),
                     TensorView::contiguous(d_scales.data(), DType::kFP8E4M3, {kExperts, kRows, kCols / 16}, Device::kCUDA),
                     TensorView::contiguous(d_globals.data(), DType::kFP32, {kExperts}, Device::kCUDA),
                     TensorView::contiguous(d_out.data(), DType::kBF16, {8, kRows}, Device::kCUDA), routing};
  cudaStream_t stream;
  LOWBIT_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  LOWBIT_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  nvfp4_gemv(args, stream);
  LOWBIT_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  LOWBIT_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));

  for (int round = 0; round < 2; ++round) {
    const auto& ids = round == 0 ? ids_a : ids_b;
    const auto& offsets = round == 0 ? offsets_a : offsets_b;
    const auto& toks = round == 0 ? tokens_a : tokens_b;
    d_ids.upload(ids);
    d_offsets.upload(offsets);
    d_tokens.upload(toks);
    d_out.fill_byte(0xFF);
    LOWBIT_TEST_CUDA(cudaGraphLaunch(exec, stream));
    LOWBIT_TEST_CUDA(cudaStreamSynchronize(stream));
    std::vector<std::uint16_t> expected(8 * kRows, 0xFFFF);
    std::vector<std::int32_t> h_ids = ids, h_offsets = offsets, h_tokens = toks;
    Nvfp4GemvArgs host{TensorView::contiguous(const_cast<std::uint8_t*>(x.data()), DType::kBF16, {kTokens, kCols}), w.gp, w.gs,
                       TensorView::contiguous(w.globals.data(), DType::kFP32, {kExperts}),
                       TensorView::contiguous(expected.data(), DType::kBF16, {8, kRows}),
                       Nvfp4MoeRouting{TensorView::contiguous(h_ids.data(), DType::kInt32, {4}),
                                       TensorView::contiguous(h_offsets.data(), DType::kInt32, {5}),
                                       TensorView::contiguous(h_tokens.data(), DType::kInt32, {8})}};
    nvfp4_gemv(host);
    const std::vector<std::uint16_t> got = d_out.download<std::uint16_t>();
    EXPECT_EQ(outputs_off_reference(got, expected), 0) << "round " << round;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(Nvfp4GemvGpu, BlockScalesOffByFourBytesUnderPdl) {
  // The op takes block scales at any 4-byte boundary. Under PDL the balanced kernels ask L2 for
  // their first round before the wait with bulk prefetches, which need 16-byte aligned ranges:
  // scales 4 bytes past a 16-byte boundary must give the bits of aligned ones, in every balanced
  // configuration, dense and 2:4 (4 slots, 8 routed rows, no idle slot: balanced).
  std::mt19937_64 rng(testing::test_seed() ^ ++salt);
  SmallMoe w = make_small_moe(rng);
  const std::vector<std::uint8_t> x = testing::random_activations(DType::kBF16, kTokens, kCols, kCols, ++salt);
  const std::int64_t scale_bytes = static_cast<std::int64_t>(w.gemv_scales.size());
  DeviceBuffer d_packed(w.gemv_packed.size()), d_values(w.gemv_values.size()), d_indices(w.gemv_indices.size()),
      d_scales(scale_bytes + 16), d_sparse_scales(scale_bytes + 16), d_globals(kExperts * 4), d_x(x.size()),
      d_ids(16), d_offsets(20), d_tokens(32), d_out(8 * kRows * 2);
  d_packed.upload(w.gemv_packed);
  d_values.upload(w.gemv_values);
  d_indices.upload(w.gemv_indices);
  d_globals.upload(w.globals);
  d_x.upload(x);
  std::vector<std::int32_t> ids = {3, 7, 9, 5}, offsets = {0, 2, 4, 6, 8}, tokens = {0, 1, 2, 3, 4, 5, 0, 1};
  const Nvfp4MoeRouting routing{device_vector(d_ids, ids, DType::kInt32),
                                device_vector(d_offsets, offsets, DType::kInt32),
                                device_vector(d_tokens, tokens, DType::kInt32)};
  // The CPU reference of each kind, for the aligned launches.
  std::vector<std::uint16_t> expected[2];
  for (bool sparse : {false, true}) {
    expected[sparse].assign(8 * kRows, 0xFFFF);
    const TensorView hx = TensorView::contiguous(const_cast<std::uint8_t*>(x.data()), DType::kBF16, {kTokens, kCols});
    const TensorView hg = TensorView::contiguous(w.globals.data(), DType::kFP32, {kExperts});
    const TensorView ho = TensorView::contiguous(expected[sparse].data(), DType::kBF16, {8, kRows});
    const Nvfp4MoeRouting hr{TensorView::contiguous(ids.data(), DType::kInt32, {4}),
                             TensorView::contiguous(offsets.data(), DType::kInt32, {5}),
                             TensorView::contiguous(tokens.data(), DType::kInt32, {8})};
    if (sparse) {
      nvfp4_sparse24_gemv({hx, w.gv, w.gi, w.gss, hg, ho, hr});
    } else {
      nvfp4_gemv({hx, w.gp, w.gs, hg, ho, hr});
    }
  }
  auto at = [](DeviceBuffer& b, std::int64_t offset) { return static_cast<std::uint8_t*>(b.data()) + offset; };
  auto view = [](void* data, DType dtype, std::int64_t div) {
    return TensorView::contiguous(data, dtype, {kExperts, kRows, kCols / div}, Device::kCUDA);
  };
  const TensorView xv = TensorView::contiguous(d_x.data(), DType::kBF16, {kTokens, kCols}, Device::kCUDA);
  const TensorView globals = TensorView::contiguous(d_globals.data(), DType::kFP32, {kExperts}, Device::kCUDA);
  const TensorView out = TensorView::contiguous(d_out.data(), DType::kBF16, {8, kRows}, Device::kCUDA);
  cudaStream_t stream;
  LOWBIT_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto run = [&](bool sparse, std::int64_t offset) -> std::vector<std::uint16_t> {
    DeviceBuffer& scales = sparse ? d_sparse_scales : d_scales;
    EXPECT_CUDA(cudaMemcpy(at(scales, offset), sparse ? w.gemv_sparse_scales.data() : w.gemv_scales.data(),
                           scale_bytes, cudaMemcpyHostToDevice));
    d_out.fill_byte(0xFF);
    const TensorView sv = view(at(scales, offset), DType::kFP8E4M3, 16);
    if (sparse) {
      Nvfp4Sparse24GemvArgs args{xv, view(d_values.data(), DType::kUInt8, 4), view(d_indices.data(), DType::kUInt8, 8),
                                 sv, globals, out, routing};
      args.enable_pdl = true;
      nvfp4_sparse24_gemv(args, stream);
    } else {
      Nvfp4GemvArgs args{xv, view(d_packed.data(), DType::kUInt8, 2), sv, globals, out, routing};
      args.enable_pdl = true;
      nvfp4_gemv(args, stream);
    }
    EXPECT_CUDA(cudaStreamSynchronize(stream));
    return d_out.download<std::uint16_t>();
  };
  for (const char* config : {"", "1,8b", "1,4b", "1,8bs", "1,8bsw"}) {
    if (*config != 0) setenv("LOWBIT_NVFP4_GEMV", config, 1);
    for (bool sparse : {false, true}) {
      if (!sparse && std::string(config).find('s') != std::string::npos) continue;  // 2:4 only
      const std::vector<std::uint16_t> aligned = run(sparse, 0), shifted = run(sparse, 4);
      EXPECT_TRUE(shifted == aligned) << (sparse ? "2:4" : "dense") << " config '" << config << "'";
      EXPECT_EQ(outputs_off_reference(aligned, expected[sparse]), 0)
          << (sparse ? "2:4" : "dense") << " config '" << config << "'";
    }
    unsetenv("LOWBIT_NVFP4_GEMV");
  }
  cudaStreamDestroy(stream);
}

TEST(Nvfp4GemvGpu, ProgrammaticDependentLaunchWaitsForTheRouting) {
  // The routing lists and the activations are written by a kernel that lets the GEMV start at
  // once and writes them 50 us after the GEMV is enqueued; until then the device holds another
  // routing and other activations. Every configuration (forced in turn), dense and 2:4, must see
  // only the new ones; and, with the new lists already in place, the same under PDL with no
  // producer. The 2:4 kernel with staged activations (1,8bs) copies x after its wait.
  std::mt19937_64 rng(testing::test_seed() ^ ++salt);
  SmallMoe w = make_small_moe(rng);
  const std::vector<std::uint8_t> x_old = testing::random_activations(DType::kBF16, kTokens, kCols, kCols, ++salt);
  std::vector<std::uint8_t> x = testing::random_activations(DType::kBF16, kTokens, kCols, kCols, ++salt);
  std::vector<std::int32_t> ids = {9, -1, 3, 5}, offsets = {0, 2, 2, 6, 8}, toks = {5, 4, 3, 2, 1, 0, 2, 2};
  const std::vector<std::int32_t> ids_old = {3, 7, -1, 9}, offsets_old = {0, 3, 5, 5, 8},
                                   toks_old = {0, 1, 2, 3, 4, 5, 0, 1};
  const TensorView host_x = TensorView::contiguous(x.data(), DType::kBF16, {kTokens, kCols});
  const TensorView host_globals = TensorView::contiguous(w.globals.data(), DType::kFP32, {kExperts});
  const Nvfp4MoeRouting host_routing{TensorView::contiguous(ids.data(), DType::kInt32, {4}),
                                     TensorView::contiguous(offsets.data(), DType::kInt32, {5}),
                                     TensorView::contiguous(toks.data(), DType::kInt32, {8})};
  std::vector<std::uint16_t> expected_dense(8 * kRows, 0xFFFF), expected_sparse(8 * kRows, 0xFFFF);
  nvfp4_gemv({host_x, w.gp, w.gs, host_globals,
              TensorView::contiguous(expected_dense.data(), DType::kBF16, {8, kRows}), host_routing});
  nvfp4_sparse24_gemv({host_x, w.gv, w.gi, w.gss, host_globals,
                       TensorView::contiguous(expected_sparse.data(), DType::kBF16, {8, kRows}), host_routing});

  DeviceBuffer d_packed(w.gemv_packed.size()), d_scales(w.gemv_scales.size()), d_values(w.gemv_values.size()),
      d_indices(w.gemv_indices.size()), d_sparse_scales(w.gemv_sparse_scales.size()), d_globals(kExperts * 4),
      d_x(x.size()), d_ids(16), d_offsets(20), d_tokens(32), d_out(8 * kRows * 2);
  DeviceBuffer new_x(x.size()), new_ids(16), new_offsets(20), new_tokens(32);
  d_packed.upload(w.gemv_packed);
  d_scales.upload(w.gemv_scales);
  d_values.upload(w.gemv_values);
  d_indices.upload(w.gemv_indices);
  d_sparse_scales.upload(w.gemv_sparse_scales);
  d_globals.upload(w.globals);
  new_x.upload(x);
  new_ids.upload(ids);
  new_offsets.upload(offsets);
  new_tokens.upload(toks);
  auto weights = [&](DeviceBuffer& b, std::int64_t div, DType dtype) {
    return TensorView::contiguous(b.data(), dtype, {kExperts, kRows, kCols / div}, Device::kCUDA);
  };
  const TensorView dx = TensorView::contiguous(d_x.data(), DType::kBF16, {kTokens, kCols}, Device::kCUDA);
  const TensorView dglobals = TensorView::contiguous(d_globals.data(), DType::kFP32, {kExperts}, Device::kCUDA);
  const TensorView dout = TensorView::contiguous(d_out.data(), DType::kBF16, {8, kRows}, Device::kCUDA);
  const Nvfp4MoeRouting routing{device_vector(d_ids, ids_old, DType::kInt32),
                                device_vector(d_offsets, offsets_old, DType::kInt32),
                                device_vector(d_tokens, toks_old, DType::kInt32)};
  Nvfp4GemvArgs dense{dx, weights(d_packed, 2, DType::kUInt8), weights(d_scales, 16, DType::kFP8E4M3),
                      dglobals, dout, routing};
  Nvfp4Sparse24GemvArgs sparse{dx, weights(d_values, 4, DType::kUInt8), weights(d_indices, 8, DType::kUInt8),
                               weights(d_sparse_scales, 16, DType::kFP8E4M3), dglobals, dout, routing};
  testing::SlowCopies copies;
  copies.jobs[0] = {d_x.data(), new_x.data(), static_cast<std::int64_t>(x.size())};
  copies.jobs[1] = {d_ids.data(), new_ids.data(), 16};
  copies.jobs[2] = {d_offsets.data(), new_offsets.data(), 20};
  copies.jobs[3] = {d_tokens.data(), new_tokens.data(), 32};
  copies.count = 4;
  copies.delay_ns = 50000;
  testing::HeldProducer producer;
  cudaStream_t stream;
  LOWBIT_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (bool is_sparse : {false, true}) {
    const std::vector<std::uint16_t>& expected = is_sparse ? expected_sparse : expected_dense;
    auto count_bad = [&] {
      const std::vector<std::uint16_t> got = d_out.download<std::uint16_t>();
      std::int64_t bad = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double g = bf16_to_float(got[i]), e = bf16_to_float(expected[i]);
        if (std::isnan(g) && std::isnan(e)) continue;  // the idle slot's rows (none here)
        if (!(std::fabs(g - e) <= std::fabs(e) / 64 + 1e-3)) ++bad;
      }
      return bad;
    };
    auto launch = [&](bool pdl) {
      dense.enable_pdl = sparse.enable_pdl = pdl;
      if (is_sparse) {
        nvfp4_sparse24_gemv(sparse, stream);
      } else {
        nvfp4_gemv(dense, stream);
      }
    };
    for (const char* config : {"", "1,4", "1,8", "2,4", "4,4", "1,4b", "1,8b", "1,8bs"}) {
      SCOPED_TRACE(std::string(is_sparse ? "2:4" : "dense") + " LOWBIT_NVFP4_GEMV=" + config);
      if (*config != 0) setenv("LOWBIT_NVFP4_GEMV", config, 1);
      // A plain run first loads the kernel's module, which would wait for the held producer.
      launch(false);
      LOWBIT_TEST_CUDA(cudaStreamSynchronize(stream));
      d_x.upload(x);
      d_ids.upload(ids);
      d_offsets.upload(offsets);
      d_tokens.upload(toks);
      d_out.fill_byte(0xFF);
      launch(true);
      LOWBIT_TEST_CUDA(cudaStreamSynchronize(stream));
      EXPECT_EQ(count_bad(), 0) << "routing in place";
      // With and without the early L2 prefetch (aimed by the old routing here: a hint only).
      for (bool prefetch : {true, false}) {
        dense.prefetch_before_wait = sparse.prefetch_before_wait = prefetch;
        d_x.upload(x_old);
        d_ids.upload(ids_old);
        d_offsets.upload(offsets_old);
        d_tokens.upload(toks_old);
        d_out.fill_byte(0xFF);
        LOWBIT_TEST_CUDA(producer.enqueue(copies, stream));
        launch(true);
        producer.release();
        LOWBIT_TEST_CUDA(cudaStreamSynchronize(stream));
        EXPECT_EQ(count_bad(), 0) << "routing written behind the launch, prefetch_before_wait="
                                  << prefetch;
      }
      dense.prefetch_before_wait = sparse.prefetch_before_wait = true;
      unsetenv("LOWBIT_NVFP4_GEMV");
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace lowbit
