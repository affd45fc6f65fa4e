// The optimizer update: SGD with momentum and L2 weight decay.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace cnnbench::kernels::cpu {

/// One step of torch.optim.SGD (dampening 0, no Nesterov) over `count`
/// parameters: g' = g + weight_decay·w; v = momentum·v + g'; w = w − lr·v.
/// On the first step v = 0, so v becomes g' exactly as PyTorch's momentum
/// buffer is initialised to g'. Buffers are flat and of equal length; the
/// update is element-wise (OpenMP).
void sgd_momentum_update(const OptimizerConfig& config, float* weights, const float* gradients,
                         float* momentum, int64_t count);

}  // namespace cnnbench::kernels::cpu
