// Where a logical (n, c, h, w) element lives in the compiled activation layout,
// and the matching oneDNN memory descriptors.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/backend.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu {

/// oneDNN dims {N, C, H, W} of a shape (oneDNN always lists dims logically).
inline dnnl::memory::dims dnnl_dims(const models::Shape& s) { return {s.n, s.c, s.h, s.w}; }

/// The plain oneDNN format of an activation layout: nhwc or nchw.
inline dnnl::memory::format_tag format_tag(DataFormat f) {
  return f == DataFormat::NHWC ? dnnl::memory::format_tag::nhwc : dnnl::memory::format_tag::nchw;
}

/// fp32 descriptor of an activation tensor in the compiled layout.
inline dnnl::memory::desc activation_md(const models::Shape& s, DataFormat f) {
  return {dnnl_dims(s), dnnl::memory::data_type::f32, format_tag(f)};
}

/// Offset in elements of logical element (n, c, h, w) of a tensor of shape `s`.
inline int64_t element_offset(const models::Shape& s, DataFormat f, int64_t n, int64_t c, int64_t h,
                              int64_t w) {
  if (f == DataFormat::NHWC) return ((n * s.h + h) * s.w + w) * s.c + c;
  return ((n * s.c + c) * s.h + h) * s.w + w;
}

}  // namespace cnnbench::kernels::cpu
