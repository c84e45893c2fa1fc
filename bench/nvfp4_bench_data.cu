// The weight bytes and routings of `lowbit bench nvfp4` (nvfp4_bench_data.h).
#include "nvfp4_bench_data.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace lowbit::bench {

namespace {

// Hashed bytes (fill_random_bytes) mapped to block scales of moderate size (kind 1) or to valid
// 2:4 index bytes (kind 2).
__global__ void map_bytes_kernel(std::uint8_t* data, std::int64_t count, int kind) {
  const std::uint8_t valid_pairs[6] = {4, 8, 12, 9, 13, 14};  // 2:4 codes i0 | i1 << 2
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::uint8_t r = data[i];
    data[i] = kind == 1 ? static_cast<std::uint8_t>(0x28 + (r & 0x1F))
                        : static_cast<std::uint8_t>(valid_pairs[r % 6] | (valid_pairs[(r >> 4) % 6] << 4));
  }
}

__global__ void router_copy_kernel(const std::int32_t* ids, const std::int32_t* offsets,
                                   const std::int32_t* tokens, std::int32_t* live_ids,
                                   std::int32_t* live_offsets, std::int32_t* live_tokens, int slots,
                                   int rows) {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  for (int i = threadIdx.x; i <= slots || i < rows; i += blockDim.x) {
    if (i < slots) live_ids[i] = ids[i];
    if (i <= slots) live_offsets[i] = offsets[i];
    if (i < rows) live_tokens[i] = tokens[i];
  }
}

}  // namespace

LiveRouting::LiveRouting(const std::vector<RoutingSet>& sets) {
  std::int64_t slots = 0, rows = 0;
  for (const RoutingSet& s : sets) {
    slots = std::max(slots, s.slots);
    rows = std::max(rows, s.rows);
  }
  ids = std::make_unique<DeviceMemory>(slots * 4);
  offsets = std::make_unique<DeviceMemory>((slots + 1) * 4);
  tokens = std::make_unique<DeviceMemory>(rows * 4);
}

void launch_router_copy(const RoutingSet& from, const LiveRouting& live, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(1);
  config.blockDim = dim3(256);
  config.stream = stream;
  cudaLaunchAttribute dependent;
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &dependent;
  config.numAttrs = 1;
  check(cudaLaunchKernelEx(&config, router_copy_kernel,
                           static_cast<const std::int32_t*>(from.ids->get()),
                           static_cast<const std::int32_t*>(from.offsets->get()),
                           static_cast<const std::int32_t*>(from.tokens->get()),
                           static_cast<std::int32_t*>(live.ids->get()),
                           static_cast<std::int32_t*>(live.offsets->get()),
                           static_cast<std::int32_t*>(live.tokens->get()),
                           static_cast<int>(from.slots), static_cast<int>(from.rows)),
        "router copy launch");
}

void fill_nvfp4_bytes(void* data, std::int64_t count, std::uint64_t seed, int kind) {
  fill_random_bytes(data, count, seed, 0xFF);  // kind 0: e2m1 code pairs as they come
  if (kind == 0) return;
  map_bytes_kernel<<<1024, 256>>>(static_cast<std::uint8_t*>(data), count, kind);
  check(cudaGetLastError(), "map_bytes_kernel");
}

ProjectionWeights::ProjectionWeights(std::int64_t e, std::int64_t rows, std::int64_t cols,
                                     std::uint64_t seed)
    : experts(e), n(rows), k(cols), packed(e * rows * cols / 2), values(e * rows * cols / 4),
      indices(e * rows * cols / 8), scales(e * rows * cols / 16) {
  const std::int64_t codes = e * rows * cols;
  fill_nvfp4_bytes(packed.get(), codes / 2, seed, 0);
  fill_nvfp4_bytes(values.get(), codes / 4, seed + 1, 0);
  fill_nvfp4_bytes(indices.get(), codes / 8, seed + 2, 2);
  fill_nvfp4_bytes(scales.get(), codes / 16, seed + 3, 1);
}

