#include "kernels/cpu/pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cpu/dnnl_compat.h"
#include "kernels/cpu/layout.h"

namespace cnnbench::kernels::cpu {
namespace {

/// PyTorch's pooling_output_shape: with ceil_mode the last window must start
/// inside the input or its left padding.
int pooled_size(int size, int kernel, int stride, int pad, bool ceil_mode) {
  const int span = size + 2 * pad - kernel;
  int out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= size + pad) --out;
  return out;
}

void covering_outputs(AxisWindows& w, int size) {
  const int out = static_cast<int>(w.start.size());
  w.first_out.assign(static_cast<size_t>(size), 0);
  w.last_out.assign(static_cast<size_t>(size), 0);
  for (int i = 0; i < size; ++i) {
    int first = 0;
    while (first < out && w.end[static_cast<size_t>(first)] <= i) ++first;
    int last = first;
    while (last < out && w.start[static_cast<size_t>(last)] <= i) ++last;
    w.first_out[static_cast<size_t>(i)] = first;
    w.last_out[static_cast<size_t>(i)] = last;
  }
}

}  // namespace

AxisWindows AxisWindows::fixed(int size, int out, int kernel, int stride, int pad,
                               bool count_include_pad) {
  AxisWindows w;
  for (int o = 0; o < out; ++o) {
    const int lo = o * stride - pad;
    const int hi = std::min(lo + kernel, size + pad);
    const int start = std::max(lo, 0);
    const int end = std::min(hi, size);
    const int divisor = count_include_pad ? hi - lo : end - start;
    w.start.push_back(start);
    w.end.push_back(end);
    w.scale.push_back(divisor > 0 ? 1.0F / static_cast<float>(divisor) : 0.0F);
  }
  covering_outputs(w, size);
  return w;
}

AxisWindows AxisWindows::adaptive(int size, int out) {
  AxisWindows w;
  for (int o = 0; o < out; ++o) {
    const int start = static_cast<int>(int64_t{o} * size / out);
    const int end = static_cast<int>((int64_t{o + 1} * size + out - 1) / out);
    w.start.push_back(start);
    w.end.push_back(end);
    w.scale.push_back(1.0F / static_cast<float>(end - start));
  }
  covering_outputs(w, size);
  return w;
}

AvgPoolKernel::AvgPoolKernel(models::Shape in, models::Shape out, DataFormat format,
                             AxisWindows rows, AxisWindows cols)
    : in_(in), out_(out), format_(format), rows_(std::move(rows)), cols_(std::move(cols)) {}

void AvgPoolKernel::forward(const float* src, float* dst) const {
  const int64_t C = in_.c, H = in_.h, W = in_.w, OH = out_.h, OW = out_.w;
  const int* rs = rows_.start.data();
  const int* re = rows_.end.data();
  const int* cs = cols_.start.data();
  const int* ce = cols_.end.data();
  const float* rk = rows_.scale.data();
  const float* ck = cols_.scale.data();
  if (format_ == DataFormat::NCHW) {
#pragma omp parallel for schedule(static)
    for (int64_t plane = 0; plane < int64_t{in_.n} * C; ++plane) {
      const float* x = src + plane * H * W;
      float* y = dst + plane * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          float sum = 0.0F;
          for (int64_t ih = rs[oh]; ih < re[oh]; ++ih) {
            for (int64_t iw = cs[ow]; iw < ce[ow]; ++iw) sum += x[ih * W + iw];
          }
          y[oh * OW + ow] = sum * rk[oh] * ck[ow];
        }
      }
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < int64_t{in_.n} * OH; ++row) {
    const int64_t n = row / OH;
    const int64_t oh = row % OH;
    for (int64_t ow = 0; ow < OW; ++ow) {
      float* y = dst + (row * OW + ow) * C;
      for (int64_t c = 0; c < C; ++c) y[c] = 0.0F;
      for (int64_t ih = rs[oh]; ih < re[oh]; ++ih) {
        for (int64_t iw = cs[ow]; iw < ce[ow]; ++iw) {
          const float* x = src + ((n * H + ih) * W + iw) * C;
          for (int64_t c = 0; c < C; ++c) y[c] += x[c];
        }
      }
      const float k = rk[oh] * ck[ow];
      for (int64_t c = 0; c < C; ++c) y[c] *= k;
    }
  }
}

