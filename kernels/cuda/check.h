// Error checks for CUDA, cuDNN and cuBLAS/cuBLASLt calls (NCCL's are mpi/'s). Each macro
// evaluates the call once and, on failure, throws kernels::BackendError whose
// message holds the call as text, file:line, the library's own error name and
// message, and the host name, so that every rank fails with a readable line
// (the caller adds the rank). Host code only.
#pragma once

#include <string>

#include "kernels/error.h"

namespace cnnbench::kernels::cuda {

/// Builds "<library> error <name> (<message>) in `<call>` at <file>:<line> on host <host>".
std::string format_failure(const char* library, const std::string& name_and_message,
                           const char* call, const char* file, int line);

/// Throws BackendError (OutOfMemoryError for out-of-memory statuses) for a failed call.
[[noreturn]] void throw_cuda_failure(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_failure(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_failure(int status, const char* call, const char* file, int line);

}  // namespace cnnbench::kernels::cuda

#define CNNBENCH_CHECK_CUDA(call)                                                              \
  do {                                                                                         \
    const auto cnnbench_status_ = (call);                                                      \
    if (static_cast<int>(cnnbench_status_) != 0)                                               \
      ::cnnbench::kernels::cuda::throw_cuda_failure(static_cast<int>(cnnbench_status_), #call, \
                                                    __FILE__, __LINE__);                       \
  } while (0)

#define CNNBENCH_CHECK_CUDNN(call)                                                              \
  do {                                                                                          \
    const auto cnnbench_status_ = (call);                                                       \
    if (static_cast<int>(cnnbench_status_) != 0)                                                \
      ::cnnbench::kernels::cuda::throw_cudnn_failure(static_cast<int>(cnnbench_status_), #call, \
                                                     __FILE__, __LINE__);                       \
  } while (0)

#define CNNBENCH_CHECK_CUBLAS(call)                                                              \
  do {                                                                                           \
    const auto cnnbench_status_ = (call);                                                        \
    if (static_cast<int>(cnnbench_status_) != 0)                                                 \
      ::cnnbench::kernels::cuda::throw_cublas_failure(static_cast<int>(cnnbench_status_), #call, \
                                                      __FILE__, __LINE__);                       \
  } while (0)

/// After a kernel launch: checks the launch itself (not its completion).
#define CNNBENCH_CHECK_LAUNCH() CNNBENCH_CHECK_CUDA(cudaGetLastError())
