// Device memory for the benches: blocks are kept for the process's lifetime and reused, never
// returned to the driver while the process runs.
//
// Why: on an NVIDIA H200 (driver 580.159.04) every buffer allocated after a large cudaFree
// (12 GB or more, written or not) streamed 10-13% slower than before it, a plain device copy
// as much as any kernel, while a 40 GB allocation held instead of freed changed nothing
// (docs/perf/bench_memory.md). A bench row measured after an earlier row's frees then ran
// against a copy ceiling measured in the other state. Inference engines keep their memory the
// same way (PyTorch's caching allocator returns none to the driver unless asked to).
#pragma once

#include <cstddef>

namespace lowbit::bench {

// A block of at least `bytes` (nullptr for 0): a kept one that is not much larger, else a new
// cudaMalloc; if that fails for want of memory, every kept block is freed and it is tried again.
void* take_device_memory(std::size_t bytes, std::size_t* block_bytes);

// Keeps a block from take_device_memory for later requests.
void keep_device_memory(void* block, std::size_t block_bytes);

}  // namespace lowbit::bench
