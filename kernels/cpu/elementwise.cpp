#include "kernels/cpu/elementwise.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu/layout.h"
#include "kernels/init.h"

namespace cnnbench::kernels::cpu {

void copy_elements(const float* src, float* dst, int64_t count) {
  if (src == dst) return;
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
}

void accumulate_elements(const float* src, float* dst, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dst[i] += src[i];
}

void write_gradient(const float* src, GradOut out, int64_t count) {
  if (out.data == nullptr) return;
  if (out.accumulate) {
    accumulate_elements(src, out.data, count);
  } else {
    copy_elements(src, out.data, count);
  }
}

void add_forward(std::span<const float* const> srcs, float* dst, int64_t count) {
  if (srcs.size() < 2) throw std::invalid_argument("add_forward: needs two or more inputs");
  const float* a = srcs[0];
  const float* b = srcs[1];
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dst[i] = a[i] + b[i];
  for (size_t k = 2; k < srcs.size(); ++k) accumulate_elements(srcs[k], dst, count);
}

void add_backward(const float* diff_dst, std::span<const GradOut> diff_srcs, int64_t count) {
  for (const GradOut& out : diff_srcs) write_gradient(diff_dst, out, count);
}

ConcatLayer::ConcatLayer(std::vector<models::Shape> ins, models::Shape out, DataFormat format)
    : ins_(std::move(ins)), out_(out), format_(format) {
  int64_t channels = 0;
  for (const auto& s : ins_) {
    if (s.n != out.n || s.h != out.h || s.w != out.w) {
      throw std::invalid_argument("ConcatLayer: inputs must share N, H and W with the output");
    }
    channel_offset_.push_back(channels);
    channels += s.c;
  }
  if (channels != out.c) {
    throw std::invalid_argument("ConcatLayer: input channels sum to " + std::to_string(channels) +
                                ", output has " + std::to_string(out.c));
  }
}

void ConcatLayer::forward(std::span<const float* const> srcs, float* dst) const {
  const int64_t hw = int64_t{out_.h} * out_.w;
  const int64_t C = out_.c;
  for (size_t k = 0; k < ins_.size(); ++k) {
    const float* src = srcs[k];
    const int64_t ck = ins_[k].c;
    const int64_t off = channel_offset_[k];
    if (format_ == DataFormat::NCHW) {
#pragma omp parallel for schedule(static)
      for (int64_t n = 0; n < out_.n; ++n) {
        const float* from = src + n * ck * hw;
        float* to = dst + (n * C + off) * hw;
        for (int64_t i = 0; i < ck * hw; ++i) to[i] = from[i];
      }
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < out_.n * hw; ++p) {
        const float* from = src + p * ck;
        float* to = dst + p * C + off;
        for (int64_t c = 0; c < ck; ++c) to[c] = from[c];
      }
    }
  }
}

void ConcatLayer::backward(const float* diff_dst, std::span<const GradOut> diff_srcs) const {
  const int64_t hw = int64_t{out_.h} * out_.w;
  const int64_t C = out_.c;
  for (size_t k = 0; k < ins_.size(); ++k) {
    float* dx = diff_srcs[k].data;
    if (dx == nullptr) continue;
    const bool acc = diff_srcs[k].accumulate;
    const int64_t ck = ins_[k].c;
    const int64_t off = channel_offset_[k];
    if (format_ == DataFormat::NCHW) {
#pragma omp parallel for schedule(static)
      for (int64_t n = 0; n < out_.n; ++n) {
        const float* from = diff_dst + (n * C + off) * hw;
        float* to = dx + n * ck * hw;
        for (int64_t i = 0; i < ck * hw; ++i) to[i] = acc ? to[i] + from[i] : from[i];
      }
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < out_.n * hw; ++p) {
        const float* from = diff_dst + p * C + off;
        float* to = dx + p * ck;
        for (int64_t c = 0; c < ck; ++c) to[c] = acc ? to[c] + from[c] : from[c];
      }
    }
  }
}

FlattenLayer::FlattenLayer(Context& ctx, models::Shape in, DataFormat format)
    : count_(in.elements()) {
  if (is_view(in, format)) return;
  const auto& eng = ctx.engine();
  const auto dims = dnnl_dims(in);
  nhwc_ = unbound_memory({dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc}, eng);
  nchw_ = unbound_memory({dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nchw}, eng);
  fwd_ = make_reorder(ctx, nhwc_, nchw_);
  bwd_ = make_reorder(ctx, nchw_, nhwc_);
}

void FlattenLayer::forward(const float* src, float* dst) {
  if (is_view()) {
    copy_elements(src, dst, count_);
    return;
  }
  nhwc_.set_data_handle(const_cast<float*>(src));
  nchw_.set_data_handle(dst);
  fwd_.execute();
}

void FlattenLayer::backward(const float* diff_dst, float* diff_src) {
  if (is_view()) {
    copy_elements(diff_dst, diff_src, count_);
    return;
  }
  nchw_.set_data_handle(const_cast<float*>(diff_dst));
  nhwc_.set_data_handle(diff_src);
  bwd_.execute();
}

DropoutLayer::DropoutLayer(float p, models::Shape shape, DataFormat format)
    : p_(p), shape_(shape), format_(format), mask_(shape.elements(), "dropout mask") {
  if (!(p >= 0.0F && p <= 1.0F)) {
    throw std::invalid_argument("DropoutLayer: p must be in [0, 1], got " + std::to_string(p));
  }
  float* m = mask_.data();
  for (int64_t i = 0; i < mask_.count(); ++i) m[i] = 1.0F;
}

void DropoutLayer::new_mask(uint64_t key) {
  // p = 1 drops everything (PyTorch returns zeros rather than dividing by zero).
  const float keep_scale = p_ < 1.0F ? 1.0F / (1.0F - p_) : 0.0F;
  const float p = p_;
  const models::Shape s = shape_;
  const DataFormat f = format_;
  float* m = mask_.data();
  const int64_t planes = int64_t{s.n} * s.c;
  const int64_t hw = int64_t{s.h} * s.w;
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const int64_t n = plane / s.c;
    const int64_t c = plane % s.c;
    for (int64_t p_hw = 0; p_hw < hw; ++p_hw) {
      const int64_t logical = plane * hw + p_hw;
      const bool drop = random_uniform(key, static_cast<uint64_t>(logical)) < p;
      m[element_offset(s, f, n, c, p_hw / s.w, p_hw % s.w)] = drop ? 0.0F : keep_scale;
    }
  }
}

void DropoutLayer::forward(const float* src, float* dst) const {
  const float* m = mask_.data();
  const int64_t count = mask_.count();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dst[i] = src[i] * m[i];
}

void DropoutLayer::backward(const float* diff_dst, float* diff_src) const {
  forward(diff_dst, diff_src);
}

}  // namespace cnnbench::kernels::cpu
