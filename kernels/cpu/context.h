// The oneDNN state one executable (or one standalone layer in a test) shares:
// the CPU engine, the in-order stream every primitive runs on, and one
// scratchpad reused by all primitives, since they run one at a time.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/host_array.h"

namespace cnnbench::kernels::cpu {

/// Engine, stream and shared scratchpad of one executable. Not copyable: layers
/// keep a reference to it.
///
/// Primitives are created with a user-managed scratchpad (see attr()); each
/// records its need with note_scratchpad() when it is created, and the owner
/// calls allocate_scratchpad() once all primitives exist, so that execution
/// never allocates. A layer used alone (tests) gets its scratchpad allocated on
/// its first execution instead.
class Context {
 public:
  /// Creates the CPU engine (index 0) and its stream. Throws dnnl::error.
  Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  [[nodiscard]] const dnnl::engine& engine() const { return engine_; }
  [[nodiscard]] dnnl::stream& stream() { return stream_; }

  /// Primitive attributes every primitive of this context is created with
  /// (user-provided scratchpad).
  [[nodiscard]] const dnnl::primitive_attr& attr() const { return attr_; }

  /// Records that some primitive needs `bytes` of scratchpad.
  void note_scratchpad(int64_t bytes);
  /// Allocates the largest scratchpad noted so far. Throws OutOfMemoryError.
  void allocate_scratchpad();
  /// A scratchpad of at least `bytes`; allocates only when allocate_scratchpad()
  /// was not called for this size (standalone layers).
  void* scratchpad(int64_t bytes);
  /// Bytes currently allocated for the scratchpad.
  [[nodiscard]] int64_t scratchpad_bytes() const { return scratchpad_.bytes(); }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::primitive_attr attr_;
  int64_t needed_ = 0;
  HostArray<uint8_t> scratchpad_;
};

}  // namespace cnnbench::kernels::cpu
