// sgd_momentum_update against a hand-written loop of torch.optim.SGD's update
// (momentum buffer initialised to the first gradient, dampening 0, no Nesterov).
#include "kernels/cpu/optimizer.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels::cpu {
namespace {

TEST(SgdMomentum, MatchesTorchOptimSgdOverSeveralSteps) {
  const OptimizerConfig config{.learning_rate = 0.05F, .momentum = 0.9F, .weight_decay = 1e-3F};
  const int64_t n = 1000;
  auto w = testutil::uniform_vector(n, 1);
  std::vector<float> v(static_cast<size_t>(n), 0.0F);
  std::vector<double> w_ref(w.begin(), w.end());
  std::vector<double> buf(static_cast<size_t>(n));
  for (int step = 0; step < 4; ++step) {
    const auto g = testutil::uniform_vector(n, 10U + static_cast<uint32_t>(step));
    sgd_momentum_update(config, w.data(), g.data(), v.data(), n);
    // torch/optim/sgd.py (_single_tensor_sgd): d_p = grad + wd·p; the buffer is
    // clone(d_p) on the first step, then momentum·buf + d_p; p −= lr·buf.
    for (size_t i = 0; i < w_ref.size(); ++i) {
      const double d_p = g[i] + static_cast<double>(config.weight_decay) * w_ref[i];
      buf[i] = step == 0 ? d_p : static_cast<double>(config.momentum) * buf[i] + d_p;
      w_ref[i] -= static_cast<double>(config.learning_rate) * buf[i];
    }
  }
  for (size_t i = 0; i < w_ref.size(); ++i) {
    ASSERT_NEAR(w[i], w_ref[i], 1e-6) << "at " << i;
    ASSERT_NEAR(v[i], buf[i], 1e-5) << "at " << i;
  }
}

TEST(SgdMomentum, NoMomentumNoDecayIsPlainSgd) {
  const OptimizerConfig config{.learning_rate = 0.5F, .momentum = 0.0F, .weight_decay = 0.0F};
  std::vector<float> w{1.0F, -2.0F, 3.0F}, g{0.5F, 0.25F, -1.0F}, v(3, 0.0F);
  sgd_momentum_update(config, w.data(), g.data(), v.data(), 3);
  EXPECT_EQ(w, (std::vector<float>{0.75F, -2.125F, 3.5F}));
}

}  // namespace
}  // namespace cnnbench::kernels::cpu
