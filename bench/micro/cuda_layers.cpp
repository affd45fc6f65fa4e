// Convolution benchmarks on the CUDA backend: one kernels::cuda::ConvPlan
// (cuDNN graph API) per distinct convolution of the selected models at
// --gpu_batch, pass (fprop / dgrad / wgrad), precision (fp32, tf32, fp16,
// bf16) and layout (NHWC, NCHW), built as the trainer builds it (heuristics,
// autotuned with --cudnn_autotune). Timed with CUDA events, inputs rotated
// across enough sets to leave the L2.
#include <memory>
#include <string>

#include "bench/micro/flops.h"
#include "bench/micro/gpu_common.h"
#include "bench/micro/shapes.h"
#include "bench/micro/timing.h"
#include "kernels/cuda/conv.h"

namespace cnnbench::bench::micro {

namespace {

namespace kc = kernels::cuda;
using kernels::DataFormat;
using kernels::Precision;

kc::ConvKind conv_kind(ConvPass pass) {
  switch (pass) {
    case ConvPass::Fprop: return kc::ConvKind::Fprop;
    case ConvPass::Dgrad: return kc::ConvKind::Dgrad;
    case ConvPass::Wgrad: return kc::ConvKind::Wgrad;
  }
  return kc::ConvKind::Fprop;
}

/// The first layer (C = 3) in NHWC fp16/bf16 runs on images padded to 8
/// channels, as kernels/cuda/conv.h describes, so that tensor-core engines
/// apply; the extra channels are counted in no FLOP figure (the FLOPs are
/// those of the unpadded layer, the work the network asks for).
int64_t padded_channels(const ConvProblem& p, Precision precision, DataFormat format) {
  const bool half = precision == Precision::Fp16 || precision == Precision::Bf16;
  if (half && format == DataFormat::NHWC && p.input.c % 8 != 0 && p.attrs.groups == 1 &&
      p.reads_images) {
    return (p.input.c + 7) / 8 * 8;
  }
  return 0;
}

class GpuConvFixture final : public Fixture {
 public:
  GpuConvFixture(GpuSession& gpu, const ConvProblem& p, Precision precision, DataFormat format,
                 ConvPass pass, const Options& options)
      : gpu_(gpu),
        pass_(pass),
        config_{.shape = kc::conv_shape(p.input, p.attrs, padded_channels(p, precision, format)),
                .kind = conv_kind(pass),
                .precision = precision,
                .format = format},
        plan_(gpu.context(), config_, kc::ConvBuildOptions{.autotune = options.cudnn_autotune}),
        buffers_(gpu,
                 {{config_.shape.x_elements(), kc::storage_dtype(precision), "x of " + p.layer},
                  {config_.shape.w_elements(), kc::storage_dtype(precision), "w of " + p.layer},
                  {config_.shape.y_elements(), kc::storage_dtype(precision), "y of " + p.layer}},
                 /*seed=*/11) {
    gpu.context().reserve_workspace(plan_.workspace_bytes());
    for (int i = 0; i < options.warmup; ++i) enqueue(i);
    kc::Stream& stream = gpu.context().stream;
    stream.synchronize();
  }

  /// One pass on buffer set i: fprop y = conv(x, w); dgrad dx (in x's buffer)
  /// from dy (in y's) and w; wgrad dw (in w's) from x and dy.
  void enqueue(int64_t i) const {
    const kc::DeviceContext& ctx = gpu_.context();
    void* x = buffers_.get(i, 0);
    void* w = buffers_.get(i, 1);
    void* y = buffers_.get(i, 2);
    switch (pass_) {
      case ConvPass::Fprop: plan_.fprop(ctx, x, w, y); break;
      case ConvPass::Dgrad: plan_.dgrad(ctx, y, w, x); break;
      case ConvPass::Wgrad: plan_.wgrad(ctx, x, y, w); break;
    }
  }

  [[nodiscard]] const kc::ConvPlan& plan() const { return plan_; }
  [[nodiscard]] const BufferSets& buffers() const { return buffers_; }

 private:
  GpuSession& gpu_;
  ConvPass pass_;
  kc::ConvConfig config_;
  kc::ConvPlan plan_;
  BufferSets buffers_;
};

void gpu_conv_benchmark(benchmark::State& state, FixtureSlot* slot, GpuSession* gpu,
                        const ConvProblem& p, Precision precision, DataFormat format,
                        ConvPass pass, const Options& options, const std::string& key) {
  run_guarded(state, [&](benchmark::State& st) {
    auto& fixture = slot->get<GpuConvFixture>(key, [&] {
      return std::make_unique<GpuConvFixture>(*gpu, p, precision, format, pass, options);
    });
    const double total =
        time_device_loop(st, gpu->stream(), [&](int64_t i) { fixture.enqueue(i); });
    set_tflops_counter(st, conv_pass_flops(p.input, p.attrs, p.output, pass), total);
    std::string label = p.describe() + " sets " + std::to_string(fixture.buffers().sets());
    if (const int64_t c = padded_channels(p, precision, format); c > 0) {
      label += " C padded to " + std::to_string(c);
    }
    st.SetLabel(label + " | " + fixture.plan().engine().to_string());
  });
}

}  // namespace

int register_cuda_layer_benchmarks(const Options& options, FixtureSlot& slot, GpuSession& gpu) {
  int registered = 0;
  for (const std::string& model : options.models) {
    const models::Graph graph = inferred_model(model, options.gpu_batch, options.image_size);
    for (const ConvProblem& p : conv_problems(graph)) {
      for (const ConvPass pass : {ConvPass::Fprop, ConvPass::Dgrad, ConvPass::Wgrad}) {
        if (pass == ConvPass::Dgrad && p.reads_images) continue;  // a step never needs it
        for (const Precision precision :
             {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16}) {
          for (const DataFormat format : {DataFormat::NHWC, DataFormat::NCHW}) {
            const std::string name = "conv/cuda/" + model + "/" + p.layer + "/" +
                                     to_string(pass) + "/" + kernels::to_string(precision) + "/" +
                                     kernels::to_string(format);
            benchmark::RegisterBenchmark(
                name.c_str(),
                [&slot, &gpu, &options, p, precision, format, pass,
                 name](benchmark::State& state) {
                  gpu_conv_benchmark(state, &slot, &gpu, p, precision, format, pass, options,
                                     name);
                })
                ->UseManualTime()
                ->Unit(benchmark::kMillisecond);
            ++registered;
          }
        }
      }
    }
  }
  return registered;
}

}  // namespace cnnbench::bench::micro
