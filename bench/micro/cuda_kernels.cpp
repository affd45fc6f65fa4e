// Benchmarks of the CUDA backend's own kernels (kernels/cuda/*.cuh launchers)
// on the tensors of the selected models at --gpu_batch: batch normalisation
// with its fused add and ReLU (forward and backward), pooling, the loss, the
// fused SGD-momentum update and the casts. All are memory-bound, so each
// reports GB/s from the bytes it must move (counted in bench/micro/flops.h and
// named in a comment beside each benchmark) against the device-to-device copy
// bandwidth measured in the same run (copy_d2d, registered first).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/micro/flops.h"
#include "bench/micro/gpu_common.h"
#include "bench/micro/shapes.h"
#include "kernels/cuda/batchnorm.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/loss.cuh"
#include "kernels/cuda/optimizer.cuh"
#include "kernels/cuda/pool.cuh"

namespace cnnbench::bench::micro {

namespace {

namespace kc = kernels::cuda;
using kernels::DataFormat;
using kernels::DType;

/// Enqueues one call on buffer set `i` (or prepares set `i`) on `stream`.
using EnqueueFn = std::function<void(const BufferSets& b, int64_t i, cudaStream_t stream)>;

/// A kernel benchmark: its buffers (one rotating set), the call, the bytes one
/// call moves, and an optional preparation run once per set after the random
/// fill (e.g. a max-pool forward that gives the backward a real argmax).
struct KernelCase {
  std::string name;
  std::string label;
  double bytes = 0;
  std::vector<BufferSpec> buffers{};
  EnqueueFn enqueue{};
  EnqueueFn prepare{};
  /// The copy_d2d benchmark: its GB/s becomes the session's copy bandwidth.
  bool copy_reference = false;
};

class KernelFixture final : public Fixture {
 public:
  KernelFixture(GpuSession& gpu, const KernelCase& c, int warmup)
      : gpu_(gpu), case_(c), buffers_(gpu, c.buffers, /*seed=*/23) {
    const cudaStream_t stream = gpu.stream();
    if (c.prepare) {
      for (int s = 0; s < buffers_.sets(); ++s) c.prepare(buffers_, s, stream);
    }
    for (int i = 0; i < warmup; ++i) c.enqueue(buffers_, i, stream);
    CNNBENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  }
  void enqueue(int64_t i) const { case_.enqueue(buffers_, i, gpu_.stream()); }
  [[nodiscard]] int sets() const { return buffers_.sets(); }

