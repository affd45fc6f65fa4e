#include "bench/run.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "bench/config.h"
#include "bench/flags.h"
#include "bench/text_report.h"
#include "bench/trainer.h"
#include "kernels/backend.h"
#include "kernels/error.h"
#include "models/zoo.h"
#include "mpi/communicator.h"

namespace cnnbench::bench {
namespace {

/// A run-time failure with a complete message for the user (exit 1).
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// --- --list_models ---------------------------------------------------------

struct ModelRow {
  const models::ModelInfo* info;
  int64_t params;
  double gflops;  // forward, per image, at the default size
};

std::vector<ModelRow> model_rows() {
  std::vector<ModelRow> rows;
  for (const auto& info : models::zoo()) {
    models::Graph g = models::build_model(info.name);
    g.infer_shapes(1, info.default_image_size, info.default_image_size);
    rows.push_back({&info, g.param_count(), g.flops_per_image() / 1e9});
  }
  return rows;
}

void print_model_list(ListFormat format, std::ostream& out) {
  const auto rows = model_rows();
  if (format == ListFormat::Json) {
    nlohmann::json models = nlohmann::json::array();
    for (const auto& r : rows) {
      models.push_back({{"name", r.info->name},
                        {"parameters", r.params},
                        {"gflops_per_image", r.gflops},
                        {"default_image_size", r.info->default_image_size},
                        {"num_classes", 1000},
                        {"source", r.info->source}});
    }
    out << nlohmann::json{{"models", models}}.dump(2) << '\n';
    return;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-14s %12s %14s %12s  %s\n", "model", "parameters",
                "GFLOPs/image", "image size", "definition");
  out << buf;
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, "%-14s %12lld %14.2f %9d px  %s\n", r.info->name.c_str(),
                  static_cast<long long>(r.params), r.gflops, r.info->default_image_size,
                  r.info->source.c_str());
    out << buf;
  }
  out << "(parameters and GFLOPs at 1000 classes and the default image size; forward "
         "GFLOPs, multiply-add = 2 FLOPs)\n";
}

// --- device choice ------------------------------------------------------------

/// The device kind a run trains on, why, and its backend.
struct DeviceSelection {
  std::string kind;    // "cpu" or "gpu"
  std::string reason;  // for the header's "Device:" line
  std::unique_ptr<kernels::Backend> backend;
};

/// --device: never falls back from an explicit gpu to the CPU; auto takes the GPUs
/// when this binary can drive them.
DeviceSelection select_device(DeviceChoice choice) {
  DeviceSelection s;
  if (choice != DeviceChoice::Cpu) {
    try {
      s.backend = kernels::make_cuda_backend();
      s.kind = "gpu";
      s.reason = choice == DeviceChoice::Gpu ? "--device=gpu" : "--device=auto: CUDA backend built in";
      return s;
    } catch (const kernels::BackendUnavailable& e) {
      if (choice == DeviceChoice::Gpu) {
        throw RunError(std::string("--device=gpu: no usable GPU: ") + e.what());
      }
      s.reason = "--device=auto: this binary has no CUDA backend";
    }
  } else {
    s.reason = "--device=cpu";
  }
  s.kind = "cpu";
  s.backend = kernels::make_cpu_backend();
  return s;
}

/// The CPU's model name from /proc/cpuinfo ("model name" on x86; Arm kernels do
/// not report one), for the header's "Devices:" line.
std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("model name")) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "CPU";
}

std::string precision_text(kernels::Precision p) {
  switch (p) {
    case kernels::Precision::Fp32: return "fp32";
    case kernels::Precision::Tf32: return "tf32 (fp32 storage, TF32 tensor-core math)";
    case kernels::Precision::Fp16: return "fp16 (dynamic loss scaling, fp32 master weights)";
    case kernels::Precision::Bf16: return "bf16 (fp32 master weights)";
  }
  return kernels::to_string(p);
}

std::string mib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

/// The Memory line's continuation under --verbose: the executable's bytes by purpose.
std::string memory_detail(const kernels::MemoryReport& m) {
  return "             parameters " + mib(m.parameters) + ", gradients " + mib(m.gradients) +
         ", activations " + mib(m.activations) + ", workspace " + mib(m.workspace) + ", data " +
         mib(m.data);
}

// --- the run --------------------------------------------------------------------

