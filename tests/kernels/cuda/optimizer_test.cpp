// kernels/cuda/optimizer.cu: the fused SGD-momentum update bit for bit against
// torch.optim.SGD's update written as a loop, the non-finite gradient check, and
// dynamic loss scaling on the device (also replayed as a CUDA graph).
#include "kernels/cuda/optimizer.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/kernels/cuda/cuda_test_util.h"

namespace cnnbench::kernels::cuda {
namespace {

using test_util::expect_bitwise_equal;
using test_util::from_f;
using test_util::poisoned;
using test_util::Rng;
using test_util::to_device;
using test_util::to_f;
using test_util::to_host;

constexpr OptimizerConfig kConfig{.learning_rate = 0.1F, .momentum = 0.9F, .weight_decay = 1e-4F};

/// torch.optim.SGD's step (foreach or single-tensor form) for one tensor, in
/// fp32, after GradScaler's unscale (grad ·= 1/scale):
///   d_p = d_p.add(p, alpha=wd)        → fma(wd, p, d_p)
///   buf.mul_(momentum).add_(d_p)      → (momentum·buf rounded) + d_p
///   p.add_(buf, alpha=−lr)            → fma(−lr, buf, p)
/// (PyTorch's add with alpha computes a + alpha·b as one fused multiply-add on
/// CUDA and in its vectorised CPU kernels.) The buffer starts at zero, which
/// equals torch's first-step clone.
void reference_sgd(std::vector<float>& w, std::vector<float>& v, const std::vector<float>& grad,
                   float inv_scale, const OptimizerConfig& c) {
  for (size_t i = 0; i < w.size(); ++i) {
    float g = grad[i] * inv_scale;
    g = std::fma(c.weight_decay, w[i], g);
    const float mv = c.momentum * v[i];
    v[i] = mv + g;
    w[i] = std::fma(-c.learning_rate, v[i], w[i]);
  }
}

/// Runs three steps of sgd_momentum_update<G, L> on `count` elements starting
/// `offset` elements into their buffers (offset 1 defeats the vector path) and
/// compares master weights, momentum and the low-precision copy bit for bit.
template <typename G, typename L>
void check_update(int64_t count, int64_t offset, bool with_copy, float loss_scale, Rng& rng) {
  SCOPED_TRACE("count " + std::to_string(count) + " offset " + std::to_string(offset) +
               (with_copy ? " with copy" : "") + " loss scale " + std::to_string(loss_scale));
  const auto total = static_cast<size_t>(count + offset);
  std::vector<float> w(total), v(total, 0.0F);
  for (auto& e : w) e = rng.uniform(-1.0F, 1.0F);
  const DeviceBuffer d_w = to_device(w), d_v = to_device(v);
  const DeviceBuffer d_lp = poisoned<L>(total);
  const DeviceBuffer d_scale = to_device(std::vector<float>{loss_scale});
  const DeviceBuffer d_skip = to_device(std::vector<int32_t>{0});
  const Stream stream;
  for (int step = 0; step < 3; ++step) {
    std::vector<G> grad(total);
    for (auto& e : grad) e = from_f<G>(rng.normal() * 0.01F * loss_scale);
    const DeviceBuffer d_g = to_device(grad);
    sgd_momentum_update<G, L>(d_g.as<G>() + offset, d_w.as<float>() + offset,
                              d_v.as<float>() + offset, with_copy ? d_lp.as<L>() + offset : nullptr,
                              count, kConfig, d_scale.as<float>(), d_skip.as<int32_t>(), stream.get());
    stream.synchronize();
    std::vector<float> gf(total);
    for (size_t i = 0; i < total; ++i) gf[i] = to_f(grad[i]);
    std::vector<float> w_tail(w.begin() + offset, w.end()), v_tail(v.begin() + offset, v.end());
    const std::vector<float> g_tail(gf.begin() + offset, gf.end());
    reference_sgd(w_tail, v_tail, g_tail, 1.0F / loss_scale, kConfig);
    std::copy(w_tail.begin(), w_tail.end(), w.begin() + offset);
    std::copy(v_tail.begin(), v_tail.end(), v.begin() + offset);
    SCOPED_TRACE("step " + std::to_string(step));
    expect_bitwise_equal(to_host<float>(d_w, total), w, "master weights");
    expect_bitwise_equal(to_host<float>(d_v, total), v, "momentum");
    if (with_copy) {
      std::vector<L> lp = to_host<L>(d_lp, total), lp_ref(lp);  // elements before offset: untouched
      for (size_t i = static_cast<size_t>(offset); i < total; ++i) lp_ref[i] = from_f<L>(w[i]);
      expect_bitwise_equal(lp, lp_ref, "low-precision copy");
    }
  }
}

TEST(OptimizerTest, SgdMomentumMatchesTorchBitForBit) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  // 1000003 = vector body plus a tail of 3; 5 = one vector and a tail of 1;
  // offset 1 = the one-element path.
  for (const int64_t count : {int64_t{1000003}, int64_t{5}}) {
    for (const int64_t offset : {int64_t{0}, int64_t{1}}) {
      check_update<float, float>(count, offset, false, 1.0F, rng);
      check_update<float, __half>(count, offset, true, 1024.0F, rng);
      check_update<float, __nv_bfloat16>(count, offset, true, 1.0F, rng);
      check_update<__half, __half>(count, offset, true, 65536.0F, rng);
      check_update<__nv_bfloat16, __nv_bfloat16>(count, offset, true, 1.0F, rng);
    }
  }
}

template <typename G>
void check_nonfinite(Rng& rng) {
  const int64_t count = 100003;
  std::vector<G> grad(static_cast<size_t>(count));
  for (auto& e : grad) e = from_f<G>(rng.normal());
  const Stream stream;
  auto flag_after = [&](const std::vector<G>& g, int32_t initial) {
    const DeviceBuffer d_g = to_device(g), d_flag = to_device(std::vector<int32_t>{initial});
    nonfinite_check<G>(d_g.as<G>(), count, d_flag.as<int32_t>(), stream.get());
    stream.synchronize();
    return to_host<int32_t>(d_flag, 1)[0];
  };
  EXPECT_EQ(flag_after(grad, 0), 0) << "finite gradients";
  EXPECT_EQ(flag_after(grad, 1), 1) << "the check never clears the flag";
  const float inf = std::numeric_limits<float>::infinity();
  // Positions in the vector body (first, middle) and in the tail (last).
  for (const int64_t pos : {int64_t{0}, int64_t{12345}, count - 1}) {
    for (const float bad : {inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
      std::vector<G> g = grad;
      g[static_cast<size_t>(pos)] = from_f<G>(bad);
      EXPECT_EQ(flag_after(g, 0), 1) << "value " << bad << " at " << pos;
    }
  }
}

TEST(OptimizerTest, NonfiniteCheckFindsInfAndNaN) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  check_nonfinite<float>(rng);
  check_nonfinite<__half>(rng);
  check_nonfinite<__nv_bfloat16>(rng);
}

LossScalerState read_state(const DeviceBuffer& d) {
  LossScalerState s;
  CNNBENCH_CHECK_CUDA(cudaMemcpy(&s, d.get(), sizeof(s), cudaMemcpyDeviceToHost));
  return s;
}

/// One fp16 training step's tail as the executable runs it: check, update
/// (skipped on overflow), scaler update, all reading device state.
struct ScaledStep {
  const DeviceBuffer& grad;  // __half (count)
  const DeviceBuffer& w;     // float (count)
  const DeviceBuffer& v;     // float (count)
  const DeviceBuffer& lp;    // __half (count)
  const DeviceBuffer& state; // LossScalerState
  int64_t count;
  int growth_interval;

