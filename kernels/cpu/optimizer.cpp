#include "kernels/cpu/optimizer.h"

namespace cnnbench::kernels::cpu {

void sgd_momentum_update(const OptimizerConfig& config, float* weights, const float* gradients,
                         float* momentum, int64_t count) {
  const float lr = config.learning_rate;
  const float mu = config.momentum;
  const float wd = config.weight_decay;
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const float g = gradients[i] + wd * weights[i];
    const float v = mu * momentum[i] + g;
    momentum[i] = v;
    weights[i] -= lr * v;
  }
}

}  // namespace cnnbench::kernels::cpu
