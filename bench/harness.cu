// Benchmark harness: events, medians, L2 rotation and the copy-bandwidth ceiling.
#include "harness.cuh"

#include "bench.h"
#include "device_pool.h"
#include "read_stream.cuh"
#include "stream_hold.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

namespace lowbit::bench {

DeviceInfo device_info() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return {prop.name, prop.multiProcessorCount, prop.l2CacheSize,
          static_cast<std::int64_t>(prop.totalGlobalMem)};
}

cudaStream_t bench_stream() {
  static const cudaStream_t stream = [] {
    cudaStream_t created = nullptr;
    check(cudaStreamCreate(&created), "cudaStreamCreate");
    return created;
  }();
  return stream;
}

namespace {

// One variant's timed batches: the warm-up, the batch size and (for graph replay) the captured
// graph are set up once; each sample() then times one batch. With a StreamHold the batch is
// queued behind it before the clock starts, so only GPU time is timed.
class BatchTimer {
 public:
  BatchTimer(std::function<void(int)> launch, int sets, Replay replay,
             StreamHold* hold = nullptr)
      : launch_(std::move(launch)), sets_(sets), hold_(hold) {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
    // Warm-up (module load, clocks), then size the batch from one timed launch. The warm-up
    // runs unheld: loading a kernel's module on its first launch may wait for the device to
    // idle (lazy loading), which a held stream never does.
    issue(3);
    check(cudaStreamSynchronize(bench_stream()), "warm-up");
    const double one = std::max(timed([&] { issue(1); }), 1e-4);
    launches_ = std::clamp(static_cast<int>(0.2 / one), 1, 200);
    // A replayed graph restarts at set 0: a whole number of rotations keeps the set just read
    // from being read again at once.
    if (replay == Replay::kGraph) {
      launches_ = (launches_ + sets - 1) / sets * sets;
      const cudaStream_t stream = bench_stream();
      cudaGraph_t graph = nullptr;
      check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
      issue(launches_);
      check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
      check(cudaGraphInstantiate(&graph_exec_, graph, 0), "cudaGraphInstantiate");
      check(cudaGraphDestroy(graph), "cudaGraphDestroy");
      batch();  // the graph's first upload, unheld like the warm-up
      check(cudaStreamSynchronize(stream), "graph upload");
    }
  }
  BatchTimer(const BatchTimer&) = delete;
  BatchTimer& operator=(const BatchTimer&) = delete;
  ~BatchTimer() {
    if (graph_exec_ != nullptr) cudaGraphExecDestroy(graph_exec_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }

  int launches_per_sample() const { return launches_; }

  // Milliseconds per launch over one batch.
  double sample() {
    const double ms = timed([&] { batch(); }) / launches_;
    check(cudaGetLastError(), "kernel launch");
    return ms;
  }

 private:
  void issue(int launches) {
    for (int i = 0; i < launches; ++i) {
      launch_(next_);
      next_ = (next_ + 1) % sets_;
    }
  }
  void batch() {
    if (graph_exec_ != nullptr) {
      check(cudaGraphLaunch(graph_exec_, bench_stream()), "cudaGraphLaunch");
    } else {
      issue(launches_);
    }
  }
  template <typename Work>
  double timed(const Work& work) {
    const cudaStream_t stream = bench_stream();
    if (hold_ != nullptr) hold_->arm(stream);
    check(cudaEventRecord(start_, stream), "cudaEventRecord");
    work();
    check(cudaEventRecord(stop_, stream), "cudaEventRecord");
    if (hold_ != nullptr) hold_->release();
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    if (hold_ != nullptr) hold_->throw_if_timed_out();
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms);
  }

