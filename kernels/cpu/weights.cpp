#include "kernels/cpu/weights.h"

namespace cnnbench::kernels::cpu {

WeightBinding::WeightBinding(Context& ctx, const dnnl::memory::desc& plain,
                             const dnnl::memory::desc& preferred, WeightFlow flow,
                             const std::string& what)
    : flow_(flow), user_(unbound_memory(plain, ctx.engine())) {
  if (preferred == plain) {
    primitive_ = user_;
    return;
  }
  copy_ = HostArray<uint8_t>(static_cast<int64_t>(preferred.get_size()), what);
  primitive_ = dnnl::memory(preferred, ctx.engine(), copy_.data());
  reorder_ = flow == WeightFlow::ToPrimitive ? make_reorder(ctx, user_, primitive_)
                                             : make_reorder(ctx, primitive_, user_);
}

void WeightBinding::bind(const float* user) {
  // oneDNN takes a non-const handle even for tensors it only reads.
  user_.set_data_handle(const_cast<float*>(user));
  if (flow_ == WeightFlow::ToPrimitive && reorder_.valid()) reorder_.execute();
}

void WeightBinding::finish() {
  if (flow_ == WeightFlow::FromPrimitive && reorder_.valid()) reorder_.execute();
}

}  // namespace cnnbench::kernels::cpu