void run_projection(const ProjectionWeights& w, bool sparse, const TensorView& x,
                    const TensorView& globals, const TensorView& y, const Nvfp4MoeRouting& routing,
                    bool pdl, cudaStream_t stream, bool prefetch) {
  const TensorView scales = w.view(w.scales, 16, DType::kFP8E4M3);
  if (sparse) {
    Nvfp4Sparse24GemvArgs args{x, w.view(w.values, 4, DType::kUInt8),
                               w.view(w.indices, 8, DType::kUInt8), scales, globals, y, routing};
    args.enable_pdl = pdl;
    args.prefetch_before_wait = prefetch;
    nvfp4_sparse24_gemv(args, stream);
  } else {
    Nvfp4GemvArgs args{x, w.view(w.packed, 2, DType::kUInt8), scales, globals, y, routing};
    args.enable_pdl = pdl;
    args.prefetch_before_wait = prefetch;
    nvfp4_gemv(args, stream);
  }
}

namespace {

// Uploads per-expert token lists (empty lists skipped) as a RoutingSet's device lists.
RoutingSet upload_routing(const std::vector<std::vector<std::int32_t>>& lists) {
  std::vector<std::int32_t> ids, offsets = {0}, token_ids;
  for (std::int32_t e = 0; e < static_cast<std::int32_t>(lists.size()); ++e) {
    if (lists[e].empty()) continue;
    ids.push_back(e);
    token_ids.insert(token_ids.end(), lists[e].begin(), lists[e].end());
    offsets.push_back(static_cast<std::int32_t>(token_ids.size()));
  }
  RoutingSet set;
  auto upload = [](const std::vector<std::int32_t>& v) {
    auto d = std::make_unique<DeviceMemory>(v.size() * 4);
    check(cudaMemcpy(d->get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice), "routing upload");
    return d;
  };
  set.ids = upload(ids);
  set.offsets = upload(offsets);
  set.tokens = upload(token_ids);
  set.slots = static_cast<std::int64_t>(ids.size());
  set.rows = static_cast<std::int64_t>(token_ids.size());
  set.active = set.slots;
  set.active_ids = ids;
  return set;
}

// 0, 1, ..., experts - 1.
std::vector<std::int32_t> expert_ids(const Nvfp4Model& m) {
  std::vector<std::int32_t> all(m.experts);
  for (std::int32_t e = 0; e < m.experts; ++e) all[e] = e;
  return all;
}

}  // namespace

RoutingSet make_routing(const Nvfp4Model& m, std::int64_t tokens, std::mt19937_64& rng) {
  std::vector<std::vector<std::int32_t>> lists(m.experts);
  std::vector<std::int32_t> order = expert_ids(m);
  for (std::int32_t t = 0; t < tokens; ++t) {
    std::shuffle(order.begin(), order.end(), rng);
    for (int j = 0; j < m.top_k; ++j) lists[order[j]].push_back(t);
  }
  return upload_routing(lists);
}

RoutingSet make_shared_routing(const Nvfp4Model& m, std::int64_t tokens, std::mt19937_64& rng) {
  std::vector<std::vector<std::int32_t>> lists(m.experts);
  std::vector<std::int32_t> order = expert_ids(m);
  std::shuffle(order.begin(), order.end(), rng);
  for (int j = 0; j < m.top_k; ++j) {
    for (std::int32_t t = 0; t < tokens; ++t) lists[order[j]].push_back(t);
  }
  return upload_routing(lists);
}

std::vector<double> stream_and_pdl_median_us(const std::function<void(int, bool, bool)>& run,
                                             int sets, int samples) {
  return interleaved_median_us({{[&](int s) { run(s, false, false); }},
                                {[&](int s) { run(s, true, false); }},
                                {[&](int s) { run(s, false, true); }, Replay::kGraph},
                                {[&](int s) { run(s, true, true); }, Replay::kGraph}},
                               sets, samples);
}

}  // namespace lowbit::bench
