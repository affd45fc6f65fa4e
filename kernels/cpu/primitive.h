// A oneDNN primitive with its arguments bound once, executed without building
// an argument map (dnnl.hpp's execute() allocates one per call).
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <utility>
#include <vector>

#include "kernels/cpu/context.h"

namespace cnnbench::kernels::cpu {

/// One primitive and the memory objects it reads and writes. Callers point the
/// memory objects at their buffers with set_data_handle() before execute();
/// the scratchpad comes from the Context.
class Primitive {
 public:
  using Args = std::vector<std::pair<int, dnnl::memory>>;

  Primitive() = default;
  /// `scratchpad_md` is the primitive descriptor's scratchpad_desc(); its size is
  /// noted in `ctx`. `args` pairs DNNL_ARG_* with memory objects.
  Primitive(Context& ctx, dnnl::primitive prim, const dnnl::memory::desc& scratchpad_md, Args args);

  /// Runs the primitive on the context's stream. Throws BackendError naming the
  /// primitive kind when oneDNN reports a failure.
  void execute();
  [[nodiscard]] bool valid() const { return ctx_ != nullptr; }

 private:
  Context* ctx_ = nullptr;
  dnnl::primitive prim_;
  Args args_;
  std::vector<dnnl_exec_arg_t> c_args_;
  dnnl::memory scratchpad_;
  int64_t scratchpad_bytes_ = 0;
};

/// A reorder primitive from `src` to `dst` (same dims, different layouts).
Primitive make_reorder(Context& ctx, const dnnl::memory& src, const dnnl::memory& dst);

/// A memory object of descriptor `md` whose buffer is set later with set_data_handle().
dnnl::memory unbound_memory(const dnnl::memory::desc& md, const dnnl::engine& engine);

}  // namespace cnnbench::kernels::cpu
