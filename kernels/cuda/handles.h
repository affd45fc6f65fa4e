// RAII owners of the cuDNN and cuBLASLt library handles, and DeviceContext: the
// per-device bundle (ordinal, compute stream, handles, shared workspace) that
// every CUDA layer takes explicitly. No singletons: an executable owns one
// DeviceContext per device and per host thread (cuDNN and cuBLASLt handles and
// the plans made with them are not shared across threads; see CUDNN.md §4).
// Host code only; nothing here prints.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <utility>

#include "kernels/cuda/resources.h"

namespace cnnbench::kernels::cuda {

/// Makes `device` the calling thread's current CUDA device for the guard's
/// lifetime and restores the previous one afterwards (cudaSetDevice is
/// per-thread state).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

/// A cudnnHandle_t created on the device that is current at construction.
class CudnnHandle {
 public:
  CudnnHandle();
  ~CudnnHandle();
  CudnnHandle(CudnnHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CudnnHandle& operator=(CudnnHandle&&) = delete;
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  [[nodiscard]] cudnnHandle_t get() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
};

/// A cublasLtHandle_t. cuBLASLt takes the stream per call, so the handle holds none.
class CublasLtHandle {
 public:
  CublasLtHandle();
  ~CublasLtHandle();
  CublasLtHandle(CublasLtHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CublasLtHandle& operator=(CublasLtHandle&&) = delete;
  CublasLtHandle(const CublasLtHandle&) = delete;
  CublasLtHandle& operator=(const CublasLtHandle&) = delete;
  [[nodiscard]] cublasLtHandle_t get() const { return h_; }

 private:
  cublasLtHandle_t h_ = nullptr;
};

/// Everything a cuDNN/cuBLASLt layer needs to run on one device:
///  - `device`: the CUDA ordinal;
///  - `stream`: the compute stream; the cuDNN handle is bound to it
///    (cudnnSetStream) and cuBLASLt calls are issued on it;
///  - `cudnn`, `cublaslt`: the handles, created on `device`;
///  - `workspace`: one scratch buffer shared by every plan of the context. Plans
///    run one after another on `stream`, so one buffer sized to the largest
///    requirement is enough (CUDNN.md §4).
///
/// Set-up grows the workspace with reserve_workspace() after building the plans
/// (ConvLayer::workspace_bytes(), FcLayer::workspace_bytes()); a training step
/// never allocates. Growing reallocates, so do it before capturing CUDA graphs.
/// Members are declared so that the workspace and handles are destroyed before
/// the stream.
struct DeviceContext {
  /// Creates the stream, the handles and a workspace of `workspace_bytes` bytes
  /// on `device` (the calling thread's current device is restored afterwards).
  explicit DeviceContext(int device, int64_t workspace_bytes = 0);
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
  DeviceContext(DeviceContext&&) = delete;
  DeviceContext& operator=(DeviceContext&&) = delete;
  ~DeviceContext() = default;

 private:
  // Delegation target: `current` keeps `device` current while the members are
  // constructed (a temporary lives until the delegating constructor completes).
  DeviceContext(int device, int64_t workspace_bytes, const ScopedDevice& current);

 public:
  /// Grows the workspace to at least `bytes` (never shrinks). Waits for the
  /// stream first, since pending work may still use the old buffer.
  void reserve_workspace(int64_t bytes);
  [[nodiscard]] void* workspace_ptr() const { return workspace.get(); }
  [[nodiscard]] int64_t workspace_bytes() const { return workspace.bytes(); }

  int device = 0;
  Stream stream;
  CudnnHandle cudnn;
  CublasLtHandle cublaslt;
  DeviceBuffer workspace;
  /// cudnnGetVersion() of the loaded library (e.g. 91900 for 9.19.0); part of
  /// every plan-cache key and the gate for attributes newer than 9.0.
  int64_t cudnn_version = 0;
};

/// Versions of the cuDNN and cuBLASLt libraries, as loaded and as compiled.
/// Encodings: cuDNN 9 = major·10000 + minor·100 + patch (91900 = 9.19.0);
/// cuBLASLt = major·10000 + minor·100 + patch (130100 = 13.1.0).
struct DnnLibraryVersions {
  int64_t cudnn_runtime = 0;      ///< cudnnGetVersion()
  int64_t cudnn_compiled = 0;     ///< CUDNN_VERSION of the headers we built against
  int64_t cublaslt_runtime = 0;   ///< cublasLtGetVersion()
  int64_t cublaslt_compiled = 0;  ///< CUBLAS_VERSION of the headers
  /// An application built against cuDNN 9.z is only guaranteed on a 9.y runtime
  /// with y ≥ z (CUDNN.md §8). False means features newer than the runtime are
  /// gated off at run time; true is the supported case.
  [[nodiscard]] bool cudnn_runtime_at_least_compiled() const {
    return cudnn_runtime >= cudnn_compiled;
  }
};

/// Reads the versions and runs cudnnGraphVersionCheck() (the sub-libraries of
/// the loaded cuDNN agree with each other). Needs no GPU. Throws BackendError
/// when the loaded cuDNN is not major version 9 or the check fails, naming both
/// versions.
DnnLibraryVersions dnn_library_versions();

/// "9.19.0" for 91900 (cuDNN 9 or cuBLASLt encoding above).
std::string format_library_version(int64_t version);

}  // namespace cnnbench::kernels::cuda
