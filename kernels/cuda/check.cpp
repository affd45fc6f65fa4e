#include "kernels/cuda/check.h"

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <unistd.h>

#include <array>

namespace cnnbench::kernels::cuda {
namespace {

std::string host_name() {
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "unknown";
  return buf.data();
}

}  // namespace

std::string format_failure(const char* library, const std::string& name_and_message,
                           const char* call, const char* file, int line) {
  return std::string(library) + " error " + name_and_message + " in `" + call + "` at " + file +
         ":" + std::to_string(line) + " on host " + host_name();
}

void throw_cuda_failure(int status, const char* call, const char* file, int line) {
  const auto err = static_cast<cudaError_t>(status);
  const std::string what = format_failure(
      "CUDA", std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")", call, file,
      line);
  if (err == cudaErrorMemoryAllocation) throw OutOfMemoryError(what, call, 0);
  throw BackendError(what);
}

void throw_cudnn_failure(int status, const char* call, const char* file, int line) {
  const auto st = static_cast<cudnnStatus_t>(status);
  std::array<char, 1024> last{};
  cudnnGetLastErrorString(last.data(), last.size());
  std::string detail = cudnnGetErrorString(st);
  if (last[0] != '\0') detail += std::string(": ") + last.data();
  const std::string what = format_failure("cuDNN", detail, call, file, line);
  if (st == CUDNN_STATUS_ALLOC_FAILED) throw OutOfMemoryError(what, call, 0);
  throw BackendError(what);
}

void throw_cublas_failure(int status, const char* call, const char* file, int line) {
  const auto st = static_cast<cublasStatus_t>(status);
  const std::string what = format_failure(
      "cuBLAS", std::string(cublasGetStatusName(st)) + " (" + cublasGetStatusString(st) + ")", call,
      file, line);
  if (st == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemoryError(what, call, 0);
  throw BackendError(what);
}

}  // namespace cnnbench::kernels::cuda
