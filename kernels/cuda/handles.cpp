#include "kernels/cuda/handles.h"

#include <cublas_api.h>

#include "kernels/cuda/check.h"
#include "kernels/error.h"

namespace cnnbench::kernels::cuda {

ScopedDevice::ScopedDevice(int device) {
  CNNBENCH_CHECK_CUDA(cudaGetDevice(&previous_));
  if (previous_ != device) {
    CNNBENCH_CHECK_CUDA(cudaSetDevice(device));
    changed_ = true;
  }
}

ScopedDevice::~ScopedDevice() {
  if (changed_) (void)cudaSetDevice(previous_);
}

CudnnHandle::CudnnHandle() { CNNBENCH_CHECK_CUDNN(cudnnCreate(&h_)); }

CudnnHandle::~CudnnHandle() {
  if (h_ != nullptr) (void)cudnnDestroy(h_);
}

CublasLtHandle::CublasLtHandle() { CNNBENCH_CHECK_CUBLAS(cublasLtCreate(&h_)); }

CublasLtHandle::~CublasLtHandle() {
  if (h_ != nullptr) (void)cublasLtDestroy(h_);
}

DeviceContext::DeviceContext(int device_ordinal, int64_t workspace_size)
    : DeviceContext(device_ordinal, workspace_size, ScopedDevice{device_ordinal}) {}

DeviceContext::DeviceContext(int device_ordinal, int64_t workspace_size,
                             const ScopedDevice& /*current*/)
    : device(device_ordinal),
      stream(),
      cudnn(),
      cublaslt(),
      workspace(workspace_size,
                "cuDNN/cuBLASLt workspace on device " + std::to_string(device_ordinal)),
      cudnn_version(static_cast<int64_t>(cudnnGetVersion())) {
  CNNBENCH_CHECK_CUDNN(cudnnSetStream(cudnn.get(), stream.get()));
}

void DeviceContext::reserve_workspace(int64_t bytes) {
  if (bytes <= workspace.bytes()) return;
  const ScopedDevice current(device);
  stream.synchronize();
  workspace = DeviceBuffer();  // free first so that the peak is the new size only
  workspace = DeviceBuffer(bytes, "cuDNN/cuBLASLt workspace on device " + std::to_string(device));
}

std::string format_library_version(int64_t version) {
  return std::to_string(version / 10000) + "." + std::to_string((version % 10000) / 100) + "." +
         std::to_string(version % 100);
}

DnnLibraryVersions dnn_library_versions() {
  DnnLibraryVersions v;
  v.cudnn_runtime = static_cast<int64_t>(cudnnGetVersion());
  v.cudnn_compiled = CUDNN_VERSION;
  v.cublaslt_runtime = static_cast<int64_t>(cublasLtGetVersion());
  v.cublaslt_compiled = CUBLAS_VERSION;
  if (v.cudnn_runtime / 10000 != CUDNN_MAJOR) {
    throw BackendError("cuDNN " + format_library_version(v.cudnn_runtime) +
                       " was loaded but this binary was built against cuDNN " +
                       format_library_version(v.cudnn_compiled) +
                       "; the graph API code needs a cuDNN " + std::to_string(CUDNN_MAJOR) +
                       ".x runtime");
  }
  const cudnnStatus_t st = cudnnGraphVersionCheck();
  if (st != CUDNN_STATUS_SUCCESS) {
    throw BackendError(std::string("cudnnGraphVersionCheck failed: ") + cudnnGetErrorString(st) +
                       " (the loaded cuDNN " + format_library_version(v.cudnn_runtime) +
                       " has sub-libraries of different versions; built against " +
                       format_library_version(v.cudnn_compiled) + ")");
  }
  return v;
}

}  // namespace cnnbench::kernels::cuda