void AvgPoolKernel::backward(const float* diff_dst, float* diff_src) const {
  // Gather form: each input element sums the outputs whose windows cover it, so
  // threads never write the same element.
  const int64_t C = in_.c, H = in_.h, W = in_.w, OH = out_.h, OW = out_.w;
  const int* rf = rows_.first_out.data();
  const int* rl = rows_.last_out.data();
  const int* cf = cols_.first_out.data();
  const int* cl = cols_.last_out.data();
  const float* rk = rows_.scale.data();
  const float* ck = cols_.scale.data();
  if (format_ == DataFormat::NCHW) {
#pragma omp parallel for schedule(static)
    for (int64_t plane = 0; plane < int64_t{in_.n} * C; ++plane) {
      const float* dy = diff_dst + plane * OH * OW;
      float* dx = diff_src + plane * H * W;
      for (int64_t ih = 0; ih < H; ++ih) {
        for (int64_t iw = 0; iw < W; ++iw) {
          float sum = 0.0F;
          for (int64_t oh = rf[ih]; oh < rl[ih]; ++oh) {
            float row = 0.0F;
            for (int64_t ow = cf[iw]; ow < cl[iw]; ++ow) row += dy[oh * OW + ow] * ck[ow];
            sum += row * rk[oh];
          }
          dx[ih * W + iw] = sum;
        }
      }
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < int64_t{in_.n} * H; ++row) {
    const int64_t n = row / H;
    const int64_t ih = row % H;
    for (int64_t iw = 0; iw < W; ++iw) {
      float* dx = diff_src + (row * W + iw) * C;
      for (int64_t c = 0; c < C; ++c) dx[c] = 0.0F;
      for (int64_t oh = rf[ih]; oh < rl[ih]; ++oh) {
        for (int64_t ow = cf[iw]; ow < cl[iw]; ++ow) {
          const float k = rk[oh] * ck[ow];
          const float* dy = diff_dst + ((n * OH + oh) * OW + ow) * C;
          for (int64_t c = 0; c < C; ++c) dx[c] += k * dy[c];
        }
      }
    }
  }
}

PoolLayer::PoolLayer(Context& ctx, const models::PoolAttrs& attrs, models::Shape in,
                     models::Shape out, DataFormat format, bool training)
    : training_(training) {
  const int oh = pooled_size(in.h, attrs.kernel_h, attrs.stride_h, attrs.pad_h, attrs.ceil_mode);
  const int ow = pooled_size(in.w, attrs.kernel_w, attrs.stride_w, attrs.pad_w, attrs.ceil_mode);
  if (out.n != in.n || out.c != in.c || out.h != oh || out.w != ow) {
    throw std::invalid_argument("PoolLayer: output " + std::to_string(out.h) + "x" +
                                std::to_string(out.w) + " does not follow from input " +
                                std::to_string(in.h) + "x" + std::to_string(in.w) + " (expected " +
                                std::to_string(oh) + "x" + std::to_string(ow) + ")");
  }
  if (attrs.kind != models::PoolAttrs::Kind::Max) {
    avg_.emplace(in, out, format,
                 AxisWindows::fixed(in.h, out.h, attrs.kernel_h, attrs.stride_h, attrs.pad_h,
                                    attrs.count_include_pad),
                 AxisWindows::fixed(in.w, out.w, attrs.kernel_w, attrs.stride_w, attrs.pad_w,
                                    attrs.count_include_pad));
    return;
  }
  const auto& eng = ctx.engine();
  const dnnl::memory::desc src_md = activation_md(in, format);
  const dnnl::memory::desc dst_md = activation_md(out, format);
  // With ceil_mode the far-side padding grows until the last window fits.
  const auto pad_r = [](int x, int o, int k, int s, int p) {
    return static_cast<dnnl::memory::dim>(std::max(p, (o - 1) * s + k - x - p));
  };
  const compat::Window win{
      .strides = {attrs.stride_h, attrs.stride_w},
      .kernel = {attrs.kernel_h, attrs.kernel_w},
      .dilates = {},
      .padding_l = {attrs.pad_h, attrs.pad_w},
      .padding_r = {pad_r(in.h, out.h, attrs.kernel_h, attrs.stride_h, attrs.pad_h),
                    pad_r(in.w, out.w, attrs.kernel_w, attrs.stride_w, attrs.pad_w)}};
  const auto prop =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const auto fwd_pd = compat::pooling_forward_pd(eng, prop, dnnl::algorithm::pooling_max, src_md,
                                                 dst_md, win, ctx.attr());
  src_ = unbound_memory(src_md, eng);
  dst_ = unbound_memory(dst_md, eng);
  Primitive::Args fwd_args{{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
  if (training) {
    const auto ws_md = fwd_pd.workspace_desc();
    workspace_ =
        HostArray<uint8_t>(static_cast<int64_t>(ws_md.get_size()), "max-pooling workspace");
    workspace_mem_ = dnnl::memory(ws_md, eng, workspace_.data());
    fwd_args.emplace_back(DNNL_ARG_WORKSPACE, workspace_mem_);
  }
  fwd_ = Primitive(ctx, dnnl::pooling_forward(fwd_pd), fwd_pd.scratchpad_desc(), fwd_args);
  if (!training) return;
  const auto bwd_pd = compat::pooling_backward_pd(eng, dnnl::algorithm::pooling_max, src_md, dst_md,
                                                  win, fwd_pd, ctx.attr());
  diff_src_ = unbound_memory(src_md, eng);
  diff_dst_ = unbound_memory(dst_md, eng);
  bwd_ = Primitive(ctx, dnnl::pooling_backward(bwd_pd), bwd_pd.scratchpad_desc(),
                   {{DNNL_ARG_DIFF_DST, diff_dst_},
                    {DNNL_ARG_DIFF_SRC, diff_src_},
                    {DNNL_ARG_WORKSPACE, workspace_mem_}});
}

void PoolLayer::forward(const float* src, float* dst) {
  if (avg_) {
    avg_->forward(src, dst);
    return;
  }
  src_.set_data_handle(const_cast<float*>(src));
  dst_.set_data_handle(dst);
  fwd_.execute();
}

void PoolLayer::backward(const float* diff_dst, float* diff_src) {
  if (!training_) throw std::logic_error("PoolLayer::backward on a forward-only layer");
  if (avg_) {
    avg_->backward(diff_dst, diff_src);
    return;
  }
  diff_dst_.set_data_handle(const_cast<float*>(diff_dst));
  diff_src_.set_data_handle(diff_src);
  bwd_.execute();
}

AdaptiveAvgPoolLayer::AdaptiveAvgPoolLayer(models::Shape in, models::Shape out, DataFormat format)
    : kernel_(in, out, format, AxisWindows::adaptive(in.h, out.h),
              AxisWindows::adaptive(in.w, out.w)) {
  if (out.n != in.n || out.c != in.c || out.h < 1 || out.w < 1) {
    throw std::invalid_argument(
        "AdaptiveAvgPoolLayer: output must keep N and C and be at least 1x1");
  }
}

}  // namespace cnnbench::kernels::cpu
