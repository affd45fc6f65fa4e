// The optimizer step of the CUDA backend and dynamic loss scaling, all on the
// device so that a whole training step can be one CUDA graph.
//
// sgd_momentum_update: one fused pass over the flat parameter/gradient buffers
// (models::Graph::param_layout order), torch.optim.SGD with momentum, L2 weight
// decay, dampening 0, no Nesterov (kernels::OptimizerConfig), in torch's order
// and rounding (fp32 throughout):
//
//   g = grad · (1/loss_scale)        (the unscale, as torch.cuda.amp.GradScaler)
//   g = g + wd·w                     (torch: d_p.add(p, alpha=wd), one fused multiply-add)
//   v = momentum·v + g               (torch: buf.mul_(momentum).add_(g), two roundings)
//   w = w − lr·v                     (torch: p.add_(buf, alpha=−lr), one fused multiply-add)
//   w_lp = round_to_nearest(w)       (the fp16/bf16 copy the next forward reads)
//
// v starts at zero, which equals torch's first step (buf = clone(g)). With fp32
// master weights w; the gradient may be fp32, fp16 or bf16.
//
// Dynamic loss scaling (fp16), as torch.cuda.amp.GradScaler: nonfinite_check
// sets a flag in device memory if any gradient is inf or NaN; the update reads
// the flag on the device and then changes nothing; loss_scale_update halves the
// scale after an overflow and doubles it after growth_interval consecutive clean
// steps, then clears the flag. Nothing is read back to the host.
//
// Order within a step (one stream, or streams ordered by events):
//   softmax_cross_entropy(..., &state->scale) → backward → [all-reduce] →
//   nonfinite_check(..., &state->found_nonfinite) (once per gradient buffer or
//   bucket; it only ever sets the flag) → sgd_momentum_update(..., &state->scale,
//   &state->found_nonfinite) → loss_scale_update(state).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/backend.h"

namespace cnnbench::kernels::cuda {

/// State of the dynamic loss scaler; lives in device memory (initialise it with
/// loss_scaler_init). Trivially copyable so the host may read it back for reports.
struct LossScalerState {
  float scale = 65536.0F;         ///< current loss scale (torch's default init_scale 2^16)
  int32_t clean_steps = 0;        ///< consecutive steps without a non-finite gradient
  int32_t found_nonfinite = 0;    ///< 1 once nonfinite_check saw inf/NaN this step
  int32_t skipped_steps = 0;      ///< steps skipped since initialisation (for reports)
};

/// Writes a fresh LossScalerState {initial_scale, 0, 0, 0} to `state` (device) on
/// `stream` with a one-thread kernel (capturable; no host buffer to outlive).
void loss_scaler_init(LossScalerState* state, float initial_scale, cudaStream_t stream);

/// Sets *found_nonfinite = 1 (device) if any of grad[0, count) is inf or NaN;
/// never clears it (loss_scale_update does), so calls over several buckets
/// accumulate. Bytes moved: count·sizeof(G) read.
template <typename G>
void nonfinite_check(const G* grad,             // (count) flat gradients
                     int64_t count,
                     int32_t* found_nonfinite,  // (1) device flag
                     cudaStream_t stream);

/// The fused SGD-momentum update above over [0, count). When `skip` is non-null
/// and *skip != 0 (device), nothing is written. `loss_scale` (device) may be
/// nullptr for 1. `weight_lp` may be nullptr (fp32 runs: L = float, no copy).
/// Instantiated for (G, L) ∈ {(float, float), (float, __half),
/// (float, __nv_bfloat16), (__half, __half), (__nv_bfloat16, __nv_bfloat16)}.
/// Bytes moved: count·(sizeof(G) + 16 + [weight_lp]·sizeof(L)) (grad read,
/// master and momentum read and written, copy written).
template <typename G, typename L>
void sgd_momentum_update(const G* grad,             // (count) flat gradients (scaled by loss_scale)
                         float* master,             // (count) fp32 weights, updated
                         float* momentum_buf,       // (count) fp32 velocity, updated (zero at start)
                         L* weight_lp,              // (count) low-precision copy, or nullptr
                         int64_t count,
                         const OptimizerConfig& config,
                         const float* loss_scale,   // (1) device, or nullptr
                         const int32_t* skip,       // (1) device flag, or nullptr
                         cudaStream_t stream);

/// GradScaler's update on the device (one thread): after a step whose gradients
/// held inf/NaN, scale ·= backoff_factor, clean_steps = 0, skipped_steps += 1;
/// otherwise clean_steps += 1 and, on reaching growth_interval, scale ·=
/// growth_factor (if that stays finite) and clean_steps = 0. Then clears
/// found_nonfinite. Defaults are torch's (2.0, 0.5; growth_interval 2000).
void loss_scale_update(LossScalerState* state, int growth_interval, cudaStream_t stream,
                       float growth_factor = 2.0F, float backoff_factor = 0.5F);

}  // namespace cnnbench::kernels::cuda
