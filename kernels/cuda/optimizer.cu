// SGD-momentum update, non-finite gradient check and dynamic loss scaling:
// see optimizer.cuh.
#include "kernels/cuda/optimizer.cuh"

#include <cmath>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/launch.h"

namespace cnnbench::kernels::cuda {
namespace {

using detail::ceil_div;
using detail::kBlockThreads;

/// Elements per thread in the update's vector path: one 16-byte access to the
/// fp32 master weights and momentum.
constexpr int kUpdateVec = 4;

// ============================================================================
// kernels
// ============================================================================

struct SgdParams {
  float lr, momentum, weight_decay;
};

/// One element of the update; the intrinsics pin each rounding to torch's
/// (nvcc would otherwise be free to contract the multiply-add pairs).
__device__ __forceinline__ void sgd_step(float grad, float inv_scale, const SgdParams& p, float& w,
                                         float& v) {
  float g = __fmul_rn(grad, inv_scale);
  g = __fmaf_rn(p.weight_decay, w, g);
  v = __fadd_rn(__fmul_rn(p.momentum, v), g);
  w = __fmaf_rn(-p.lr, v, w);
}

/// Thread t < count/V updates elements [t·V, t·V + V) with vector accesses; the
/// next count % V threads take the remaining elements one each.
template <typename G, typename L, int V>
__global__ void __launch_bounds__(kBlockThreads)
    sgd_momentum_kernel(const G* __restrict__ grad,       // (count)
                        float* __restrict__ master,       // (count)
                        float* __restrict__ momentum_buf, // (count)
                        L* __restrict__ weight_lp,        // (count) or nullptr
                        int64_t count, SgdParams p,
                        const float* __restrict__ loss_scale,  // (1) or nullptr
                        const int32_t* __restrict__ skip) {    // (1) or nullptr
  if (skip != nullptr && *skip != 0) return;
  const float inv_scale = loss_scale != nullptr ? __frcp_rn(*loss_scale) : 1.0F;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t vec_items = count / V;
  if (t < vec_items) {
    const int64_t i = t * V;
    float g[V], w[V], v[V];
    load_floats<V>(grad + i, g);
    load_raw<V>(master + i, w);
    load_raw<V>(momentum_buf + i, v);
#pragma unroll
    for (int j = 0; j < V; ++j) sgd_step(g[j], inv_scale, p, w[j], v[j]);
    store_raw<V>(master + i, w);
    store_raw<V>(momentum_buf + i, v);
    if (weight_lp != nullptr) store_floats<V>(weight_lp + i, w);
  } else {
    const int64_t i = vec_items * V + (t - vec_items);
    if (i >= count) return;
    float w = master[i], v = momentum_buf[i];
    sgd_step(to_float(grad[i]), inv_scale, p, w, v);
    master[i] = w;
    momentum_buf[i] = v;
    if (weight_lp != nullptr) weight_lp[i] = from_float<L>(w);
  }
}

/// Sets *flag = 1 if any element is inf or NaN (one store per warp at most).
template <typename G, int V>
__global__ void __launch_bounds__(kBlockThreads)
    nonfinite_check_kernel(const G* __restrict__ grad,  // (count)
                           int64_t count,
                           int32_t* __restrict__ flag) {  // (1)
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t vec_items = count / V;
  bool bad = false;
  if (t < vec_items) {
    float g[V];
    load_floats<V>(grad + t * V, g);
#pragma unroll
    for (int j = 0; j < V; ++j) bad = bad || !isfinite(g[j]);
  } else {
    const int64_t i = vec_items * V + (t - vec_items);
    if (i < count) bad = !isfinite(to_float(grad[i]));
  }
  // Every thread of the block reaches the vote (no early return above).
  if (__any_sync(0xFFFFFFFFU, bad) && threadIdx.x % 32 == 0) *flag = 1;
}

__global__ void loss_scaler_init_kernel(LossScalerState* state, float initial_scale) {
  state->scale = initial_scale;
  state->clean_steps = 0;
  state->found_nonfinite = 0;
  state->skipped_steps = 0;
}

/// torch.cuda.amp's _amp_update_scale_, plus the skipped-step count.
__global__ void loss_scale_update_kernel(LossScalerState* state, int growth_interval,
                                         float growth_factor, float backoff_factor) {
  if (state->found_nonfinite != 0) {
    state->scale *= backoff_factor;
    state->clean_steps = 0;
    state->skipped_steps += 1;
  } else {
    const int32_t clean = state->clean_steps + 1;
    if (clean >= growth_interval) {
      const float grown = state->scale * growth_factor;
      if (isfinite(grown)) state->scale = grown;
      state->clean_steps = 0;
    } else {
      state->clean_steps = clean;
    }
  }
  state->found_nonfinite = 0;
}

// ============================================================================
// launchers
// ============================================================================

/// True when p can be accessed `bytes` at a time.
bool aligned_to(const void* p, int bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

}  // namespace

void loss_scaler_init(LossScalerState* state, float initial_scale, cudaStream_t stream) {
  detail::require(state != nullptr, "loss_scaler_init", "state must be non-null");
  detail::require(std::isfinite(initial_scale) && initial_scale > 0.0F, "loss_scaler_init",
                  "initial_scale must be finite and > 0, got " + std::to_string(initial_scale));
  loss_scaler_init_kernel<<<1, 1, 0, stream>>>(state, initial_scale);
  CNNBENCH_CHECK_LAUNCH();
}

template <typename G>
void nonfinite_check(const G* grad, int64_t count, int32_t* found_nonfinite, cudaStream_t stream) {
  constexpr const char* fn = "nonfinite_check";
  detail::require(count >= 0, fn, "count must be >= 0");
  detail::require(found_nonfinite != nullptr && (count == 0 || grad != nullptr), fn,
                  "grad and found_nonfinite must be non-null");
  if (count == 0) return;
  if (detail::aligned16(grad)) {
    constexpr int V = kPack<G>;
    const int64_t threads = count / V + count % V;
    nonfinite_check_kernel<G, V>
        <<<detail::grid_1d(threads), kBlockThreads, 0, stream>>>(grad, count, found_nonfinite);
  } else {
    nonfinite_check_kernel<G, 1>
        <<<detail::grid_1d(count), kBlockThreads, 0, stream>>>(grad, count, found_nonfinite);
  }
  CNNBENCH_CHECK_LAUNCH();
}

template <typename G, typename L>
void sgd_momentum_update(const G* grad, float* master, float* momentum_buf, L* weight_lp,
                         int64_t count, const OptimizerConfig& config, const float* loss_scale,
                         const int32_t* skip, cudaStream_t stream) {
  constexpr const char* fn = "sgd_momentum_update";
  detail::require(count >= 0, fn, "count must be >= 0");
  detail::require(count == 0 || (grad != nullptr && master != nullptr && momentum_buf != nullptr),
                  fn, "grad, master and momentum_buf must be non-null");
  if (count == 0) return;
  const SgdParams p{config.learning_rate, config.momentum, config.weight_decay};
  constexpr int V = kUpdateVec;
  const bool vec = aligned_to(grad, V * static_cast<int>(sizeof(G))) && aligned_to(master, 16) &&
                   aligned_to(momentum_buf, 16) &&
                   aligned_to(weight_lp, V * static_cast<int>(sizeof(L)));
  if (vec) {
    const int64_t threads = count / V + count % V;
    sgd_momentum_kernel<G, L, V><<<detail::grid_1d(threads), kBlockThreads, 0, stream>>>(
        grad, master, momentum_buf, weight_lp, count, p, loss_scale, skip);
  } else {
    sgd_momentum_kernel<G, L, 1><<<detail::grid_1d(count), kBlockThreads, 0, stream>>>(
        grad, master, momentum_buf, weight_lp, count, p, loss_scale, skip);
  }
  CNNBENCH_CHECK_LAUNCH();
}

void loss_scale_update(LossScalerState* state, int growth_interval, cudaStream_t stream,
                       float growth_factor, float backoff_factor) {
  constexpr const char* fn = "loss_scale_update";
  detail::require(state != nullptr, fn, "state must be non-null");
  detail::require(growth_interval >= 1, fn,
                  "growth_interval must be >= 1, got " + std::to_string(growth_interval));
  detail::require(growth_factor > 1.0F && backoff_factor > 0.0F && backoff_factor < 1.0F, fn,
                  "need growth_factor > 1 and 0 < backoff_factor < 1");
  loss_scale_update_kernel<<<1, 1, 0, stream>>>(state, growth_interval, growth_factor,
                                                backoff_factor);
  CNNBENCH_CHECK_LAUNCH();
}

template void nonfinite_check<float>(const float*, int64_t, int32_t*, cudaStream_t);
template void nonfinite_check<__half>(const __half*, int64_t, int32_t*, cudaStream_t);
template void nonfinite_check<__nv_bfloat16>(const __nv_bfloat16*, int64_t, int32_t*,
                                             cudaStream_t);

#define CNNBENCH_INSTANTIATE_SGD(G, L)                                                       \
  template void sgd_momentum_update<G, L>(const G*, float*, float*, L*, int64_t,             \
                                          const OptimizerConfig&, const float*, const int32_t*, \
                                          cudaStream_t);
CNNBENCH_INSTANTIATE_SGD(float, float)
CNNBENCH_INSTANTIATE_SGD(float, __half)
CNNBENCH_INSTANTIATE_SGD(float, __nv_bfloat16)
CNNBENCH_INSTANTIATE_SGD(__half, __half)
CNNBENCH_INSTANTIATE_SGD(__nv_bfloat16, __nv_bfloat16)
#undef CNNBENCH_INSTANTIATE_SGD

}  // namespace cnnbench::kernels::cuda
