#include "kernels/cpu/activation.h"

#include <stdexcept>

#include "kernels/cpu/dnnl_compat.h"
#include "kernels/cpu/layout.h"

namespace cnnbench::kernels::cpu {

ActivationLayer::ActivationLayer(Context& ctx, models::ActivationAttrs::Kind kind,
                                 models::Shape shape, DataFormat format, bool training)
    : training_(training) {
  const auto& eng = ctx.engine();
  const dnnl::memory::desc md = activation_md(shape, format);
  const bool relu = kind == models::ActivationAttrs::Kind::Relu;
  // relu6 is oneDNN's clip_v2 with bounds alpha = 0, beta = 6: unlike clip, its
  // gradient can be computed from the output (1 where alpha < y < beta).
  const auto alg = relu ? dnnl::algorithm::eltwise_relu_use_dst_for_bwd
                        : dnnl::algorithm::eltwise_clip_v2_use_dst_for_bwd;
  const float alpha = 0.0F;
  const float beta = relu ? 0.0F : 6.0F;
  const auto prop =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const auto fwd_pd = compat::eltwise_forward_pd(eng, prop, alg, md, alpha, beta, ctx.attr());
  src_ = unbound_memory(md, eng);
  dst_ = unbound_memory(md, eng);
  fwd_ = Primitive(ctx, dnnl::eltwise_forward(fwd_pd), fwd_pd.scratchpad_desc(),
                   {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
  if (!training) return;
  const auto bwd_pd = compat::eltwise_backward_pd(eng, alg, md, alpha, beta, fwd_pd, ctx.attr());
  diff_src_ = unbound_memory(md, eng);
  diff_dst_ = unbound_memory(md, eng);
  bwd_ = Primitive(
      ctx, dnnl::eltwise_backward(bwd_pd), bwd_pd.scratchpad_desc(),
      {{DNNL_ARG_DST, dst_}, {DNNL_ARG_DIFF_DST, diff_dst_}, {DNNL_ARG_DIFF_SRC, diff_src_}});
}

void ActivationLayer::forward(const float* src, float* dst) {
  src_.set_data_handle(const_cast<float*>(src));
  dst_.set_data_handle(dst);
  fwd_.execute();
}

void ActivationLayer::backward(const float* dst, const float* diff_dst, float* diff_src) {
  if (!training_) throw std::logic_error("ActivationLayer::backward on a forward-only layer");
  dst_.set_data_handle(const_cast<float*>(dst));
  diff_dst_.set_data_handle(const_cast<float*>(diff_dst));
  diff_src_.set_data_handle(diff_src);
  bwd_.execute();
}

}  // namespace cnnbench::kernels::cpu
