// Every difference between the oneDNN versions the CPU backend builds against,
// in one place. oneDNN 2.x (Debian 12 ships 2.6) builds a primitive descriptor
// from an operation descriptor (`op::desc`) and takes the engine after it;
// oneDNN 3.x dropped operation descriptors: primitive_desc constructors take the
// engine first and the attributes last, eltwise and pooling take explicit
// src/dst descriptors and a dilation, and backward descriptors name every
// tensor. The 3.x branch follows the oneDNN 3 API reference (dnnl.hpp).
//
// The rest of kernels/cpu calls only these functions, never an `op::desc`.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

namespace cnnbench::kernels::cpu::compat {

using dnnl::memory;

/// Geometry of a 2-D convolution or pooling window, in oneDNN's conventions:
/// dilation 0 means a dense window; padding_r may exceed padding_l to make the
/// last window fit (ceil mode).
struct Window {
  memory::dims strides;
  memory::dims kernel;   ///< pooling only
  memory::dims dilates;  ///< convolution only; {0, 0} = dense
  memory::dims padding_l;
  memory::dims padding_r;
};

/// "major.minor.patch" of the oneDNN library loaded at run time.
inline std::string library_version() {
  const dnnl_version_t* v = dnnl::version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

/// oneDNN's scale-and-shift flags for batch normalisation with separate scale
/// (gamma) and shift (beta) tensors. oneDNN 2.3+ and 3.x both spell them
/// use_scale | use_shift (2.x's older combined use_scaleshift is not used).
inline dnnl::normalization_flags scale_shift_flags() {
  return dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
}

/// oneDNN 2.x rejects a batch-normalisation backward with use_shift unless a
/// shift argument is bound (it never reads it); 3.x rejects one that is.
inline constexpr bool kBatchNormBackwardTakesShift = DNNL_VERSION_MAJOR < 3;

#if DNNL_VERSION_MAJOR >= 3

/// The instruction set oneDNN dispatches to on this machine, e.g. "avx512_core_amx".
inline std::string effective_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx2_vnni_2:
      return "avx2_vnni_2";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_fp16:
      return "avx512_core_fp16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_amx_fp16:
      return "avx512_core_amx_fp16";
    default:
      return "isa " + std::to_string(static_cast<int>(dnnl::get_effective_cpu_isa()));
  }
}

inline dnnl::convolution_forward::primitive_desc conv_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, const memory::desc& src,
    const memory::desc& weights, const memory::desc* bias, const memory::desc& dst,
    const Window& win, const dnnl::primitive_attr& attr) {
  if (bias != nullptr) {
    return dnnl::convolution_forward::primitive_desc(
        eng, prop, dnnl::algorithm::convolution_direct, src, weights, *bias, dst, win.strides,
        win.dilates, win.padding_l, win.padding_r, attr);
  }
  return dnnl::convolution_forward::primitive_desc(eng, prop, dnnl::algorithm::convolution_direct,
                                                   src, weights, dst, win.strides, win.dilates,
                                                   win.padding_l, win.padding_r, attr);
}

inline dnnl::convolution_backward_data::primitive_desc conv_backward_data_pd(
    const dnnl::engine& eng, const memory::desc& diff_src, const memory::desc& weights,
    const memory::desc& diff_dst, const Window& win,
    const dnnl::convolution_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  return dnnl::convolution_backward_data::primitive_desc(
      eng, dnnl::algorithm::convolution_direct, diff_src, weights, diff_dst, win.strides,
      win.dilates, win.padding_l, win.padding_r, hint, attr);
}

inline dnnl::convolution_backward_weights::primitive_desc conv_backward_weights_pd(
    const dnnl::engine& eng, const memory::desc& src, const memory::desc& diff_weights,
    const memory::desc* diff_bias, const memory::desc& diff_dst, const Window& win,
    const dnnl::convolution_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  if (diff_bias != nullptr) {
    return dnnl::convolution_backward_weights::primitive_desc(
        eng, dnnl::algorithm::convolution_direct, src, diff_weights, *diff_bias, diff_dst,
        win.strides, win.dilates, win.padding_l, win.padding_r, hint, attr);
  }
  return dnnl::convolution_backward_weights::primitive_desc(
      eng, dnnl::algorithm::convolution_direct, src, diff_weights, diff_dst, win.strides,
      win.dilates, win.padding_l, win.padding_r, hint, attr);
}

inline dnnl::inner_product_forward::primitive_desc inner_product_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, const memory::desc& src,
    const memory::desc& weights, const memory::desc* bias, const memory::desc& dst,
    const dnnl::primitive_attr& attr) {
  if (bias != nullptr)
    return dnnl::inner_product_forward::primitive_desc(eng, prop, src, weights, *bias, dst, attr);
  return dnnl::inner_product_forward::primitive_desc(eng, prop, src, weights, dst, attr);
}

