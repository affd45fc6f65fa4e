// RAII owners of CUDA runtime resources: device memory, streams, events. Move-only.
// Business code never calls cudaFree / cudaStreamDestroy / cudaEventDestroy itself.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "kernels/cuda/check.h"

namespace cnnbench::kernels::cuda {

/// `bytes` of device memory from cudaMalloc (256-byte aligned). Throws
/// OutOfMemoryError naming `what` (e.g. "activations of layer1.0.conv1") and the
/// size when the device is full.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int64_t bytes, std::string what) : bytes_(bytes) {
    if (bytes <= 0) return;
    const cudaError_t st = cudaMalloc(&ptr_, static_cast<size_t>(bytes));
    if (st != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky-free allocation error
      throw OutOfMemoryError("CUDA out of memory allocating " + std::to_string(bytes) +
                                 " bytes for " + what + " (" + cudaGetErrorString(st) + ")",
                             std::move(what), bytes);
    }
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] void* get() const { return ptr_; }
  template <typename T>
  [[nodiscard]] T* as() const { return static_cast<T*>(ptr_); }
  [[nodiscard]] int64_t bytes() const { return bytes_; }

 private:
  void reset() noexcept {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

/// A non-blocking CUDA stream (cudaStreamNonBlocking) with an optional priority
/// (lower number = higher priority; see cudaDeviceGetStreamPriorityRange).
class Stream {
 public:
  explicit Stream(int priority = 0) {
    CNNBENCH_CHECK_CUDA(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, priority));
  }
  ~Stream() {
    if (s_ != nullptr) (void)cudaStreamDestroy(s_);
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return s_; }
  void synchronize() const { CNNBENCH_CHECK_CUDA(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

/// A CUDA event; timing-capable unless created with disable_timing.
class Event {
 public:
  explicit Event(bool disable_timing = false) {
    CNNBENCH_CHECK_CUDA(
        cudaEventCreateWithFlags(&e_, disable_timing ? cudaEventDisableTiming : cudaEventDefault));
  }
  ~Event() {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  [[nodiscard]] cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) const { CNNBENCH_CHECK_CUDA(cudaEventRecord(e_, s)); }
  /// Milliseconds between `start` and this event (both recorded and complete).
  [[nodiscard]] float elapsed_ms_since(const Event& start) const {
    float ms = 0;
    CNNBENCH_CHECK_CUDA(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace cnnbench::kernels::cuda
