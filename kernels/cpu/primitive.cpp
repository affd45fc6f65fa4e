#include "kernels/cpu/primitive.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <string>

#include "kernels/error.h"

namespace cnnbench::kernels::cpu {

Primitive::Primitive(Context& ctx, dnnl::primitive prim, const dnnl::memory::desc& scratchpad_md,
                     Args args)
    : ctx_(&ctx), prim_(std::move(prim)), args_(std::move(args)) {
  scratchpad_bytes_ = static_cast<int64_t>(scratchpad_md.get_size());
  if (scratchpad_bytes_ > 0) {
    ctx.note_scratchpad(scratchpad_bytes_);
    scratchpad_ = unbound_memory(scratchpad_md, ctx.engine());
    args_.emplace_back(DNNL_ARG_SCRATCHPAD, scratchpad_);
  }
  c_args_.reserve(args_.size());
  for (const auto& [arg, mem] : args_) c_args_.push_back({arg, mem.get()});
}

void Primitive::execute() {
  if (scratchpad_bytes_ > 0) scratchpad_.set_data_handle(ctx_->scratchpad(scratchpad_bytes_));
  const dnnl_status_t status = dnnl_primitive_execute(
      prim_.get(), ctx_->stream().get(), static_cast<int>(c_args_.size()), c_args_.data());
  if (status != dnnl_success) {
    throw BackendError(
        "dnnl_primitive_execute failed for a oneDNN " +
        std::string(dnnl_prim_kind2str(static_cast<dnnl_primitive_kind_t>(prim_.get_kind()))) +
        " primitive: status " + std::to_string(static_cast<int>(status)));
  }
}

Primitive make_reorder(Context& ctx, const dnnl::memory& src, const dnnl::memory& dst) {
  const dnnl::reorder::primitive_desc pd(ctx.engine(), src.get_desc(), ctx.engine(), dst.get_desc(),
                                         ctx.attr());
  return {ctx, dnnl::reorder(pd), pd.scratchpad_desc(), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}}};
}

dnnl::memory unbound_memory(const dnnl::memory::desc& md, const dnnl::engine& engine) {
  return {md, engine, DNNL_MEMORY_NONE};
}

}  // namespace cnnbench::kernels::cpu
