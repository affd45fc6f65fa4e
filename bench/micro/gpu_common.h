// What the CUDA benchmark families share (CUDA builds only): the GPU session
// (device 0, its DeviceContext, L2 size and copy bandwidth), rotating sets of
// device buffers filled with random values, and the CUDA-event benchmark loop.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/micro/registry.h"
#include "kernels/backend.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/resources.h"

namespace cnnbench::bench::micro {

/// Device 0 as every CUDA benchmark of this process uses it. The device is
/// probed at construction (cuda_unavailable_reason); the DeviceContext (stream,
/// cuDNN and cuBLASLt handles) is created by the first benchmark that runs, so
/// a run filtered to CPU benchmarks never starts CUDA.
class GpuSession final : public Resources {
 public:
  GpuSession();
  ~GpuSession() override;

  /// Why no device is usable ("no CUDA device: ..."), or nullopt.
  [[nodiscard]] const std::optional<std::string>& unavailable() const { return unavailable_; }
  /// The context of device 0; throws kernels::BackendError with the reason when
  /// no device is usable.
  kernels::cuda::DeviceContext& context();
  [[nodiscard]] cudaStream_t stream() { return context().stream.get(); }
  /// L2 cache size in bytes (cudaDevAttrL2CacheSize).
  int64_t l2_bytes();
  /// Device memory free now, in bytes.
  int64_t free_bytes();
  /// The device-to-device copy bandwidth in GB/s (bytes read + written per
  /// second): the result of the copy_d2d benchmark when it ran in this process,
  /// else measured now with the same method (1 GiB, median of 10 copies).
  double copy_gbps();
  /// Records the copy_d2d benchmark's result for copy_gbps().
  void record_copy_gbps(double gbps) { copy_gbps_ = gbps; }

 private:
  std::optional<std::string> unavailable_;
  std::unique_ptr<kernels::cuda::DeviceContext> context_;
  int64_t l2_bytes_ = -1;
  double copy_gbps_ = 0;
};

/// One device buffer of a benchmark's input or output set.
struct BufferSpec {
  int64_t count = 0;  ///< elements
  kernels::DType dtype = kernels::DType::F32;
  std::string what;   ///< for out-of-memory messages, e.g. "x of layer1.0.conv2"
};

/// N sets of the same buffers, each filled with N(0, 1) values (labels: uniform
/// in [0, 1000)), never zeros. N = rotation_sets(bytes of one set, L2, limit)
/// where the limit keeps all sets within half of the free device memory, so
/// that consecutive iterations read different memory and the L2 does not
/// flatter kernels whose data would fit in it.
class BufferSets {
 public:
  BufferSets(GpuSession& gpu, const std::vector<BufferSpec>& specs, uint64_t seed);
  [[nodiscard]] int sets() const { return static_cast<int>(sets_.size()); }
  /// Buffer `index` of the set used at iteration `iteration`.
  [[nodiscard]] void* get(int64_t iteration, size_t index) const {
    return sets_[static_cast<size_t>(iteration % static_cast<int64_t>(sets_.size()))][index].get();
  }
  template <typename T>
  [[nodiscard]] T* as(int64_t iteration, size_t index) const {
    return static_cast<T*>(get(iteration, index));
  }
  /// Bytes of one set.
  [[nodiscard]] int64_t set_bytes() const { return set_bytes_; }

 private:
  std::vector<std::vector<kernels::cuda::DeviceBuffer>> sets_;
  int64_t set_bytes_ = 0;
};

/// Fills `count` elements of `dtype` at `data` with N(0, 1) values (I32:
/// uniform labels in [0, 1000)) on `stream`.
void fill_random(void* data, int64_t count, kernels::DType dtype, uint64_t seed,
                 cudaStream_t stream);

/// The benchmark loop for device work: enqueues `enqueue(i)` (i counts
/// iterations from 0) on `stream` between two CUDA events and reports the
/// events' elapsed time as the iteration's manual time. Iteration i is enqueued
/// before iteration i − 1 is waited for, so the device always has the next
/// launch queued: host launch latency and the wait never fall between a start
/// and a stop event. Google Benchmark adds the manual times of all iterations,
/// so reporting iteration i − 1's time during iteration i (and the last two in
/// the last one) gives the same total. Returns the total in seconds.
template <typename Enqueue>
double time_device_loop(benchmark::State& state, cudaStream_t stream, Enqueue&& enqueue) {
  kernels::cuda::Event start[2];
  kernels::cuda::Event stop[2];
  double total = 0;
  auto collect = [&](int slot) {
    CNNBENCH_CHECK_CUDA(cudaEventSynchronize(stop[slot].get()));
    const double seconds = 1e-3 * static_cast<double>(stop[slot].elapsed_ms_since(start[slot]));
    state.SetIterationTime(seconds);
    total += seconds;
  };
  const int64_t last = static_cast<int64_t>(state.max_iterations) - 1;
  int64_t i = 0;
  for (auto _ : state) {
    const int slot = static_cast<int>(i & 1);
    start[slot].record(stream);
    enqueue(i);
    stop[slot].record(stream);
    if (i > 0) collect(1 - slot);
    if (i == last) collect(slot);
    ++i;
  }
  return total;
}

/// Counters of a memory-bound kernel: "GB/s" from `bytes_per_iteration`, the
/// device's copy bandwidth "copy_GB/s" and the ratio "pct_of_copy" (percent).
void set_bandwidth_counters(benchmark::State& state, GpuSession& gpu, double bytes_per_iteration,
                            double total_seconds);

/// Registers the convolution benchmarks (cuda_layers.cpp).
int register_cuda_layer_benchmarks(const Options& options, FixtureSlot& slot, GpuSession& gpu);
/// Registers the kernel benchmarks and the copy reference (cuda_kernels.cpp).
int register_cuda_kernel_benchmarks(const Options& options, FixtureSlot& slot, GpuSession& gpu);

}  // namespace cnnbench::bench::micro
