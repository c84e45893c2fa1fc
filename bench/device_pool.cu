// The benches' device memory pool (device_pool.h).
#include "device_pool.h"

#include <cuda_runtime.h>

#include <map>
#include <mutex>

#include "harness.cuh"

namespace lowbit::bench {

namespace {

struct Pool {
  std::mutex mutex;
  std::multimap<std::size_t, void*> kept;  // by size
};

// Never destroyed: at exit the driver takes the memory back, and cudaFree after the runtime's
// own teardown would fail.
Pool& pool() {
  static Pool* instance = new Pool;
  return *instance;
}

// A block is kept only while a quarter of the device's memory stays free: keeping every block
// held up to 101 GB in one run of every family, and with another process holding 95 GB the
// memory filled and a cuBLASLt baseline then failed with an illegal address (likely its kernels,
// which load lazily into device memory, found none). Freeing the blocks under 1 GiB instead left
// DeepSeek down at M = 1 as slow as without the pool.
bool memory_tight() {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return true;
  return free_bytes < total_bytes / 4;
}

// A kept block serves a request if it wastes at most the request's size plus 64 MiB, so that a
// large block is not tied up by a small buffer.
bool fits(std::size_t block_bytes, std::size_t bytes) {
  return block_bytes <= 2 * bytes + (std::size_t{64} << 20);
}

}  // namespace

void* take_device_memory(std::size_t bytes, std::size_t* block_bytes) {
  *block_bytes = 0;
  if (bytes == 0) return nullptr;
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  const auto best = p.kept.lower_bound(bytes);
  auto hand_out_best = [&] {
    void* kept_block = best->second;
    *block_bytes = best->first;
    p.kept.erase(best);
    return kept_block;
  };
  if (best != p.kept.end() && fits(best->first, bytes)) return hand_out_best();
  void* block = nullptr;
  cudaError_t status = cudaMalloc(&block, bytes);
  if (status == cudaErrorMemoryAllocation && !p.kept.empty()) {
    (void)cudaGetLastError();
    // Out of memory: a kept block of any larger size first; freeing is the last resort.
    if (best != p.kept.end()) return hand_out_best();
    for (const auto& [size, kept_block] : p.kept) cudaFree(kept_block);
    p.kept.clear();
    status = cudaMalloc(&block, bytes);
  }
  check(status, "cudaMalloc");
  *block_bytes = bytes;
  return block;
}

void keep_device_memory(void* block, std::size_t block_bytes) {
  if (block == nullptr) return;
  // As cudaFree does: no work still queued may touch the block once it is handed out again
  // (called from destructors, so it does not throw; a failed context leaves the block alone).
  if (cudaDeviceSynchronize() != cudaSuccess) return;
  if (memory_tight()) {
    cudaFree(block);
    return;
  }
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.kept.emplace(block_bytes, block);
}

}  // namespace lowbit::bench
