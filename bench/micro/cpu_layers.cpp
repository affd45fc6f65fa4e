// Convolution benchmarks on the CPU backend: kernels::cpu::ConvLayer (oneDNN),
// fp32, NHWC and NCHW, fprop / dgrad / wgrad for every distinct convolution of
// the selected models at --cpu_batch. Built with CNNBENCH_ONEDNN.
//
// What is timed is the layer call the trainer makes, including the reorder of
// the plain PyTorch-layout weights into oneDNN's preferred layout (and of the
// weight gradient back) that a training step does on every call
// (WeightFormat::Preferred, as kernels/cpu/executable.cpp compiles it).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/micro/flops.h"
#include "bench/micro/registry.h"
#include "bench/micro/shapes.h"
#include "bench/micro/timing.h"
#include "kernels/backend.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/host_array.h"

namespace cnnbench::bench::micro {

namespace {

using kernels::DataFormat;
using kernels::cpu::HostArray;

/// Uniform values in [-1, 1): never zeros, which would hide unwritten outputs
/// and can run faster than real data.
void fill_uniform(HostArray<float>& a, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  float* p = a.data();
  for (int64_t i = 0; i < a.count(); ++i) p[i] = dist(gen);
}

/// One set of the tensors a pass touches. fprop: in = x (read), out = y
/// (written). dgrad: out = dy (read), in = dx (written). wgrad: in = x and
/// out = dy (read), weights = dw (written).
struct CpuConvSet {
  HostArray<float> in;       // (N, H, W, C) NHWC or (N, C, H, W) NCHW
  HostArray<float> out;      // (N, P, Q, K) NHWC or (N, K, P, Q) NCHW
  HostArray<float> weights;  // (K, C/groups, R, S)
  HostArray<float> bias;     // (K), or empty
};

class CpuConvFixture final : public Fixture {
 public:
  CpuConvFixture(const ConvProblem& p, DataFormat format, ConvPass pass, int warmup)
      : layer_(ctx_, p.attrs, p.input, p.output, format, /*training=*/true),
        pass_(pass) {
    ctx_.allocate_scratchpad();
    const int64_t w_elements =
        int64_t{p.attrs.out_channels} * (p.input.c / p.attrs.groups) * p.attrs.kernel_h *
        p.attrs.kernel_w;
    const int64_t bias_elements = p.attrs.bias ? p.attrs.out_channels : 0;
    const int64_t set_bytes =
        4 * (p.input.elements() + p.output.elements() + w_elements + bias_elements);
    // At most 8 sets and 1 GiB in all: a server's shared L3 can be hundreds of MiB.
    const int limit = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 30) / set_bytes, 1, 8));
    const int count = rotation_sets(set_bytes, host_last_level_cache_bytes(), limit);
    for (int s = 0; s < count; ++s) {
      CpuConvSet set{HostArray<float>(p.input.elements(), "benchmark input of " + p.layer),
                     HostArray<float>(p.output.elements(), "benchmark output of " + p.layer),
                     HostArray<float>(w_elements, "benchmark weights of " + p.layer),
                     HostArray<float>(bias_elements, "benchmark bias of " + p.layer)};
      const auto seed = static_cast<uint64_t>(4 * s);
      fill_uniform(set.in, seed + 1);
      fill_uniform(set.out, seed + 2);
      fill_uniform(set.weights, seed + 3);
      if (!set.bias.empty()) fill_uniform(set.bias, seed + 4);
      sets_.push_back(std::move(set));
    }
    for (int i = 0; i < warmup; ++i) run(i);
  }

  /// One call of the pass on input set `i` modulo the number of sets.
  void run(int64_t i) {
    CpuConvSet& s = sets_[static_cast<size_t>(i % static_cast<int64_t>(sets_.size()))];
    float* bias = s.bias.empty() ? nullptr : s.bias.data();
    switch (pass_) {
      case ConvPass::Fprop: layer_.forward(s.in.data(), s.weights.data(), bias, s.out.data()); break;
      case ConvPass::Dgrad: layer_.backward_data(s.out.data(), s.weights.data(), s.in.data()); break;
      case ConvPass::Wgrad:
        layer_.backward_weights(s.in.data(), s.out.data(), s.weights.data(), bias);
        break;
    }
    ctx_.stream().wait();
  }

  [[nodiscard]] int sets() const { return static_cast<int>(sets_.size()); }
  [[nodiscard]] std::string implementation() const { return layer_.implementation(); }

 private:
  kernels::cpu::Context ctx_;
  kernels::cpu::ConvLayer layer_;
  ConvPass pass_;
  std::vector<CpuConvSet> sets_;
};

void cpu_conv_benchmark(benchmark::State& state, FixtureSlot* slot, const ConvProblem& p,
                        DataFormat format, ConvPass pass, int warmup, const std::string& key) {
  run_guarded(state, [&](benchmark::State& st) {
    auto& fixture = slot->get<CpuConvFixture>(
        key, [&] { return std::make_unique<CpuConvFixture>(p, format, pass, warmup); });
    const double total = time_host_loop(st, [&](int64_t i) { fixture.run(i); });
    set_tflops_counter(st, conv_pass_flops(p.input, p.attrs, p.output, pass), total);
    // The label names the oneDNN implementation: a slow machine often differs
    // from a fast one by the kernel oneDNN picked for its instruction set.
    st.SetLabel(p.describe() + " sets " + std::to_string(fixture.sets()) + " | " +
                fixture.implementation());
  });
}

}  // namespace

Registration register_cpu_layer_benchmarks(const Options& options, FixtureSlot& slot) {
  Registration reg;
  for (const std::string& model : options.models) {
    const models::Graph graph = inferred_model(model, options.cpu_batch, options.image_size);
    for (const ConvProblem& p : conv_problems(graph)) {
      for (const ConvPass pass : {ConvPass::Fprop, ConvPass::Dgrad, ConvPass::Wgrad}) {
        if (pass == ConvPass::Dgrad && p.reads_images) continue;  // a step never needs it
        for (const DataFormat format : {DataFormat::NHWC, DataFormat::NCHW}) {
          const std::string name = "conv/cpu/" + model + "/" + p.layer + "/" + to_string(pass) +
                                   "/fp32/" + kernels::to_string(format);
          benchmark::RegisterBenchmark(name.c_str(),
                                       [&slot, p, format, pass, warmup = options.warmup,
                                        name](benchmark::State& state) {
                                         cpu_conv_benchmark(state, &slot, p, format, pass, warmup,
                                                            name);
                                       })
              ->UseManualTime()
              ->Unit(benchmark::kMillisecond);
          ++reg.registered;
        }
      }
    }
  }
  return reg;
}

}  // namespace cnnbench::bench::micro