  void enqueue(cudaStream_t stream) const {
    auto* st = state.as<LossScalerState>();
    nonfinite_check<__half>(grad.as<__half>(), count, &st->found_nonfinite, stream);
    sgd_momentum_update<__half, __half>(grad.as<__half>(), w.as<float>(), v.as<float>(),
                                        lp.as<__half>(), count, kConfig, &st->scale,
                                        &st->found_nonfinite, stream);
    loss_scale_update(st, growth_interval, stream);
  }
};

/// Drives ScaledStep through overflow and growth, either enqueued directly or
/// replayed from one captured CUDA graph, checking weights and scaler state
/// after every step against the host model of GradScaler + SGD.
void check_dynamic_loss_scaling(bool as_graph, Rng& rng) {
  SCOPED_TRACE(as_graph ? "CUDA graph replay" : "direct launches");
  const int64_t count = 4099;
  const int growth_interval = 3;
  std::vector<float> w(static_cast<size_t>(count)), v(static_cast<size_t>(count), 0.0F);
  for (auto& e : w) e = rng.uniform(-1.0F, 1.0F);
  const DeviceBuffer d_grad = poisoned<__half>(static_cast<size_t>(count));
  const DeviceBuffer d_w = to_device(w), d_v = to_device(v);
  const DeviceBuffer d_lp = poisoned<__half>(static_cast<size_t>(count));
  const DeviceBuffer d_state(sizeof(LossScalerState), "loss scaler state");
  const Stream stream;
  loss_scaler_init(d_state.as<LossScalerState>(), 1024.0F, stream.get());
  stream.synchronize();
  {
    const LossScalerState s = read_state(d_state);
    EXPECT_EQ(s.scale, 1024.0F);
    EXPECT_EQ(s.clean_steps, 0);
    EXPECT_EQ(s.found_nonfinite, 0);
    EXPECT_EQ(s.skipped_steps, 0);
  }
  const ScaledStep step{d_grad, d_w, d_v, d_lp, d_state, count, growth_interval};

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (as_graph) {
    CNNBENCH_CHECK_CUDA(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    step.enqueue(stream.get());
    CNNBENCH_CHECK_CUDA(cudaStreamEndCapture(stream.get(), &graph));
    CNNBENCH_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  }

  // Host model of the scaler: (scale, clean steps, skipped steps).
  float scale = 1024.0F;
  int clean = 0, skipped = 0;
  // Step kinds: 1 = an inf among the gradients. Overflow first (halve), then
  // growth_interval clean steps (double on the last), an overflow in the middle
  // of the next run of clean steps (resets the count), then clean steps again.
  const std::vector<int> plan = {1, 0, 0, 0, 0, 1, 0, 0, 0};
  for (size_t k = 0; k < plan.size(); ++k) {
    SCOPED_TRACE("step " + std::to_string(k) + (plan[k] != 0 ? " (overflow)" : ""));
    std::vector<__half> grad(static_cast<size_t>(count));
    for (auto& e : grad) e = __float2half_rn(rng.normal() * 0.01F * scale);
    if (plan[k] != 0) grad[static_cast<size_t>(rng.uniform_int(0, static_cast<int>(count) - 1))] =
        __float2half_rn(std::numeric_limits<float>::infinity());
    CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(d_grad.get(), grad.data(), grad.size() * sizeof(__half),
                                        cudaMemcpyHostToDevice, stream.get()));
    if (as_graph) {
      CNNBENCH_CHECK_CUDA(cudaGraphLaunch(exec, stream.get()));
    } else {
      step.enqueue(stream.get());
    }
    stream.synchronize();

    if (plan[k] != 0) {
      scale *= 0.5F;
      clean = 0;
      ++skipped;
    } else {
      std::vector<float> gf(grad.size());
      for (size_t i = 0; i < grad.size(); ++i) gf[i] = __half2float(grad[i]);
      reference_sgd(w, v, gf, 1.0F / scale, kConfig);
      if (++clean == growth_interval) {
        scale *= 2.0F;
        clean = 0;
      }
    }
    const LossScalerState s = read_state(d_state);
    EXPECT_EQ(s.scale, scale);
    EXPECT_EQ(s.clean_steps, clean);
    EXPECT_EQ(s.found_nonfinite, 0) << "the scaler update clears the flag";
    EXPECT_EQ(s.skipped_steps, skipped);
    expect_bitwise_equal(to_host<float>(d_w, w.size()), w, "master weights");
    expect_bitwise_equal(to_host<float>(d_v, v.size()), v, "momentum");
  }
  if (as_graph) {
    CNNBENCH_CHECK_CUDA(cudaGraphExecDestroy(exec));
    CNNBENCH_CHECK_CUDA(cudaGraphDestroy(graph));
  }
}

TEST(OptimizerTest, DynamicLossScalingSkipsHalvesAndGrows) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  check_dynamic_loss_scaling(false, rng);
  check_dynamic_loss_scaling(true, rng);
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
