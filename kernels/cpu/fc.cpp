#include "kernels/cpu/fc.h"

#include <stdexcept>

#include "kernels/cpu/dnnl_compat.h"
#include "kernels/cpu/layout.h"

namespace cnnbench::kernels::cpu {

using dnnl::memory;
using Tag = memory::format_tag;

FullyConnectedLayer::FullyConnectedLayer(Context& ctx, const models::FullyConnectedAttrs& attrs,
                                         models::Shape in, models::Shape out, DataFormat format,
                                         bool training, WeightFormat weight_format)
    : has_bias_(attrs.bias), training_(training) {
  if (out.n != in.n || out.c != attrs.out_features || out.h != 1 || out.w != 1) {
    throw std::invalid_argument("FullyConnectedLayer: output must be [N, out_features, 1, 1]");
  }
  const auto& eng = ctx.engine();
  // With H = W = 1 both layouts are the same memory: describe it as 2-D (nc, and
  // PyTorch's [out, in] weight as oi), which oneDNN's gemm implementation runs
  // without any weight reorder. A 4-D input keeps its layout; PyTorch's
  // [out, C·H·W] weight is then oihw of dims [out, C, H, W].
  const bool flat = int64_t{in.h} * in.w == 1;
  const memory::desc src_md = flat ? memory::desc({in.n, in.c}, memory::data_type::f32, Tag::nc)
                                   : activation_md(in, format);
  const memory::desc dst_md({out.n, out.c}, memory::data_type::f32, Tag::nc);
  const memory::dims w_dims = flat ? memory::dims{attrs.out_features, in.c}
                                   : memory::dims{attrs.out_features, in.c, in.h, in.w};
  const Tag plain = flat ? Tag::oi : Tag::oihw;
  const memory::desc w_plain(w_dims, memory::data_type::f32, plain);
  const bool use_plain =
      weight_format == WeightFormat::Plain || (weight_format == WeightFormat::Auto && flat);
  const memory::desc w_req(w_dims, memory::data_type::f32, use_plain ? plain : Tag::any);
  const memory::desc b_md({attrs.out_features}, memory::data_type::f32, Tag::a);

  const auto prop =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const auto fwd_pd = compat::inner_product_forward_pd(
      eng, prop, src_md, w_req, has_bias_ ? &b_md : nullptr, dst_md, ctx.attr());
  src_ = unbound_memory(src_md, eng);
  dst_ = unbound_memory(dst_md, eng);
  bias_ = unbound_memory(b_md, eng);
  fwd_weights_ = WeightBinding(ctx, w_plain, fwd_pd.weights_desc(), WeightFlow::ToPrimitive,
                               "fully connected weights in oneDNN's layout");
  Primitive::Args fwd_args{{DNNL_ARG_SRC, src_},
                           {DNNL_ARG_WEIGHTS, fwd_weights_.primitive_memory()},
                           {DNNL_ARG_DST, dst_}};
  if (has_bias_) fwd_args.emplace_back(DNNL_ARG_BIAS, bias_);
  fwd_ = Primitive(ctx, dnnl::inner_product_forward(fwd_pd), fwd_pd.scratchpad_desc(), fwd_args);
  implementation_ = std::string("fwd: ") + fwd_pd.impl_info_str();
  if (!training) return;

  const auto bwd_data_pd =
      compat::inner_product_backward_data_pd(eng, src_md, w_req, dst_md, fwd_pd, ctx.attr());
  diff_src_ = unbound_memory(src_md, eng);
  diff_dst_ = unbound_memory(dst_md, eng);
  bwd_data_weights_ =
      WeightBinding(ctx, w_plain, bwd_data_pd.weights_desc(), WeightFlow::ToPrimitive,
                    "fully connected dgrad weights in oneDNN's layout");
  bwd_data_ =
      Primitive(ctx, dnnl::inner_product_backward_data(bwd_data_pd), bwd_data_pd.scratchpad_desc(),
                {{DNNL_ARG_DIFF_DST, diff_dst_},
                 {DNNL_ARG_WEIGHTS, bwd_data_weights_.primitive_memory()},
                 {DNNL_ARG_DIFF_SRC, diff_src_}});

  const auto bwd_weights_pd = compat::inner_product_backward_weights_pd(
      eng, src_md, w_req, has_bias_ ? &b_md : nullptr, dst_md, fwd_pd, ctx.attr());
  diff_bias_ = unbound_memory(b_md, eng);
  diff_weights_ =
      WeightBinding(ctx, w_plain, bwd_weights_pd.diff_weights_desc(), WeightFlow::FromPrimitive,
                    "fully connected weight gradients in oneDNN's layout");
  Primitive::Args wgrad_args{{DNNL_ARG_SRC, src_},
                             {DNNL_ARG_DIFF_DST, diff_dst_},
                             {DNNL_ARG_DIFF_WEIGHTS, diff_weights_.primitive_memory()}};
  if (has_bias_) wgrad_args.emplace_back(DNNL_ARG_DIFF_BIAS, diff_bias_);
  bwd_weights_ = Primitive(ctx, dnnl::inner_product_backward_weights(bwd_weights_pd),
                           bwd_weights_pd.scratchpad_desc(), wgrad_args);
  implementation_ += std::string(", dgrad: ") + bwd_data_pd.impl_info_str() +
                     ", wgrad: " + bwd_weights_pd.impl_info_str();
}

void FullyConnectedLayer::forward(const float* src, const float* weights, const float* bias,
                                  float* dst) {
  src_.set_data_handle(const_cast<float*>(src));
  dst_.set_data_handle(dst);
  if (has_bias_) bias_.set_data_handle(const_cast<float*>(bias));
  fwd_weights_.bind(weights);
  fwd_.execute();
}

void FullyConnectedLayer::backward_data(const float* diff_dst, const float* weights,
                                        float* diff_src) {
  if (!training_)
    throw std::logic_error("FullyConnectedLayer::backward_data on a forward-only layer");
  diff_dst_.set_data_handle(const_cast<float*>(diff_dst));
  diff_src_.set_data_handle(diff_src);
  bwd_data_weights_.bind(weights);
  bwd_data_.execute();
}

void FullyConnectedLayer::backward_weights(const float* src, const float* diff_dst,
                                           float* diff_weights, float* diff_bias) {
  if (!training_)
    throw std::logic_error("FullyConnectedLayer::backward_weights on a forward-only layer");
  src_.set_data_handle(const_cast<float*>(src));
  diff_dst_.set_data_handle(const_cast<float*>(diff_dst));
  if (has_bias_) diff_bias_.set_data_handle(diff_bias);
  diff_weights_.bind(diff_weights);
  bwd_weights_.execute();
  diff_weights_.finish();
}

int64_t FullyConnectedLayer::private_bytes() const {
  return fwd_weights_.private_bytes() + bwd_data_weights_.private_bytes() +
         diff_weights_.private_bytes();
}

}  // namespace cnnbench::kernels::cpu