/// The whole program after flag parsing succeeded. Throws UsageError (exit 2) and
/// anything else (exit 1).
int run_benchmark(const Config& config, std::ostream& out, const std::atomic<bool>* stop,
                  double program_start_s) {
  std::unique_ptr<mpi::Communicator> comm = mpi::make_single_worker();
  DeviceSelection device = select_device(config.device);
  const bool gpu = device.kind == "gpu";

  // Defaults that depend on the device: tf_cnn_benchmarks' on the GPU, smaller on
  // the CPU so that a default CPU run ends in minutes.
  const int batch = config.batch_size > 0 ? config.batch_size : (gpu ? 64 : 16);
  const int num_batches = config.num_batches.value_or(gpu ? 100 : 20);
  const int num_warmup = config.num_warmup_batches.value_or(gpu ? 10 : 2);
  const kernels::Precision precision =
      config.precision.value_or(gpu ? kernels::Precision::Fp16 : kernels::Precision::Fp32);
  const kernels::DataFormat data_format = config.data_format.value_or(kernels::DataFormat::NHWC);
  const int image_size =
      config.image_size.value_or(models::model_info(config.model).default_image_size);

  models::Graph graph = models::build_model(config.model, config.num_classes);
  graph.infer_shapes(batch, image_size, image_size);

  kernels::CompileOptions options;
  options.batch = batch;
  options.image_h = options.image_w = image_size;
  options.precision = precision;
  options.format = data_format;
  options.optimizer = config.optimizer;
  options.seed = config.seed;
  options.training = !config.forward_only;
  options.device = gpu ? comm->local_rank() : 0;
  options.num_threads = config.num_threads;
  options.cuda_graph = config.cuda_graph;
  options.cudnn_autotune = config.cudnn_autotune;

  std::unique_ptr<kernels::Executable> executable;
  try {
    executable = device.backend->compile(graph, options);
  } catch (const kernels::OutOfMemoryError& e) {
    throw RunError("out of memory allocating " + e.allocation() + " (" + mib(e.bytes()) + ", " +
                   std::to_string(e.bytes()) + " bytes) at --batch_size=" + std::to_string(batch) +
                   " per device: " + e.what() + "; try a smaller --batch_size, e.g. " +
                   std::to_string(std::max(1, batch / 2)));
  } catch (const std::invalid_argument& e) {
    // The backend rejects an option it does not support (e.g. fp16 on the CPU);
    // its message names the option, the value and what is valid.
    throw UsageError(e.what());
  }

  RunInfo info;
  info.model = config.model;
  info.image_size = image_size;
  info.num_classes = config.num_classes;
  info.mode = config.forward_only ? "forward-only" : "training";
  info.per_device_batch = batch;
  info.world_size = comm->world_size();
  info.global_batch = batch * info.world_size;
  info.num_batches = config.duration_s ? 0 : num_batches;
  info.duration_s = config.duration_s.value_or(0);
  info.num_warmup_batches = num_warmup;
  info.display_every = config.display_every;
  info.device_kind = device.kind;
  info.device_reason = device.reason;
  // Device discovery (names, UUIDs, PCI bus IDs) fills these on the GPU.
  const std::string local_device =
      gpu ? "CUDA device " + std::to_string(options.device) : cpu_model_name();
  for (const auto& name : comm->all_gather(local_device)) {
    DeviceEntry entry;
    entry.ordinal = gpu ? options.device : -1;
    entry.name = name;
    info.devices.push_back(entry);
  }
  info.data_format = kernels::to_string(data_format);
  info.precision = precision_text(precision);
  info.optimizer = "momentum";
  info.learning_rate = config.optimizer.learning_rate;
  info.momentum = config.optimizer.momentum;
  info.weight_decay = config.optimizer.weight_decay;
  info.variables = info.world_size == 1 ? "local (one worker)"
                                        : "replicated, all-reduce: " + comm->name();
  info.param_count = graph.param_count();
  info.gflops_per_image = graph.flops_per_image() / 1e9;
  info.backend = executable->description();
  info.device_memory_bytes = executable->memory().total();
  info.seed = config.seed;

  // Only rank 0 reports. EMF lines and the result JSON join here as reporters.
  MultiReporter reporters;
  if (comm->rank() == 0) {
    const LogFormat log_format = config.log_format.value_or(LogFormat::Text);
    if (log_format == LogFormat::Text || log_format == LogFormat::Both) {
      auto text = std::make_unique<TextReporter>(out);
      if (config.verbose) text->add_header_lines({memory_detail(executable->memory())});
      reporters.add(std::move(text));
    }
  }

  TrainerSettings settings;
  settings.num_batches = num_batches;
  settings.duration_s = info.duration_s;
  settings.num_warmup_batches = num_warmup;
  settings.display_every = config.display_every;
  settings.forward_only = config.forward_only;
  settings.seed = config.seed;
  settings.global_batch = info.global_batch;
  settings.program_start_s = program_start_s;
  Trainer trainer(*executable, *comm, reporters, settings);
  trainer.use_stop_flag(stop);

  reporters.header(info);
  RunSummary summary;
  try {
    summary = trainer.run(info);
  } catch (const kernels::OutOfMemoryError& e) {
    throw RunError("out of memory during training allocating " + e.allocation() + " (" +
                   mib(e.bytes()) + ") at --batch_size=" + std::to_string(batch) +
                   " per device: " + e.what() + "; try a smaller --batch_size");
  }
  reporters.summary(info, summary);
  return summary.interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
        const std::atomic<bool>* stop) {
  const double program_start_s = SteadyClock().now_s();
  try {
    const FlagsResult flags = parse_flags(argc, argv);
    if (flags.action != FlagsAction::Run) {
      out << flags.text;
      out.flush();
      return kExitOk;
    }
    if (flags.config.list_models) {
      print_model_list(flags.config.list_format, out);
      out.flush();
      return kExitOk;
    }
    return run_benchmark(flags.config, out, stop, program_start_s);
  } catch (const UsageError& e) {
    out.flush();
    err << "cnnbench: error: " << e.what() << "\nsee cnnbench --help\n";
    err.flush();
    return kExitUsage;
  } catch (const std::exception& e) {
    out.flush();
    err << "cnnbench: error: " << e.what() << '\n';
    err.flush();
    return kExitFailure;
  }
}

}  // namespace cnnbench::bench