 private:
  GpuSession& gpu_;
  const KernelCase& case_;
  BufferSets buffers_;
};

void register_case(std::shared_ptr<const KernelCase> c, const Options& options, FixtureSlot& slot,
                   GpuSession& gpu) {
  const std::string name = c->name;
  benchmark::RegisterBenchmark(
      name.c_str(),
      [c, &slot, &gpu, warmup = options.warmup](benchmark::State& state) {
        run_guarded(state, [&](benchmark::State& st) {
          auto& fixture = slot.get<KernelFixture>(
              c->name, [&] { return std::make_unique<KernelFixture>(gpu, *c, warmup); });
          const double total =
              time_device_loop(st, gpu.stream(), [&](int64_t i) { fixture.enqueue(i); });
          if (c->copy_reference && total > 0) {
            gpu.record_copy_gbps(gigabytes_per_second(
                c->bytes * static_cast<double>(st.iterations()), total));
          }
          set_bandwidth_counters(st, gpu, c->bytes, total);
          st.SetLabel(c->label + " sets " + std::to_string(fixture.sets()));
        });
      })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

// ---- storage types ---------------------------------------------------------------

const DType kStorageTypes[] = {DType::F32, DType::F16, DType::BF16};

const char* dtype_label(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
  }
  return "?";
}

/// Calls f.template operator()<T>() with the storage type T of `t`.
template <typename F>
void with_storage_type(DType t, F&& f) {
  switch (t) {
    case DType::F32: f.template operator()<float>(); return;
    case DType::F16: f.template operator()<__half>(); return;
    case DType::BF16: f.template operator()<__nv_bfloat16>(); return;
    case DType::I32: break;
  }
  throw std::invalid_argument("no storage type for I32");
}

/// Scratch of `bytes` as F32 elements (rounded up).
int64_t scratch_floats(int64_t bytes) { return (bytes + 3) / 4; }

// ---- the cases -------------------------------------------------------------------

/// copy_d2d: cudaMemcpyAsync of 1 GiB device to device, the ceiling every
/// memory-bound kernel is held against. Bytes: 1 GiB read + 1 GiB written.
KernelCase copy_case() {
  const int64_t bytes = int64_t{1} << 30;
  KernelCase c{.name = "kernel/cuda/copy_d2d/" + format_bytes(bytes),
               .label = "cudaMemcpyAsync device to device, bytes read + written",
               .bytes = static_cast<double>(copy_bytes(bytes)),
               .buffers = {{bytes / 4, DType::F32, "copy source"},
                           {bytes / 4, DType::F32, "copy destination"}},
               .copy_reference = true};
  c.enqueue = [bytes](const BufferSets& b, int64_t i, cudaStream_t s) {
    CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(b.get(i, 1), b.get(i, 0), static_cast<size_t>(bytes),
                                        cudaMemcpyDeviceToDevice, s));
  };
  return c;
}

std::vector<KernelCase> batchnorm_cases(const BatchNormProblem& p) {
  std::vector<KernelCase> cases;
  const bool relu = p.epilogue != BatchNormEpilogue::None;
  const bool add = p.epilogue == BatchNormEpilogue::AddRelu;
  const int64_t e = p.shape.elements();
  const int64_t c = p.shape.c;
  const int64_t scratch = kc::batchnorm_scratch_bytes(p.shape);
  const models::BatchNormAttrs attrs{};
  for (const DType t : kStorageTypes) {
    for (const DataFormat f : {DataFormat::NHWC, DataFormat::NCHW}) {
      const std::string where = std::string(dtype_label(t)) + "/" + kernels::to_string(f) + "/" +
                                p.model + "/" + p.layer;
      const std::string label = format_shape(p.shape) + " x" + std::to_string(p.occurrences);
      const int64_t size = kernels::dtype_size(t);

      // Training forward. Bytes: statistics pass reads x; apply pass reads x
      // (and z with the fused add) and writes y: (3 + [add])·E·size.
      KernelCase fwd{.name = "kernel/cuda/" + std::string(to_string(p.epilogue)) + "_fwd/" + where,
                     .label = label,
                     .bytes = static_cast<double>(batchnorm_forward_bytes(e, size, add)),
                     .buffers = {{e, t, "x"},
                                 {add ? e : 0, t, "z"},
                                 {e, t, "y"},
                                 {c, DType::F32, "gamma"},
                                 {c, DType::F32, "beta"},
                                 {c, DType::F32, "running_mean"},
                                 {c, DType::F32, "running_var"},
                                 {c, DType::F32, "save_mean"},
                                 {c, DType::F32, "save_invstd"},
                                 {scratch_floats(scratch), DType::F32, "scratch"}}};
      fwd.enqueue = [=](const BufferSets& b, int64_t i, cudaStream_t s) {
        with_storage_type(t, [&]<typename T>() {
          kc::batchnorm_forward_training<T>(
              b.as<T>(i, 0), add ? b.as<T>(i, 1) : nullptr, b.as<T>(i, 2), b.as<float>(i, 3),
              b.as<float>(i, 4), b.as<float>(i, 5), b.as<float>(i, 6), b.as<float>(i, 7),
              b.as<float>(i, 8), b.get(i, 9), scratch, p.shape, f, attrs, relu, s);
        });
      };
      cases.push_back(std::move(fwd));

      // Backward. Bytes: reduce pass reads x, dy (and y with the ReLU), writes
      // dz with the add; apply pass reads x and dz, or dy (and y), writes dx:
      // ((2 + [relu] + [add]) + (3 + (add ? 0 : [relu])))·E·size.
      KernelCase bwd{.name = "kernel/cuda/" + std::string(to_string(p.epilogue)) + "_bwd/" + where,
                     .label = label,
                     .bytes = static_cast<double>(batchnorm_backward_bytes(e, size, relu, add)),
                     .buffers = {{e, t, "x"},
                                 {relu ? e : 0, t, "y"},
                                 {e, t, "dy"},
                                 {e, t, "dx"},
                                 {add ? e : 0, t, "dz"},
                                 {c, DType::F32, "gamma"},
                                 {c, DType::F32, "save_mean"},
                                 {c, DType::F32, "save_invstd"},
                                 {c, DType::F32, "dgamma"},
                                 {c, DType::F32, "dbeta"},
                                 {scratch_floats(scratch), DType::F32, "scratch"}}};
      bwd.enqueue = [=](const BufferSets& b, int64_t i, cudaStream_t s) {
        with_storage_type(t, [&]<typename T>() {
          kc::batchnorm_backward<T>(b.as<T>(i, 0), relu ? b.as<T>(i, 1) : nullptr, b.as<T>(i, 2),
                                    b.as<T>(i, 3), add ? b.as<T>(i, 4) : nullptr,
                                    b.as<float>(i, 5), b.as<float>(i, 6), b.as<float>(i, 7),
                                    b.as<float>(i, 8), b.as<float>(i, 9), b.get(i, 10), scratch,
                                    p.shape, f, relu, s);
        });
      };
      cases.push_back(std::move(bwd));
    }
  }
  return cases;
}

std::vector<KernelCase> pool_cases(const PoolProblem& p) {
  std::vector<KernelCase> cases;
  const int64_t in = p.input.elements();
  const int64_t out = p.output.elements();
  const bool max = p.kind == PoolProblem::Kind::Max;
  for (const DType t : kStorageTypes) {
    for (const DataFormat f : {DataFormat::NHWC, DataFormat::NCHW}) {
      const std::string where = std::string(dtype_label(t)) + "/" + kernels::to_string(f) + "/" +
                                p.model + "/" + p.layer;
      const std::string label = format_shape(p.input) + " -> " + format_shape(p.output) + " x" +
                                std::to_string(p.occurrences);
      const int64_t size = kernels::dtype_size(t);
      // Buffers: x (in), y (out), argmax (out bytes, as I32 words), dy (out), dx (in).
      const std::vector<BufferSpec> buffers = {{in, t, "x"},
                                               {out, t, "y"},
                                               {max ? (out + 3) / 4 : 0, DType::I32, "argmax"},
                                               {out, t, "dy"},
                                               {in, t, "dx"}};
      const PoolProblem problem = p;
      auto forward = [problem, t, f](const BufferSets& b, int64_t i, cudaStream_t s) {
        with_storage_type(t, [&]<typename T>() {
          switch (problem.kind) {
            case PoolProblem::Kind::Max:
              kc::maxpool_forward<T>(b.as<T>(i, 0), b.as<T>(i, 1), b.as<uint8_t>(i, 2),
                                     problem.input, problem.window, f, s);
              break;
            case PoolProblem::Kind::Avg:
              kc::avgpool_forward<T>(b.as<T>(i, 0), b.as<T>(i, 1), problem.input, problem.window,
                                     f, s);
              break;
            case PoolProblem::Kind::AdaptiveAvg:
              kc::adaptive_avgpool_forward<T>(b.as<T>(i, 0), b.as<T>(i, 1), problem.input,
                                              problem.adaptive, f, s);
              break;
          }
        });
      };
      auto backward = [problem, t, f](const BufferSets& b, int64_t i, cudaStream_t s) {
        with_storage_type(t, [&]<typename T>() {
          switch (problem.kind) {
            case PoolProblem::Kind::Max:
              kc::maxpool_backward<T>(b.as<T>(i, 3), b.as<uint8_t>(i, 2), b.as<T>(i, 4),
                                      problem.input, problem.window, f, s);
              break;
            case PoolProblem::Kind::Avg:
              kc::avgpool_backward<T>(b.as<T>(i, 3), b.as<T>(i, 4), problem.input, problem.window,
                                      f, s);
              break;
            case PoolProblem::Kind::AdaptiveAvg:
              kc::adaptive_avgpool_backward<T>(b.as<T>(i, 3), b.as<T>(i, 4), problem.input,
                                               problem.adaptive, f, s);
              break;
          }
        });
      };
      // Forward bytes: x read once (overlapping windows hit the caches), y
      // written, plus one argmax byte per output for max pooling.
      cases.push_back(KernelCase{
          .name = "kernel/cuda/" + std::string(to_string(p.kind)) + "_fwd/" + where,
          .label = label,
          .bytes = static_cast<double>(pool_forward_bytes(in, out, size, max)),
          .buffers = buffers,
          .enqueue = forward});
      // Backward bytes: dy (and argmax) read, dx written. The preparation runs
      // the forward once per set so that max pooling's argmax is real.
      cases.push_back(KernelCase{
          .name = "kernel/cuda/" + std::string(to_string(p.kind)) + "_bwd/" + where,
          .label = label,
          .bytes = static_cast<double>(pool_backward_bytes(in, out, size, max)),
          .buffers = buffers,
          .enqueue = backward,
          .prepare = forward});
    }
  }
  return cases;
}

std::vector<KernelCase> loss_cases(const LossProblem& p) {
  std::vector<KernelCase> cases;
  const int64_t logits = int64_t{p.n} * p.classes;
  const int64_t scratch = kc::softmax_cross_entropy_scratch_bytes(p.n);
  for (const DType t : kStorageTypes) {
    // Bytes: logits read once from memory, dlogits written, labels read and
    // one fp32 per row of scratch: 2·N·classes·size + 8·N.
    KernelCase c{.name = "kernel/cuda/softmax_cross_entropy/" + std::string(dtype_label(t)) + "/" +
                         p.model + "/" + p.layer,
                 .label = "logits [" + std::to_string(p.n) + "," + std::to_string(p.classes) + "]",
                 .bytes = static_cast<double>(
                     softmax_cross_entropy_bytes(p.n, p.classes, kernels::dtype_size(t))),
                 .buffers = {{logits, t, "logits"},
                             {p.n, DType::I32, "labels"},
                             {1, DType::F32, "loss"},
                             {logits, t, "dlogits"},
                             {scratch_floats(scratch), DType::F32, "scratch"}}};
    const int n = p.n;
    const int classes = p.classes;
    c.enqueue = [=](const BufferSets& b, int64_t i, cudaStream_t s) {
      with_storage_type(t, [&]<typename T>() {
        kc::softmax_cross_entropy<T>(b.as<T>(i, 0), b.as<int32_t>(i, 1), b.as<float>(i, 2),
                                     b.as<T>(i, 3), nullptr, b.get(i, 4), scratch, n, classes, s);
      });
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<KernelCase> optimizer_cases(const std::string& model, int64_t params) {
  // Every (gradient, low-precision copy) pair sgd_momentum_update is built for:
  // fp32 runs keep no copy; fp16/bf16 runs write the copy the next forward
  // reads, from fp32 gradients or from gradients reduced in the storage type.
  struct Variant {
    DType grad;
    std::optional<DType> copy;
  };
  const Variant variants[] = {{DType::F32, std::nullopt},
                              {DType::F32, DType::F16},
                              {DType::F32, DType::BF16},
                              {DType::F16, DType::F16},
                              {DType::BF16, DType::BF16}};
  const kernels::OptimizerConfig config{};
  std::vector<KernelCase> cases;
  for (const Variant& v : variants) {
    const int64_t grad_size = kernels::dtype_size(v.grad);
    const int64_t copy_size = v.copy ? kernels::dtype_size(*v.copy) : 0;
    const std::string variant = std::string(dtype_label(v.grad)) + "_grad" +
                                (v.copy ? std::string("_") + dtype_label(*v.copy) + "_copy" : "");
    // Bytes: gradient read, fp32 master and momentum read and written, the
    // low-precision copy written: count·(grad_size + 16 + copy_size).
    KernelCase c{.name = "kernel/cuda/sgd_momentum/" + variant + "/" + model,
                 .label = std::to_string(params) + " parameters",
                 .bytes = static_cast<double>(sgd_momentum_bytes(params, grad_size, copy_size)),
                 .buffers = {{params, v.grad, "gradients"},
                             {params, DType::F32, "master weights"},
                             {params, DType::F32, "momentum"},
                             {v.copy ? params : 0, v.copy.value_or(DType::F32),
                              "low-precision weights"}}};
    const DType grad = v.grad;
    const std::optional<DType> copy = v.copy;
    c.enqueue = [=](const BufferSets& b, int64_t i, cudaStream_t s) {
      auto* master = b.as<float>(i, 1);
      auto* momentum = b.as<float>(i, 2);
      if (!copy) {
        kc::sgd_momentum_update<float, float>(b.as<float>(i, 0), master, momentum, nullptr, params,
                                              config, nullptr, nullptr, s);
      } else if (grad == DType::F32 && *copy == DType::F16) {
        kc::sgd_momentum_update<float, __half>(b.as<float>(i, 0), master, momentum,
                                               b.as<__half>(i, 3), params, config, nullptr,
                                               nullptr, s);
      } else if (grad == DType::F32) {
        kc::sgd_momentum_update<float, __nv_bfloat16>(b.as<float>(i, 0), master, momentum,
                                                      b.as<__nv_bfloat16>(i, 3), params, config,
                                                      nullptr, nullptr, s);
      } else if (grad == DType::F16) {
        kc::sgd_momentum_update<__half, __half>(b.as<__half>(i, 0), master, momentum,
                                                b.as<__half>(i, 3), params, config, nullptr,
                                                nullptr, s);
      } else {
        kc::sgd_momentum_update<__nv_bfloat16, __nv_bfloat16>(
            b.as<__nv_bfloat16>(i, 0), master, momentum, b.as<__nv_bfloat16>(i, 3), params, config,
            nullptr, nullptr, s);
      }
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<KernelCase> cast_cases(const std::string& model, int64_t count) {
  struct Cast {
    const char* name;
    DType src;
    DType dst;
  };
  const Cast casts[] = {{"f32_to_f16", DType::F32, DType::F16},
                        {"f32_to_bf16", DType::F32, DType::BF16},
                        {"f16_to_f32", DType::F16, DType::F32},
                        {"bf16_to_f32", DType::BF16, DType::F32}};
  std::vector<KernelCase> cases;
  for (const Cast& k : casts) {
    // Bytes: count·(sizeof(src) + sizeof(dst)), each element read and written once.
    KernelCase c{.name = "kernel/cuda/cast/" + std::string(k.name) + "/" + model,
                 .label = std::to_string(count) + " elements (the parameter count)",
                 .bytes = static_cast<double>(cast_bytes(count, kernels::dtype_size(k.src),
                                                         kernels::dtype_size(k.dst))),
                 .buffers = {{count, k.src, "cast source"}, {count, k.dst, "cast destination"}}};
    const DType src = k.src;
    const DType dst = k.dst;
    c.enqueue = [=](const BufferSets& b, int64_t i, cudaStream_t s) {
      if (src == DType::F32 && dst == DType::F16) {
        kc::cast<float, __half>(b.as<float>(i, 0), b.as<__half>(i, 1), count, s);
      } else if (src == DType::F32) {
        kc::cast<float, __nv_bfloat16>(b.as<float>(i, 0), b.as<__nv_bfloat16>(i, 1), count, s);
      } else if (src == DType::F16) {
        kc::cast<__half, float>(b.as<__half>(i, 0), b.as<float>(i, 1), count, s);
      } else {
        kc::cast<__nv_bfloat16, float>(b.as<__nv_bfloat16>(i, 0), b.as<float>(i, 1), count, s);
      }
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace

int register_cuda_kernel_benchmarks(const Options& options, FixtureSlot& slot, GpuSession& gpu) {
  std::vector<KernelCase> cases;
  cases.push_back(copy_case());  // first: the others are held against it
  for (const std::string& model : options.models) {
    const models::Graph graph = inferred_model(model, options.gpu_batch, options.image_size);
    for (const BatchNormProblem& p : batchnorm_problems(graph)) {
      for (KernelCase& c : batchnorm_cases(p)) cases.push_back(std::move(c));
    }
    for (const PoolProblem& p : pool_problems(graph)) {
      for (KernelCase& c : pool_cases(p)) cases.push_back(std::move(c));
    }
    if (const auto loss = loss_problem(graph)) {
      for (KernelCase& c : loss_cases(*loss)) cases.push_back(std::move(c));
    }
    const int64_t params = graph.param_count();
    for (KernelCase& c : optimizer_cases(model, params)) cases.push_back(std::move(c));
    for (KernelCase& c : cast_cases(model, params)) cases.push_back(std::move(c));
  }
  for (KernelCase& c : cases) {
    register_case(std::make_shared<const KernelCase>(std::move(c)), options, slot, gpu);
  }
  return static_cast<int>(cases.size());
}

}  // namespace cnnbench::bench::micro