inline dnnl::inner_product_backward_data::primitive_desc inner_product_backward_data_pd(
    const dnnl::engine& eng, const memory::desc& diff_src, const memory::desc& weights,
    const memory::desc& diff_dst, const dnnl::inner_product_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr) {
  return dnnl::inner_product_backward_data::primitive_desc(eng, diff_src, weights, diff_dst, hint,
                                                           attr);
}

inline dnnl::inner_product_backward_weights::primitive_desc inner_product_backward_weights_pd(
    const dnnl::engine& eng, const memory::desc& src, const memory::desc& diff_weights,
    const memory::desc* diff_bias, const memory::desc& diff_dst,
    const dnnl::inner_product_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  if (diff_bias != nullptr)
    return dnnl::inner_product_backward_weights::primitive_desc(eng, src, diff_weights, *diff_bias,
                                                                diff_dst, hint, attr);
  return dnnl::inner_product_backward_weights::primitive_desc(eng, src, diff_weights, diff_dst,
                                                              hint, attr);
}

inline dnnl::batch_normalization_forward::primitive_desc batchnorm_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, const memory::desc& data, float eps,
    dnnl::normalization_flags flags, const dnnl::primitive_attr& attr) {
  return dnnl::batch_normalization_forward::primitive_desc(eng, prop, data, data, eps, flags, attr);
}

inline dnnl::batch_normalization_backward::primitive_desc batchnorm_backward_pd(
    const dnnl::engine& eng, const memory::desc& data, float eps, dnnl::normalization_flags flags,
    const dnnl::batch_normalization_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr) {
  return dnnl::batch_normalization_backward::primitive_desc(eng, dnnl::prop_kind::backward, data,
                                                            data, data, eps, flags, hint, attr);
}

inline dnnl::eltwise_forward::primitive_desc eltwise_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, dnnl::algorithm alg, const memory::desc& data,
    float alpha, float beta, const dnnl::primitive_attr& attr) {
  return dnnl::eltwise_forward::primitive_desc(eng, prop, alg, data, data, alpha, beta, attr);
}

/// `data` is the forward src, or the forward dst for the *_use_dst_for_bwd algorithms.
inline dnnl::eltwise_backward::primitive_desc eltwise_backward_pd(
    const dnnl::engine& eng, dnnl::algorithm alg, const memory::desc& data, float alpha, float beta,
    const dnnl::eltwise_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  return dnnl::eltwise_backward::primitive_desc(eng, alg, data, data, data, alpha, beta, hint,
                                                attr);
}

inline dnnl::pooling_forward::primitive_desc pooling_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, dnnl::algorithm alg, const memory::desc& src,
    const memory::desc& dst, const Window& win, const dnnl::primitive_attr& attr) {
  const memory::dims dense(win.kernel.size(), 0);
  return dnnl::pooling_forward::primitive_desc(eng, prop, alg, src, dst, win.strides, win.kernel,
                                               dense, win.padding_l, win.padding_r, attr);
}

inline dnnl::pooling_backward::primitive_desc pooling_backward_pd(
    const dnnl::engine& eng, dnnl::algorithm alg, const memory::desc& diff_src,
    const memory::desc& diff_dst, const Window& win,
    const dnnl::pooling_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  const memory::dims dense(win.kernel.size(), 0);
  return dnnl::pooling_backward::primitive_desc(eng, alg, diff_src, diff_dst, win.strides,
                                                win.kernel, dense, win.padding_l, win.padding_r,
                                                hint, attr);
}

#else  // oneDNN 2.x

/// The instruction set oneDNN dispatches to on this machine, e.g. "avx512_core_amx".
inline std::string effective_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "isa " + std::to_string(static_cast<int>(dnnl::get_effective_cpu_isa()));
  }
}

inline dnnl::convolution_forward::primitive_desc conv_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, const memory::desc& src,
    const memory::desc& weights, const memory::desc* bias, const memory::desc& dst,
    const Window& win, const dnnl::primitive_attr& attr) {
  const auto desc =
      bias != nullptr ? dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct,
                                                        src, weights, *bias, dst, win.strides,
                                                        win.dilates, win.padding_l, win.padding_r)
                      : dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct,
                                                        src, weights, dst, win.strides, win.dilates,
                                                        win.padding_l, win.padding_r);
  return dnnl::convolution_forward::primitive_desc(desc, attr, eng);
}

inline dnnl::convolution_backward_data::primitive_desc conv_backward_data_pd(
    const dnnl::engine& eng, const memory::desc& diff_src, const memory::desc& weights,
    const memory::desc& diff_dst, const Window& win,
    const dnnl::convolution_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, diff_src,
                                                   weights, diff_dst, win.strides, win.dilates,
                                                   win.padding_l, win.padding_r);
  return dnnl::convolution_backward_data::primitive_desc(desc, attr, eng, hint);
}

