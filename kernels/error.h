// Exceptions thrown by the compute backends.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace cnnbench::kernels {

/// A library call failed (oneDNN, CUDA, cuDNN, cuBLAS); what() names the call,
/// file:line and the library's own message.
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The backend was not built into this binary (CMake option off or library missing).
class BackendUnavailable : public BackendError {
 public:
  using BackendError::BackendError;
};

/// An allocation failed. `allocation` names what was being allocated (e.g.
/// "activations of layer1.0.conv1"), `bytes` its size.
class OutOfMemoryError : public BackendError {
 public:
  OutOfMemoryError(const std::string& what, std::string allocation, int64_t bytes)
      : BackendError(what), allocation_(std::move(allocation)), bytes_(bytes) {}
  [[nodiscard]] const std::string& allocation() const { return allocation_; }
  [[nodiscard]] int64_t bytes() const { return bytes_; }

 private:
  std::string allocation_;
  int64_t bytes_;
};

}  // namespace cnnbench::kernels
