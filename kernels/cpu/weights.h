// A parameter tensor kept by the caller in PyTorch's plain layout while a oneDNN
// primitive may prefer a blocked one: binds the caller's buffer directly when
// the layouts agree, else reorders through a private copy.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "kernels/cpu/context.h"
#include "kernels/cpu/host_array.h"
#include "kernels/cpu/primitive.h"

namespace cnnbench::kernels::cpu {

/// Whether layers let oneDNN choose the weight layout (format_tag::any, then
/// reorder to and from PyTorch's layout on every call), force the plain layout,
/// or (Auto) do what measured faster for the layer on oneDNN 2.6 / AVX-512:
/// convolutions Preferred (with plain weights and NHWC activations oneDNN falls
/// back to its reference convolution, ~100× slower; the reorders cost a few
/// percent of a ResNet-50 step), fully connected layers on a flat input Plain
/// (gemm on PyTorch's [out, in] weight beat brgemm plus three weight reorders:
/// 0.65 s against 1.37 s for VGG's 25088→4096 layer at batch 16).
enum class WeightFormat { Auto, Preferred, Plain };

/// Direction of the copy between the caller's plain tensor and the primitive's.
enum class WeightFlow { ToPrimitive, FromPrimitive };

/// The primitive-side memory of one weight (or weight-gradient) tensor.
///
/// ToPrimitive (weights read by a primitive): bind(user) then primitive_memory()
/// holds the values. FromPrimitive (weight gradients written by a primitive):
/// primitive_memory() is written by the primitive, then bind(user) +
/// finish() stores them in the caller's plain buffer.
class WeightBinding {
 public:
  WeightBinding() = default;
  WeightBinding(Context& ctx, const dnnl::memory::desc& plain, const dnnl::memory::desc& preferred,
                WeightFlow flow, const std::string& what);

  /// Points at the caller's plain buffer; for ToPrimitive, reorders into the private copy.
  void bind(const float* user);
  /// For FromPrimitive: copies the primitive's result into the caller's buffer.
  void finish();
  [[nodiscard]] const dnnl::memory& primitive_memory() const { return primitive_; }
  /// Bytes of the private copy (0 when the layouts agree).
  [[nodiscard]] int64_t private_bytes() const { return copy_.bytes(); }

 private:
  WeightFlow flow_ = WeightFlow::ToPrimitive;
  dnnl::memory user_;
  dnnl::memory primitive_;
  HostArray<uint8_t> copy_;
  Primitive reorder_;
};

}  // namespace cnnbench::kernels::cpu