inline dnnl::convolution_backward_weights::primitive_desc conv_backward_weights_pd(
    const dnnl::engine& eng, const memory::desc& src, const memory::desc& diff_weights,
    const memory::desc* diff_bias, const memory::desc& diff_dst, const Window& win,
    const dnnl::convolution_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  const auto desc = diff_bias != nullptr
                        ? dnnl::convolution_backward_weights::desc(
                              dnnl::algorithm::convolution_direct, src, diff_weights, *diff_bias,
                              diff_dst, win.strides, win.dilates, win.padding_l, win.padding_r)
                        : dnnl::convolution_backward_weights::desc(
                              dnnl::algorithm::convolution_direct, src, diff_weights, diff_dst,
                              win.strides, win.dilates, win.padding_l, win.padding_r);
  return dnnl::convolution_backward_weights::primitive_desc(desc, attr, eng, hint);
}

inline dnnl::inner_product_forward::primitive_desc inner_product_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, const memory::desc& src,
    const memory::desc& weights, const memory::desc* bias, const memory::desc& dst,
    const dnnl::primitive_attr& attr) {
  const auto desc = bias != nullptr
                        ? dnnl::inner_product_forward::desc(prop, src, weights, *bias, dst)
                        : dnnl::inner_product_forward::desc(prop, src, weights, dst);
  return dnnl::inner_product_forward::primitive_desc(desc, attr, eng);
}

inline dnnl::inner_product_backward_data::primitive_desc inner_product_backward_data_pd(
    const dnnl::engine& eng, const memory::desc& diff_src, const memory::desc& weights,
    const memory::desc& diff_dst, const dnnl::inner_product_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr) {
  const dnnl::inner_product_backward_data::desc desc(diff_src, weights, diff_dst);
  return dnnl::inner_product_backward_data::primitive_desc(desc, attr, eng, hint);
}

inline dnnl::inner_product_backward_weights::primitive_desc inner_product_backward_weights_pd(
    const dnnl::engine& eng, const memory::desc& src, const memory::desc& diff_weights,
    const memory::desc* diff_bias, const memory::desc& diff_dst,
    const dnnl::inner_product_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  const auto desc =
      diff_bias != nullptr
          ? dnnl::inner_product_backward_weights::desc(src, diff_weights, *diff_bias, diff_dst)
          : dnnl::inner_product_backward_weights::desc(src, diff_weights, diff_dst);
  return dnnl::inner_product_backward_weights::primitive_desc(desc, attr, eng, hint);
}

inline dnnl::batch_normalization_forward::primitive_desc batchnorm_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, const memory::desc& data, float eps,
    dnnl::normalization_flags flags, const dnnl::primitive_attr& attr) {
  const dnnl::batch_normalization_forward::desc desc(prop, data, eps, flags);
  return dnnl::batch_normalization_forward::primitive_desc(desc, attr, eng);
}

inline dnnl::batch_normalization_backward::primitive_desc batchnorm_backward_pd(
    const dnnl::engine& eng, const memory::desc& data, float eps, dnnl::normalization_flags flags,
    const dnnl::batch_normalization_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr) {
  const dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward, data, data, eps,
                                                      flags);
  return dnnl::batch_normalization_backward::primitive_desc(desc, attr, eng, hint);
}

inline dnnl::eltwise_forward::primitive_desc eltwise_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, dnnl::algorithm alg, const memory::desc& data,
    float alpha, float beta, const dnnl::primitive_attr& attr) {
  const dnnl::eltwise_forward::desc desc(prop, alg, data, alpha, beta);
  return dnnl::eltwise_forward::primitive_desc(desc, attr, eng);
}

/// `data` is the forward src, or the forward dst for the *_use_dst_for_bwd algorithms.
inline dnnl::eltwise_backward::primitive_desc eltwise_backward_pd(
    const dnnl::engine& eng, dnnl::algorithm alg, const memory::desc& data, float alpha, float beta,
    const dnnl::eltwise_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  const dnnl::eltwise_backward::desc desc(alg, data, data, alpha, beta);
  return dnnl::eltwise_backward::primitive_desc(desc, attr, eng, hint);
}

inline dnnl::pooling_forward::primitive_desc pooling_forward_pd(
    const dnnl::engine& eng, dnnl::prop_kind prop, dnnl::algorithm alg, const memory::desc& src,
    const memory::desc& dst, const Window& win, const dnnl::primitive_attr& attr) {
  const dnnl::pooling_forward::desc desc(prop, alg, src, dst, win.strides, win.kernel,
                                         win.padding_l, win.padding_r);
  return dnnl::pooling_forward::primitive_desc(desc, attr, eng);
}

inline dnnl::pooling_backward::primitive_desc pooling_backward_pd(
    const dnnl::engine& eng, dnnl::algorithm alg, const memory::desc& diff_src,
    const memory::desc& diff_dst, const Window& win,
    const dnnl::pooling_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
  const dnnl::pooling_backward::desc desc(alg, diff_src, diff_dst, win.strides, win.kernel,
                                          win.padding_l, win.padding_r);
  return dnnl::pooling_backward::primitive_desc(desc, attr, eng, hint);
}

#endif

}  // namespace cnnbench::kernels::cpu::compat
