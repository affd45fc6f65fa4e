// Element-wise activations relu = max(x, 0) and relu6 = min(max(x, 0), 6)
// (torch.nn.ReLU, torch.nn.ReLU6) forward and backward, on oneDNN.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/backend.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/primitive.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu {

/// An activation over a [N, C, H, W] tensor in the layer's DataFormat.
///
/// Backward works from the forward *output* (oneDNN's *_use_dst_for_bwd
/// algorithms): dx = dy where 0 < y (< 6 for relu6), else 0. That equals the
/// derivative from the input everywhere except exactly at the kinks, and lets a
/// caller run the forward in place (dst == src). Both calls may be in place.
///
/// Errors: dnnl::error; BackendError on execution.
class ActivationLayer {
 public:
  ActivationLayer(Context& ctx, models::ActivationAttrs::Kind kind, models::Shape shape,
                  DataFormat format, bool training = true);

  void forward(const float* src, float* dst);
  /// diff_src from the forward output `dst` and diff_dst. Training layers only.
  void backward(const float* dst, const float* diff_dst, float* diff_src);

 private:
  bool training_;
  dnnl::memory src_, dst_, diff_src_, diff_dst_;
  Primitive fwd_, bwd_;
};

}  // namespace cnnbench::kernels::cpu