  std::function<void(int)> launch_;
  int sets_;
  StreamHold* hold_;
  int next_ = 0;
  int launches_ = 1;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
};

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

Timing time_launches(const std::function<void(int)>& launch, int sets, int samples,
                     Replay replay) {
  BatchTimer timer(launch, sets, replay);
  std::vector<double> per_launch;
  for (int s = 0; s < samples; ++s) per_launch.push_back(timer.sample());
  Timing timing;
  timing.median_ms = median_of(per_launch);
  timing.min_ms = *std::min_element(per_launch.begin(), per_launch.end());
  timing.max_ms = *std::max_element(per_launch.begin(), per_launch.end());
  timing.samples = samples;
  timing.launches_per_sample = timer.launches_per_sample();
  return timing;
}

// LOWBIT_BENCH_UNHELD=1 times without the hold: a profiler (ncu) serializes launches, so the
// hold would wait for a host that waits for it, time out and fail the run.
static bool hold_switched_off() {
  const char* text = std::getenv("LOWBIT_BENCH_UNHELD");
  return text != nullptr && std::strcmp(text, "1") == 0;
}

std::vector<double> interleaved_median_us(const std::vector<Variant>& variants, int sets,
                                          int samples) {
  StreamHold hold(device_info().l2_bytes);
  StreamHold* held = hold_switched_off() ? nullptr : &hold;
  std::vector<std::unique_ptr<BatchTimer>> timers;
  for (const Variant& v : variants) {
    timers.push_back(std::make_unique<BatchTimer>(v.launch, sets, v.replay, held));
  }
  std::vector<std::vector<double>> per_launch(variants.size());
  for (int s = 0; s < samples; ++s) {
    for (std::size_t i = 0; i < timers.size(); ++i) per_launch[i].push_back(timers[i]->sample());
  }
  std::vector<double> medians;
  for (const auto& times : per_launch) medians.push_back(median_of(times) * 1e3);
  return medians;
}

int rotation_sets(std::int64_t bytes_per_set, std::int64_t l2_bytes) {
  const std::int64_t want = l2_bytes * 5 / 2;
  return static_cast<int>(std::max<std::int64_t>(1, (want + bytes_per_set - 1) / bytes_per_set));
}

double measure_copy_gbps(int samples) {
  const std::size_t bytes = std::size_t{1} << 30;  // 1 GiB each way, ~20x the L2
  DeviceMemory source(bytes), destination(bytes);
  check(cudaMemset(source.get(), 1, bytes), "cudaMemset");
  const Timing timing = time_launches(
      [&](int) {
        check(cudaMemcpyAsync(destination.get(), source.get(), bytes, cudaMemcpyDeviceToDevice,
                              bench_stream()),
              "cudaMemcpyAsync");
      },
      1, samples);
  return 2.0 * static_cast<double>(bytes) / (timing.median_ms * 1e-3) / 1e9;
}


double measure_read_us(std::int64_t bytes, std::int64_t l2_bytes, int samples, ReadLaunch how) {
  const std::int64_t vectors = (bytes + 15) / 16;
  const int sets = rotation_sets(vectors * 16, l2_bytes);
  DeviceMemory data(static_cast<std::size_t>(vectors * 16 * sets)), sink(4096 * 4);
  check(cudaMemset(data.get(), 1, static_cast<std::size_t>(vectors * 16 * sets)), "cudaMemset");
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "sm count");
  const int blocks = std::min(4096, sms * 8);
  cudaLaunchAttribute dependent;
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  // Held like the GEMM variants (interleaved_median_us with one variant), so that the floor is
  // timed the same way as the kernels it is compared with.
  const std::vector<double> us = interleaved_median_us(
      {{[&](int set) {
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(blocks);
        config.blockDim = dim3(256);
        config.stream = bench_stream();
        config.attrs = &dependent;
        config.numAttrs = how == ReadLaunch::kGraphDependent ? 1 : 0;
        check(cudaLaunchKernelEx(&config, read_stream_kernel<4>,
                                 static_cast<const uint4*>(data.get()) + set * vectors, vectors,
                                 static_cast<unsigned*>(sink.get())),
              "read stream launch");
      }, how == ReadLaunch::kStream ? Replay::kStream : Replay::kGraph}},
      sets, samples);
  return us[0];
}

DeviceMemory::DeviceMemory(std::size_t bytes) : data_(take_device_memory(bytes, &block_bytes_)) {}
DeviceMemory::~DeviceMemory() { keep_device_memory(data_, block_bytes_); }

namespace {
__device__ std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void fill_kernel(void* out, std::int64_t count, int dtype_bytes, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t r = mix(seed ^ static_cast<std::uint64_t>(i));
    const std::uint64_t group_r = mix(seed ^ static_cast<std::uint64_t>(i / 128) ^ 0xABCDEFull);
    // Uniform in (-1, 1) times a per-128-group magnitude in 10^[-3, 3].
    const float unit = static_cast<float>(r >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
    const float magnitude = exp10f(static_cast<float>(group_r >> 40) / (1 << 24) * 6.0f - 3.0f);
    const float value = unit * magnitude + 1e-3f;
    if (dtype_bytes == 4) {
      static_cast<float*>(out)[i] = value;
    } else if (dtype_bytes == 2) {
      static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16(value);
    }
  }
}

// Bytes of a hash of (index + seed), masked.
__global__ void fill_bytes_kernel(std::uint8_t* data, std::int64_t count, std::uint64_t seed,
                                  std::uint8_t mask) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint64_t h = (i + seed) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    data[i] = static_cast<std::uint8_t>(h) & mask;
  }
}

__global__ void fill_scales_kernel(float* data, std::int64_t count, float value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    data[i] = value * (1.0f + static_cast<float>(i % 7) / 8.0f);
  }
}
}  // namespace

void fill_random_bytes(void* device, std::int64_t count, std::uint64_t seed, std::uint8_t mask) {
  fill_bytes_kernel<<<1024, 256>>>(static_cast<std::uint8_t*>(device), count, seed, mask);
  check(cudaGetLastError(), "fill_bytes_kernel");
}

void fill_scales(float* device, std::int64_t count, float value) {
  fill_scales_kernel<<<64, 256>>>(device, count, value);
  check(cudaGetLastError(), "fill_scales_kernel");
}

void fill_random_activations(void* device, std::int64_t count, int dtype_bytes,
                             std::uint64_t seed) {
  fill_kernel<<<1024, 256>>>(device, count, dtype_bytes, seed);
  check(cudaGetLastError(), "fill_kernel");
}

}  // namespace lowbit::bench

namespace lowbit::bench {
int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return count;
}
}  // namespace lowbit::bench
