// Softmax cross-entropy: see loss.cuh.
#include "kernels/cuda/loss.cuh"

#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/reduce.cuh"

namespace cnnbench::kernels::cuda {
namespace {

using detail::kBlockThreads;

// ============================================================================
// kernels
// ============================================================================

/// One block per row: row max, Σ exp(x − max), the row's loss into row_loss,
/// and the row of dlogits.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    softmax_xent_rows_kernel(const T* logits,           // (N, classes)
                             const int32_t* labels,     // (N)
                             T* dlogits,                // (N, classes) or nullptr; may alias logits
                             float* row_loss,           // (N)
                             const float* loss_scale,   // (1) or nullptr
                             int classes, float inv_n) {
  __shared__ float smem[32];
  const int64_t row = blockIdx.x;
  const T* x = logits + row * classes;
  const int t = static_cast<int>(threadIdx.x);
  const int label = labels[row];
  const bool valid = label >= 0 && label < classes;
  // Read before any thread of the block writes dlogits (which may alias x).
  const float x_label = (t == 0 && valid) ? to_float(x[label]) : 0.0F;

  float mx = -INFINITY;
  for (int k = t; k < classes; k += kBlockThreads) mx = fmaxf(mx, to_float(x[k]));
  mx = detail::block_reduce(mx, detail::MaxOp{}, -INFINITY, smem);
  float s = 0.0F;
  for (int k = t; k < classes; k += kBlockThreads) s += expf(to_float(x[k]) - mx);
  s = detail::block_reduce(s, detail::SumOp{}, 0.0F, smem);

  if (t == 0) row_loss[row] = valid ? mx + logf(s) - x_label : __int_as_float(0x7FC00000);
  if (dlogits != nullptr) {
    const float scale = (loss_scale != nullptr ? *loss_scale : 1.0F) * inv_n;
    const float inv_s = 1.0F / s;
    T* d = dlogits + row * classes;
    for (int k = t; k < classes; k += kBlockThreads) {
      const float p = expf(to_float(x[k]) - mx) * inv_s;
      d[k] = from_float<T>((p - (k == label ? 1.0F : 0.0F)) * scale);
    }
  }
}

/// *loss = (Σ_i row_loss[i]) / n, one block, fixed order.
__global__ void __launch_bounds__(kBlockThreads)
    mean_loss_kernel(const float* row_loss,  // (n)
                     float* loss,            // (1)
                     int n) {
  __shared__ float smem[32];
  float s = 0.0F;
  for (int i = static_cast<int>(threadIdx.x); i < n; i += kBlockThreads) s += row_loss[i];
  s = detail::block_reduce(s, detail::SumOp{}, 0.0F, smem);
  if (threadIdx.x == 0) *loss = s / static_cast<float>(n);
}

}  // namespace

// ============================================================================
// launchers
// ============================================================================

int64_t softmax_cross_entropy_scratch_bytes(int n) {
  return static_cast<int64_t>(n < 0 ? 0 : n) * static_cast<int64_t>(sizeof(float));
}

template <typename T>
void softmax_cross_entropy(const T* logits, const int32_t* labels, float* loss, T* dlogits,
                           const float* loss_scale, void* scratch, int64_t scratch_bytes, int n,
                           int classes, cudaStream_t stream) {
  constexpr const char* fn = "softmax_cross_entropy";
  detail::require(n >= 1 && classes >= 1, fn,
                  "n and classes must be >= 1, got n=" + std::to_string(n) +
                      ", classes=" + std::to_string(classes));
  detail::require(logits != nullptr && labels != nullptr && loss != nullptr && scratch != nullptr,
                  fn, "logits, labels, loss and scratch must be non-null");
  detail::require(scratch_bytes >= softmax_cross_entropy_scratch_bytes(n), fn,
                  "scratch of " + std::to_string(scratch_bytes) + " bytes, needs " +
                      std::to_string(softmax_cross_entropy_scratch_bytes(n)));
  auto* row_loss = static_cast<float*>(scratch);
  softmax_xent_rows_kernel<T><<<static_cast<unsigned>(n), kBlockThreads, 0, stream>>>(
      logits, labels, dlogits, row_loss, loss_scale, classes,
      static_cast<float>(1.0 / static_cast<double>(n)));
  CNNBENCH_CHECK_LAUNCH();
  mean_loss_kernel<<<1, kBlockThreads, 0, stream>>>(row_loss, loss, n);
  CNNBENCH_CHECK_LAUNCH();
}

#define CNNBENCH_INSTANTIATE_LOSS(T)                                                          \
  template void softmax_cross_entropy<T>(const T*, const int32_t*, float*, T*, const float*,   \
                                         void*, int64_t, int, int, cudaStream_t);
CNNBENCH_INSTANTIATE_LOSS(float)
CNNBENCH_INSTANTIATE_LOSS(__half)
CNNBENCH_INSTANTIATE_LOSS(__nv_bfloat16)
#undef CNNBENCH_INSTANTIATE_LOSS

}  // namespace cnnbench::kernels::cuda
