// Device memory for the benches: blocks are kept for the process's lifetime and reused instead of
// returned to the driver, as long as a quarter of the device's memory stays free.
//
// Why: on an NVIDIA H200 (driver 580.159.04) buffers allocated after large frees (one of 12 GB
// or more, written or not; the nvfp4 bench's gate_up buffers) streamed 10-13% slower than before,
// a plain device copy as much as any kernel, while a 40 GB allocation held instead of freed
// changed nothing (docs/perf/bench_memory.md). A bench row measured after an earlier row's frees
// then ran against a copy ceiling measured in the other state. Inference engines keep their
// memory the same way (PyTorch's caching allocator returns none to the driver unless asked to).
#pragma once

#include <cstddef>

namespace lowbit::bench {

// A block of at least `bytes` (nullptr for 0): a kept one that is not much larger, else a new
// cudaMalloc; if that fails for want of memory, a kept one of any larger size, else every kept
// block is freed and it is tried again.
void* take_device_memory(std::size_t bytes, std::size_t* block_bytes);

// Keeps a block from take_device_memory for later requests (frees it if memory is tight).
void keep_device_memory(void* block, std::size_t block_bytes);

}  // namespace lowbit::bench
