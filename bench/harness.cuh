// Timing harness for the benchmarks: CUDA events around batches of launches, warm-up first,
// median of many samples, inputs rotated over several buffer sets so the working set exceeds
// twice the L2 cache, and the in-run ceilings (device copy bandwidth).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lowbit/error.h"

namespace lowbit::bench {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error("bench", what, "cudaSuccess", cudaGetErrorString(status));
}

struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t memory_bytes = 0;
};
DeviceInfo device_info();

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int samples = 0;
  int launches_per_sample = 0;
};

// The stream the benchmarks launch on (graphs cannot capture the legacy default stream). It is
// a blocking stream, so work on the default stream still orders with it.
cudaStream_t bench_stream();

// How a batch of launches is issued: one by one to bench_stream(), or captured once into a CUDA
// graph that is replayed, as an engine replays its decode step (shorter gaps between kernels;
// launches with programmatic dependent launch become programmatic edges).
enum class Replay { kStream, kGraph };

// Times launch(set) where set cycles over [0, sets); graph replay needs launch to issue its
// work to bench_stream() (on a stream, the legacy default stream also orders with it). Each
// sample times enough back-to-back launches to cover ~0.2 ms, so tiny kernels are measured as a
// stream of launches rather than at event resolution.
Timing time_launches(const std::function<void(int set)>& launch, int sets, int samples,
                     Replay replay = Replay::kStream);

// One benchmark variant: what to launch and how to issue it.
struct Variant {
  std::function<void(int set)> launch;
  Replay replay = Replay::kStream;
};

// Median time per launch (us) of every variant, sampled in turn: sample s of every variant is
// taken before sample s + 1 of any, so all variants' samples spread over the same stretch of
// time and clocks (under a power limit, variants timed one after another can read 10-17% apart
// on the same kernel). Each sample starts with L2 swept and is queued behind a StreamHold, so
// that neither the previous variant's data in L2 nor the host's launch calls (cuBLASLt's, taken
// cold after other variants, cost up to 2x at decode sizes) count.
std::vector<double> interleaved_median_us(const std::vector<Variant>& variants, int sets,
                                          int samples);

// Buffer sets needed so `bytes_per_set * sets` exceeds 2.5 x L2.
int rotation_sets(std::int64_t bytes_per_set, std::int64_t l2_bytes);

// Device-to-device copy bandwidth, counting bytes read + written, on a buffer far beyond L2.
double measure_copy_gbps(int samples);

// How the read stream below is launched: one by one (kStream), replayed from a graph (kGraph),
// or replayed with programmatic dependent launch, each launch starting as the previous one
// drains, since its reads depend on no earlier kernel (kGraphDependent: the floor of a weight
// stream whose kernels overlap their neighbours' tails).
enum class ReadLaunch { kStream, kGraph, kGraphDependent };

// The time of one launch of a plain read stream over `bytes` (16-byte loads, every SM busy,
// nothing but an XOR per load), rotated over buffer sets beyond 2.5 x L2: the same-size floor of
// a weight-stream kernel, including the ramp-up and tail that a 1 GiB copy amortizes.
double measure_read_us(std::int64_t bytes, std::int64_t l2_bytes, int samples,
                       ReadLaunch how = ReadLaunch::kStream);

// A device buffer from the benches' pool (device_pool.h), given back to it when destroyed.
class DeviceMemory {
 public:
  explicit DeviceMemory(std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
  std::size_t block_bytes_ = 0;
};

// Fills a device buffer with random bf16 (dtype_bytes 2) or fp32 (4) values whose magnitude
// varies per 128-element group (never zeros).
void fill_random_activations(void* device, std::int64_t count, int dtype_bytes, std::uint64_t seed);

// Random bytes (a hash of index and seed) & mask: 0xF7 gives finite e4m3 codes of both signs
// (|v| <= 240), 0xFF any int8.
void fill_random_bytes(void* device, std::int64_t count, std::uint64_t seed, std::uint8_t mask);

// device[i] = value * (1 + (i % 7) / 8): positive scales that differ from element to element.
void fill_scales(float* device, std::int64_t count, float value);

}  // namespace lowbit::bench
