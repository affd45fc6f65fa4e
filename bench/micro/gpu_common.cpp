#include "bench/micro/gpu_common.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <vector>

#include "bench/micro/flops.h"
#include "bench/micro/timing.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/error.h"

namespace cnnbench::bench::micro {

namespace kc = kernels::cuda;

GpuSession::GpuSession() = default;

GpuSession::~GpuSession() {
  if (context_) (void)cudaStreamSynchronize(context_->stream.get());
}

kc::DeviceContext& GpuSession::context() {
  if (!context_) {
    if (!unavailable_) unavailable_ = kc::cuda_unavailable_reason();
    if (unavailable_) throw kernels::BackendError(*unavailable_);
    context_ = std::make_unique<kc::DeviceContext>(0);
  }
  return *context_;
}

int64_t GpuSession::l2_bytes() {
  if (l2_bytes_ < 0) {
    const kc::ScopedDevice device(context().device);
    int bytes = 0;
    CNNBENCH_CHECK_CUDA(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, context().device));
    l2_bytes_ = bytes;
  }
  return l2_bytes_;
}

int64_t GpuSession::free_bytes() {
  const kc::ScopedDevice device(context().device);
  size_t free = 0;
  size_t total = 0;
  CNNBENCH_CHECK_CUDA(cudaMemGetInfo(&free, &total));
  return static_cast<int64_t>(free);
}

double GpuSession::copy_gbps() {
  if (copy_gbps_ > 0) return copy_gbps_;
  const kc::ScopedDevice device(context().device);
  // Same size as the copy_d2d benchmark: far beyond any L2, so it measures DRAM.
  const int64_t bytes = std::min<int64_t>(int64_t{1} << 30, free_bytes() / 4);
  const kc::DeviceBuffer src(bytes, "copy bandwidth reference source");
  const kc::DeviceBuffer dst(bytes, "copy bandwidth reference destination");
  const cudaStream_t s = stream();
  fill_random(src.get(), bytes / 4, kernels::DType::F32, 7, s);
  const kc::Event start;
  const kc::Event stop;
  std::vector<double> seconds;
  for (int i = 0; i < 12; ++i) {
    start.record(s);
    CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(dst.get(), src.get(), static_cast<size_t>(bytes),
                                        cudaMemcpyDeviceToDevice, s));
    stop.record(s);
    CNNBENCH_CHECK_CUDA(cudaEventSynchronize(stop.get()));
    if (i >= 2) seconds.push_back(1e-3 * stop.elapsed_ms_since(start));  // 2 warm-up copies
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = 0.5 * (seconds[4] + seconds[5]);
  copy_gbps_ = gigabytes_per_second(static_cast<double>(copy_bytes(bytes)), median);
  return copy_gbps_;
}

void fill_random(void* data, int64_t count, kernels::DType dtype, uint64_t seed,
                 cudaStream_t stream) {
  if (count <= 0) return;
  if (dtype == kernels::DType::I32) {
    const int n = static_cast<int>(std::min<int64_t>(count, int64_t{1} << 30));
    kc::synthetic_labels(static_cast<int32_t*>(data), n, 1000, seed, stream);
    return;
  }
  // synthetic_images takes int dims: fill in chunks of at most 2^30 elements.
  constexpr int64_t kChunk = int64_t{1} << 30;
  const int64_t size = kernels::dtype_size(dtype);
  for (int64_t done = 0; done < count; done += kChunk) {
    const int w = static_cast<int>(std::min(kChunk, count - done));
    const models::Shape shape{.n = 1, .c = 1, .h = 1, .w = w};
    void* p = static_cast<char*>(data) + done * size;
    const uint64_t chunk_seed = seed + static_cast<uint64_t>(done / kChunk);
    switch (dtype) {
      case kernels::DType::F32:
        kc::synthetic_images(static_cast<float*>(p), shape, 1, kernels::DataFormat::NCHW,
                             chunk_seed, stream);
        break;
      case kernels::DType::F16:
        kc::synthetic_images(static_cast<__half*>(p), shape, 1, kernels::DataFormat::NCHW,
                             chunk_seed, stream);
        break;
      case kernels::DType::BF16:
        kc::synthetic_images(static_cast<__nv_bfloat16*>(p), shape, 1, kernels::DataFormat::NCHW,
                             chunk_seed, stream);
        break;
      case kernels::DType::I32: break;
    }
  }
}

BufferSets::BufferSets(GpuSession& gpu, const std::vector<BufferSpec>& specs, uint64_t seed) {
  const kc::ScopedDevice device(gpu.context().device);
  for (const BufferSpec& spec : specs) set_bytes_ += spec.count * kernels::dtype_size(spec.dtype);
  const int64_t budget = gpu.free_bytes() / 2;
  const int limit = static_cast<int>(
      std::clamp<int64_t>(set_bytes_ > 0 ? budget / set_bytes_ : 1, 1, 16));
  const int count = rotation_sets(set_bytes_, gpu.l2_bytes(), limit);
  const cudaStream_t stream = gpu.stream();
  for (int s = 0; s < count; ++s) {
    std::vector<kc::DeviceBuffer> set;
    for (size_t b = 0; b < specs.size(); ++b) {
      const BufferSpec& spec = specs[b];
      set.emplace_back(spec.count * kernels::dtype_size(spec.dtype),
                       spec.what + " (benchmark set " + std::to_string(s) + ")");
      fill_random(set.back().get(), spec.count, spec.dtype,
                  seed + 1000 * static_cast<uint64_t>(s) + b, stream);
    }
    sets_.push_back(std::move(set));
  }
  CNNBENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
}

void set_bandwidth_counters(benchmark::State& state, GpuSession& gpu, double bytes_per_iteration,
                            double total_seconds) {
  const double gbps = gigabytes_per_second(
      bytes_per_iteration * static_cast<double>(state.iterations()), total_seconds);
  const double copy = gpu.copy_gbps();
  state.counters["GB/s"] = gbps;
  state.counters["copy_GB/s"] = copy;
  state.counters["pct_of_copy"] = copy > 0 ? 100.0 * gbps / copy : 0.0;
}

}  // namespace cnnbench::bench::micro
