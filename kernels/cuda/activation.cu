// ReLU / ReLU6 forward and backward: see activation.cuh.
#include "kernels/cuda/activation.cuh"

#include "kernels/cuda/launch.h"
#include "kernels/cuda/pointwise.cuh"

namespace cnnbench::kernels::cuda {
namespace {

// ============================================================================
// kernels (element-wise functors for detail::map1_kernel / map2_kernel)
// ============================================================================

/// clamp(x, 0, cap) with no upper bound unless `capped`; comparisons let NaN through.
struct ClampForward {
  float cap;
  bool capped;
  __device__ float operator()(float x) const {
    if (x < 0.0F) return 0.0F;
    return (capped && x > cap) ? cap : x;
  }
};

/// dy where 0 < y (< cap when capped), else 0; NaN y passes the gradient, as in
/// torch (the zeroing conditions y <= 0, y >= cap are false for NaN).
struct ClampBackward {
  float cap;
  bool capped;
  __device__ float operator()(float dy, float y) const {
    return (y <= 0.0F || (capped && y >= cap)) ? 0.0F : dy;
  }
};

// ============================================================================
// launchers
// ============================================================================

constexpr float kRelu6Cap = 6.0F;

bool is_relu6(models::ActivationAttrs::Kind kind) {
  return kind == models::ActivationAttrs::Kind::Relu6;
}

}  // namespace

template <typename T>
void activation_forward(const T* x, T* y, int64_t count, models::ActivationAttrs::Kind kind,
                        cudaStream_t stream) {
  detail::require(count >= 0, "activation_forward", "count must be >= 0");
  detail::require(count == 0 || (x != nullptr && y != nullptr), "activation_forward",
                  "x and y must be non-null");
  detail::launch_map1(x, y, count, ClampForward{kRelu6Cap, is_relu6(kind)}, stream);
}

template <typename T>
void activation_backward(const T* y, const T* dy, T* dx, int64_t count,
                         models::ActivationAttrs::Kind kind, cudaStream_t stream) {
  detail::require(count >= 0, "activation_backward", "count must be >= 0");
  detail::require(count == 0 || (y != nullptr && dy != nullptr && dx != nullptr),
                  "activation_backward", "y, dy and dx must be non-null");
  detail::launch_map2(dy, y, dx, count, ClampBackward{kRelu6Cap, is_relu6(kind)}, stream);
}

#define CNNBENCH_INSTANTIATE_ACTIVATION(T)                                                      \
  template void activation_forward<T>(const T*, T*, int64_t, models::ActivationAttrs::Kind,     \
                                      cudaStream_t);                                            \
  template void activation_backward<T>(const T*, const T*, T*, int64_t,                         \
                                       models::ActivationAttrs::Kind, cudaStream_t);
CNNBENCH_INSTANTIATE_ACTIVATION(float)
CNNBENCH_INSTANTIATE_ACTIVATION(__half)
CNNBENCH_INSTANTIATE_ACTIVATION(__nv_bfloat16)
#undef CNNBENCH_INSTANTIATE_ACTIVATION

}  // namespace cnnbench::kernels::cuda
