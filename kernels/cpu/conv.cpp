#include "kernels/cpu/conv.h"

#include <stdexcept>

#include "kernels/cpu/dnnl_compat.h"
#include "kernels/cpu/layout.h"

namespace cnnbench::kernels::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

/// Weight descriptor in PyTorch's layout (`plain`) or in whatever layout oneDNN prefers.
memory::desc weights_md(const models::ConvAttrs& a, int in_channels, bool plain) {
  const memory::dim k = a.out_channels;
  const memory::dim c = in_channels / a.groups;
  if (a.groups == 1) {
    return {{k, c, a.kernel_h, a.kernel_w}, memory::data_type::f32, plain ? Tag::oihw : Tag::any};
  }
  return {{a.groups, k / a.groups, c, a.kernel_h, a.kernel_w},
          memory::data_type::f32,
          plain ? Tag::goihw : Tag::any};
}

void check_shapes(const models::ConvAttrs& a, models::Shape in, models::Shape out) {
  const auto size = [](int x, int k, int s, int p) { return (x + 2 * p - k) / s + 1; };
  if (a.groups < 1 || in.c % a.groups != 0 || a.out_channels % a.groups != 0 ||
      out.c != a.out_channels || out.n != in.n ||
      out.h != size(in.h, a.kernel_h, a.stride_h, a.pad_h) ||
      out.w != size(in.w, a.kernel_w, a.stride_w, a.pad_w)) {
    throw std::invalid_argument("ConvLayer: output shape [" + std::to_string(out.n) + ", " +
                                std::to_string(out.c) + ", " + std::to_string(out.h) + ", " +
                                std::to_string(out.w) +
                                "] does not follow from the input and "
                                "attributes");
  }
}

}  // namespace

ConvLayer::ConvLayer(Context& ctx, const models::ConvAttrs& attrs, models::Shape in,
                     models::Shape out, DataFormat format, bool training,
                     WeightFormat weight_format)
    : has_bias_(attrs.bias), training_(training) {
  check_shapes(attrs, in, out);
  const auto& eng = ctx.engine();
  const memory::desc src_md = activation_md(in, format);
  const memory::desc dst_md = activation_md(out, format);
  const memory::desc w_plain = weights_md(attrs, in.c, true);
  const memory::desc w_req = weights_md(attrs, in.c, weight_format == WeightFormat::Plain);
  const memory::desc b_md({attrs.out_channels}, memory::data_type::f32, Tag::a);
  // Symmetric padding: oneDNN floors the output-size division as PyTorch does.
  const compat::Window win{.strides = {attrs.stride_h, attrs.stride_w},
                           .kernel = {},
                           .dilates = {0, 0},
                           .padding_l = {attrs.pad_h, attrs.pad_w},
                           .padding_r = {attrs.pad_h, attrs.pad_w}};

  const auto prop =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const auto fwd_pd = compat::conv_forward_pd(eng, prop, src_md, w_req, has_bias_ ? &b_md : nullptr,
                                              dst_md, win, ctx.attr());
  src_ = unbound_memory(src_md, eng);
  dst_ = unbound_memory(dst_md, eng);
  bias_ = unbound_memory(b_md, eng);
  fwd_weights_ = WeightBinding(ctx, w_plain, fwd_pd.weights_desc(), WeightFlow::ToPrimitive,
                               "convolution weights in oneDNN's layout");
  Primitive::Args fwd_args{{DNNL_ARG_SRC, src_},
                           {DNNL_ARG_WEIGHTS, fwd_weights_.primitive_memory()},
                           {DNNL_ARG_DST, dst_}};
  if (has_bias_) fwd_args.emplace_back(DNNL_ARG_BIAS, bias_);
  fwd_ = Primitive(ctx, dnnl::convolution_forward(fwd_pd), fwd_pd.scratchpad_desc(), fwd_args);
  implementation_ = std::string("fwd: ") + fwd_pd.impl_info_str();
  if (!training) return;

  const auto bwd_data_pd =
      compat::conv_backward_data_pd(eng, src_md, w_req, dst_md, win, fwd_pd, ctx.attr());
  diff_src_ = unbound_memory(src_md, eng);
  diff_dst_ = unbound_memory(dst_md, eng);
  bwd_data_weights_ =
      WeightBinding(ctx, w_plain, bwd_data_pd.weights_desc(), WeightFlow::ToPrimitive,
                    "convolution dgrad weights in oneDNN's layout");
  bwd_data_ =
      Primitive(ctx, dnnl::convolution_backward_data(bwd_data_pd), bwd_data_pd.scratchpad_desc(),
                {{DNNL_ARG_DIFF_DST, diff_dst_},
                 {DNNL_ARG_WEIGHTS, bwd_data_weights_.primitive_memory()},
                 {DNNL_ARG_DIFF_SRC, diff_src_}});

  const auto bwd_weights_pd = compat::conv_backward_weights_pd(
      eng, src_md, w_req, has_bias_ ? &b_md : nullptr, dst_md, win, fwd_pd, ctx.attr());
  diff_bias_ = unbound_memory(b_md, eng);
  diff_weights_ =
      WeightBinding(ctx, w_plain, bwd_weights_pd.diff_weights_desc(), WeightFlow::FromPrimitive,
                    "convolution weight gradients in oneDNN's layout");
  Primitive::Args wgrad_args{{DNNL_ARG_SRC, src_},
                             {DNNL_ARG_DIFF_DST, diff_dst_},
                             {DNNL_ARG_DIFF_WEIGHTS, diff_weights_.primitive_memory()}};
  if (has_bias_) wgrad_args.emplace_back(DNNL_ARG_DIFF_BIAS, diff_bias_);
  bwd_weights_ = Primitive(ctx, dnnl::convolution_backward_weights(bwd_weights_pd),
                           bwd_weights_pd.scratchpad_desc(), wgrad_args);
  implementation_ += std::string(", dgrad: ") + bwd_data_pd.impl_info_str() +
                     ", wgrad: " + bwd_weights_pd.impl_info_str();
}

void ConvLayer::forward(const float* src, const float* weights, const float* bias, float* dst) {
  src_.set_data_handle(const_cast<float*>(src));
  dst_.set_data_handle(dst);
  if (has_bias_) bias_.set_data_handle(const_cast<float*>(bias));
  fwd_weights_.bind(weights);
  fwd_.execute();
}

void ConvLayer::backward_data(const float* diff_dst, const float* weights, float* diff_src) {
  if (!training_) throw std::logic_error("ConvLayer::backward_data on a forward-only layer");
  diff_dst_.set_data_handle(const_cast<float*>(diff_dst));
  diff_src_.set_data_handle(diff_src);
  bwd_data_weights_.bind(weights);
  bwd_data_.execute();
}

void ConvLayer::backward_weights(const float* src, const float* diff_dst, float* diff_weights,
                                 float* diff_bias) {
  if (!training_) throw std::logic_error("ConvLayer::backward_weights on a forward-only layer");
  src_.set_data_handle(const_cast<float*>(src));
  diff_dst_.set_data_handle(const_cast<float*>(diff_dst));
  if (has_bias_) diff_bias_.set_data_handle(diff_bias);
  diff_weights_.bind(diff_weights);
  bwd_weights_.execute();
  diff_weights_.finish();
}

int64_t ConvLayer::private_bytes() const {
  return fwd_weights_.private_bytes() + bwd_data_weights_.private_bytes() +
         diff_weights_.private_bytes();
}

}  // namespace cnnbench::kernels::cpu
