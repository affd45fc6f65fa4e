#include "kernels/cpu/batchnorm.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu/dnnl_compat.h"
#include "kernels/cpu/layout.h"

namespace cnnbench::kernels::cpu {

using dnnl::memory;

BatchNormLayer::BatchNormLayer(Context& ctx, const models::BatchNormAttrs& attrs,
                               models::Shape shape, DataFormat format, bool training)
    : attrs_(attrs),
      channels_(shape.c),
      reduced_(int64_t{shape.n} * shape.h * shape.w),
      training_(training),
      running_mean_(shape.c, "batchnorm running mean"),
      running_var_(shape.c, "batchnorm running variance"),
      mean_(shape.c, "batchnorm batch mean"),
      variance_(shape.c, "batchnorm batch variance") {
  if (training && reduced_ < 2) {
    throw std::invalid_argument(
        "BatchNormLayer: training needs more than one value per channel (N·H·W = " +
        std::to_string(reduced_) + ")");
  }
  for (int c = 0; c < channels_; ++c) running_var_.data()[c] = 1.0F;

  const auto& eng = ctx.engine();
  const memory::desc data_md = activation_md(shape, format);
  const memory::desc c_md({shape.c}, memory::data_type::f32, memory::format_tag::a);
  src_ = unbound_memory(data_md, eng);
  dst_ = unbound_memory(data_md, eng);
  scale_ = unbound_memory(c_md, eng);
  shift_ = unbound_memory(c_md, eng);
  mean_mem_ = dnnl::memory(c_md, eng, mean_.data());
  var_mem_ = dnnl::memory(c_md, eng, variance_.data());
  run_mean_mem_ = dnnl::memory(c_md, eng, running_mean_.data());
  run_var_mem_ = dnnl::memory(c_md, eng, running_var_.data());

  const auto flags = compat::scale_shift_flags();
  const auto infer_pd =
      compat::batchnorm_forward_pd(eng, dnnl::prop_kind::forward_inference, data_md, attrs.eps,
                                   flags | dnnl::normalization_flags::use_global_stats, ctx.attr());
  fwd_infer_ =
      Primitive(ctx, dnnl::batch_normalization_forward(infer_pd), infer_pd.scratchpad_desc(),
                {{DNNL_ARG_SRC, src_},
                 {DNNL_ARG_DST, dst_},
                 {DNNL_ARG_SCALE, scale_},
                 {DNNL_ARG_SHIFT, shift_},
                 {DNNL_ARG_MEAN, run_mean_mem_},
                 {DNNL_ARG_VARIANCE, run_var_mem_}});
  if (!training) return;

  const auto train_pd = compat::batchnorm_forward_pd(eng, dnnl::prop_kind::forward_training,
                                                     data_md, attrs.eps, flags, ctx.attr());
  fwd_train_ =
      Primitive(ctx, dnnl::batch_normalization_forward(train_pd), train_pd.scratchpad_desc(),
                {{DNNL_ARG_SRC, src_},
                 {DNNL_ARG_DST, dst_},
                 {DNNL_ARG_SCALE, scale_},
                 {DNNL_ARG_SHIFT, shift_},
                 {DNNL_ARG_MEAN, mean_mem_},
                 {DNNL_ARG_VARIANCE, var_mem_}});
  const auto bwd_pd =
      compat::batchnorm_backward_pd(eng, data_md, attrs.eps, flags, train_pd, ctx.attr());
  diff_src_ = unbound_memory(data_md, eng);
  diff_dst_ = unbound_memory(data_md, eng);
  diff_scale_ = unbound_memory(c_md, eng);
  diff_shift_ = unbound_memory(c_md, eng);
  Primitive::Args bwd_args{{DNNL_ARG_SRC, src_},
                           {DNNL_ARG_DIFF_DST, diff_dst_},
                           {DNNL_ARG_SCALE, scale_},
                           {DNNL_ARG_MEAN, mean_mem_},
                           {DNNL_ARG_VARIANCE, var_mem_},
                           {DNNL_ARG_DIFF_SRC, diff_src_},
                           {DNNL_ARG_DIFF_SCALE, diff_scale_},
                           {DNNL_ARG_DIFF_SHIFT, diff_shift_}};
  // The gradients do not depend on beta, but oneDNN 2.x wants a shift argument
  // anyway: backward() binds the scale buffer (same shape) there.
  if (compat::kBatchNormBackwardTakesShift) bwd_args.emplace_back(DNNL_ARG_SHIFT, shift_);
  bwd_ = Primitive(ctx, dnnl::batch_normalization_backward(bwd_pd), bwd_pd.scratchpad_desc(),
                   std::move(bwd_args));
}

void BatchNormLayer::forward_training(const float* src, const float* scale, const float* shift,
                                      float* dst) {
  if (!training_)
    throw std::logic_error("BatchNormLayer::forward_training on a forward-only layer");
  src_.set_data_handle(const_cast<float*>(src));
  dst_.set_data_handle(dst);
  scale_.set_data_handle(const_cast<float*>(scale));
  shift_.set_data_handle(const_cast<float*>(shift));
  fwd_train_.execute();
  const float m = attrs_.momentum;
  const float unbias = static_cast<float>(reduced_) / static_cast<float>(reduced_ - 1);
  float* rm = running_mean_.data();
  float* rv = running_var_.data();
  for (int c = 0; c < channels_; ++c) {
    rm[c] = (1.0F - m) * rm[c] + m * mean_.data()[c];
    rv[c] = (1.0F - m) * rv[c] + m * variance_.data()[c] * unbias;
  }
}

void BatchNormLayer::forward_inference(const float* src, const float* scale, const float* shift,
                                       float* dst) {
  src_.set_data_handle(const_cast<float*>(src));
  dst_.set_data_handle(dst);
  scale_.set_data_handle(const_cast<float*>(scale));
  shift_.set_data_handle(const_cast<float*>(shift));
  fwd_infer_.execute();
}

void BatchNormLayer::backward(const float* src, const float* diff_dst, const float* scale,
                              float* diff_src, float* diff_scale, float* diff_shift) {
  if (!training_) throw std::logic_error("BatchNormLayer::backward on a forward-only layer");
  src_.set_data_handle(const_cast<float*>(src));
  diff_dst_.set_data_handle(const_cast<float*>(diff_dst));
  scale_.set_data_handle(const_cast<float*>(scale));
  shift_.set_data_handle(const_cast<float*>(scale));
  diff_src_.set_data_handle(diff_src);
  diff_scale_.set_data_handle(diff_scale);
  diff_shift_.set_data_handle(diff_shift);
  bwd_.execute();
}

int64_t BatchNormLayer::state_bytes() const {
  return running_mean_.bytes() + running_var_.bytes() + mean_.bytes() + variance_.bytes();
}

}  // namespace cnnbench::kernels::cpu
