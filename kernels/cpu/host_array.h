// An owning, 64-byte aligned host array: the one way the CPU backend allocates
// tensor memory, so that every allocation is named when it fails.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/error.h"

namespace cnnbench::kernels::cpu {

/// `count` elements of T, zero-filled, aligned to 64 bytes (one cache line, one
/// AVX-512 vector). Throws OutOfMemoryError naming `what` when the allocation fails.
template <class T>
class HostArray {
 public:
  HostArray() = default;
  HostArray(int64_t count, const std::string& what) : count_(count) {
    if (count <= 0) return;
    const auto bytes = static_cast<size_t>(count) * sizeof(T);
    const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded);
    if (p == nullptr) {
      throw OutOfMemoryError(
          "could not allocate " + std::to_string(rounded) + " bytes of host memory for " + what,
          what, static_cast<int64_t>(rounded));
    }
    // Zero-filling touches every page now, at compile time, instead of in the first step.
    std::memset(p, 0, rounded);
    data_.reset(static_cast<T*>(p));
  }

  [[nodiscard]] T* data() { return data_.get(); }
  [[nodiscard]] const T* data() const { return data_.get(); }
  [[nodiscard]] int64_t count() const { return count_; }
  [[nodiscard]] int64_t bytes() const { return count_ * static_cast<int64_t>(sizeof(T)); }
  [[nodiscard]] bool empty() const { return count_ == 0; }

 private:
  static constexpr size_t kAlign = 64;
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  int64_t count_ = 0;
};

}  // namespace cnnbench::kernels::cpu
