#include "bench/worker.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "bench/emf.h"
#include "bench/flags.h"
#include "bench/gpu_telemetry_emf.h"
#include "bench/hosts.h"
#include "bench/rank_figures.h"
#include "bench/result_json.h"
#include "bench/run.h"
#include "bench/run_error.h"
#include "bench/text_report.h"
#include "bench/trainer.h"
#include "kernels/error.h"
#include "models/zoo.h"
#include "mpi/gradient_buckets.h"

namespace cnnbench::bench {
namespace {

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

std::string mib_number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

/// The Memory line's continuation under --verbose: the executable's bytes by purpose.
std::string memory_detail(const kernels::MemoryReport& m) {
  return "             parameters " + mib(m.parameters) + ", gradients " + mib(m.gradients) +
         ", activations " + mib(m.activations) + ", workspace " + mib(m.workspace) + ", data " +
         mib(m.data);
}

DeviceEntry device_from_json(const nlohmann::json& j) {
  DeviceEntry d;
  d.ordinal = j.at("ordinal").get<int>();
  d.name = j.at("name").get<std::string>();
  d.uuid = j.at("uuid").get<std::string>();
  d.pci_bus_id = j.at("pci_bus_id").get<std::string>();
  d.host_id = j.at("host_id").get<std::string>();
  d.memory_bytes = j.at("memory_bytes").get<int64_t>();
  return d;
}

/// Every rank's device, in rank order (a collective).
std::vector<DeviceEntry> gather_devices(mpi::Communicator& comm, const DeviceEntry& mine) {
  std::vector<DeviceEntry> all;
  for (const auto& text : comm.all_gather(device_json(mine).dump())) {
    all.push_back(device_from_json(nlohmann::json::parse(text)));
  }
  return all;
}

std::unique_ptr<kernels::Executable> compile(kernels::Backend& backend, const models::Graph& graph,
                                             const kernels::CompileOptions& options) {
  try {
    return backend.compile(graph, options);
  } catch (const kernels::OutOfMemoryError& e) {
    throw RunError("out of memory allocating " + e.allocation() + " (" + mib(e.bytes()) + ", " +
                   std::to_string(e.bytes()) + " bytes) at --batch_size=" + std::to_string(options.batch) +
                   " per device: " + e.what() + "; try a smaller --batch_size, e.g. " +
                   std::to_string(std::max(1, options.batch / 2)));
  } catch (const std::invalid_argument& e) {
    // The backend rejects an option it does not support (e.g. fp16 on the CPU);
    // its message names the option, the value and what is valid.
    throw UsageError(e.what());
  }
}

/// The header lines after the standard block: environment, launcher (with the
/// nodes and the network: `launch_lines`), GPU list.
std::vector<std::string> header_lines(const BenchmarkPlan& plan, const RunInfo& info,
                                      const kernels::Executable& executable,
                                      const std::vector<std::string>& launch_lines) {
  std::vector<std::string> lines = format_environment(plan.environment);
  if (plan.launch.launched()) {
    lines.push_back(header_line("Launch", std::string(mpi::to_string(plan.launch.launcher)) + ", " +
                                              std::to_string(info.world_size) + " rank" +
                                              (info.world_size == 1 ? "" : "s") + " (" +
                                              plan.launch.evidence + ")"));
    lines.insert(lines.end(), launch_lines.begin(), launch_lines.end());
  }
  if (info.device_kind == "gpu") {
    lines.push_back(header_line("GPU list", plan.device_source));
    std::string table = format_device_table(info.devices);
    for (size_t start = 0; start < table.size();) {
      const size_t end = table.find('\n', start);
      lines.push_back("  " + table.substr(start, end - start));
      start = end == std::string::npos ? table.size() : end + 1;
    }
  }
  lines.insert(lines.end(), plan.notes.begin(), plan.notes.end());
  if (plan.config.verbose) lines.push_back(memory_detail(executable.memory()));
  return lines;
}

/// Rank 0's reporters, with typed access to those that need more than the
/// Reporter interface before the summary.
struct RankZeroReports {
  MultiReporter all;
  TextReporter* text = nullptr;
  ResultJsonReporter* json = nullptr;
  GpuTelemetryEmfReporter* gpu_emf = nullptr;
};

void add_reporters(RankZeroReports& r, const BenchmarkPlan& plan, const RunInfo& info,
                   const kernels::Executable& executable, const WorkerOutput& output,
                   const std::vector<std::string>& launch_lines) {
  const Config& c = plan.config;
  if (plan.log_format == LogFormat::Text || plan.log_format == LogFormat::Both) {
    auto text = std::make_unique<TextReporter>(*output.out);
    text->add_header_lines(header_lines(plan, info, executable, launch_lines));
    r.text = text.get();
    r.all.add(std::move(text));
  }
  if (plan.log_format == LogFormat::Emf || plan.log_format == LogFormat::Both) {
    EmfOptions emf;
    emf.metrics_namespace = c.metrics_namespace;
    emf.context = {{"Host", plan.environment.host_name}};
    r.all.add(std::make_unique<EmfReporter>(*output.out, emf));
    if (output.telemetry != nullptr && output.telemetry->sampler() != nullptr) {
      auto gpu = std::make_unique<GpuTelemetryEmfReporter>(*output.out, emf, *output.telemetry->sampler());
      r.gpu_emf = gpu.get();
      r.all.add(std::move(gpu));
    }
  }
  if (!c.result_json.empty()) {
    ResultJsonOptions o;
    o.path = c.result_json;
    o.config = c;
    o.environment = plan.environment;
    o.device_source = plan.device_source;
    auto json = std::make_unique<ResultJsonReporter>(std::move(o));
    r.json = json.get();
    r.all.add(std::move(json));
  }
}

}  // namespace

BenchmarkPlan make_plan(const Config& config, const DeviceSelection& selection,
                        const Environment& environment, const mpi::LaunchInfo& launch,
                        double program_start_s) {
  const bool gpu = selection.kind == "gpu";
  BenchmarkPlan p;
  p.config = config;
  p.device_kind = selection.kind;
  p.device_reason = selection.reason;
  p.device_source = gpu ? selection.discovery.source : "";
  // tf_cnn_benchmarks' defaults on the GPU; smaller on the CPU so that a default
  // CPU run ends in minutes.
  p.batch = config.batch_size > 0 ? config.batch_size : (gpu ? 64 : 16);
  p.num_batches = config.num_batches.value_or(gpu ? 100 : 20);
  p.num_warmup_batches = config.num_warmup_batches.value_or(gpu ? 10 : 2);
  p.precision = config.precision.value_or(gpu ? kernels::Precision::Fp16 : kernels::Precision::Fp32);
  p.data_format = config.data_format.value_or(kernels::DataFormat::NHWC);
  p.image_size = config.image_size.value_or(models::model_info(config.model).default_image_size);
  p.cuda_graph = config.cuda_graph;
  p.log_format = config.log_format.value_or(environment.in_ecs ? LogFormat::Both : LogFormat::Text);
  p.environment = environment;
  p.launch = launch;
  p.program_start_s = program_start_s;
  return p;
}

WorkerResult run_worker(const BenchmarkPlan& plan, kernels::Backend& backend, mpi::Communicator& comm,
                        const DeviceEntry& device, const std::atomic<bool>* stop, const WorkerOutput& output) {
  const Config& c = plan.config;
  const bool rank0 = comm.rank() == 0;
  models::Graph graph = models::build_model(c.model, c.num_classes);
  graph.infer_shapes(plan.batch, plan.image_size, plan.image_size);

  kernels::CompileOptions options;
  options.batch = plan.batch;
  options.image_h = options.image_w = plan.image_size;
  options.precision = plan.precision;
  options.format = plan.data_format;
  options.optimizer = c.optimizer;
  options.seed = c.seed;
  options.training = !c.forward_only;
  options.device = std::max(device.ordinal, 0);
  options.num_threads = c.num_threads;
  options.cuda_graph = plan.cuda_graph;
  options.cudnn_autotune = c.cudnn_autotune;
  const std::unique_ptr<kernels::Executable> executable = compile(backend, graph, options);

  WorkerResult result;
  RunInfo& info = result.info;
  info.model = c.model;
  info.image_size = plan.image_size;
  info.num_classes = c.num_classes;
  info.mode = c.forward_only ? "forward-only" : "training";
  info.per_device_batch = plan.batch;
  info.world_size = comm.world_size();
  info.global_batch = plan.batch * info.world_size;
  info.num_batches = c.duration_s ? 0 : plan.num_batches;
  info.duration_s = c.duration_s.value_or(0);
  info.num_warmup_batches = plan.num_warmup_batches;
  info.display_every = c.display_every;
  info.device_kind = plan.device_kind;
  info.device_reason = plan.device_reason;
  info.devices = gather_devices(comm, device);
  info.data_format = kernels::to_string(plan.data_format);
  info.precision = precision_text(plan.precision);
  info.optimizer = "momentum";
  info.learning_rate = c.optimizer.learning_rate;
  info.momentum = c.optimizer.momentum;
  info.weight_decay = c.optimizer.weight_decay;
  mpi::BucketSizes sizes;
  sizes.bucket_mib = c.allreduce_bucket_mb;
  sizes.first_bucket_mib = std::min(1.0, c.allreduce_bucket_mb);
  info.variables = info.world_size == 1 ? "local (one worker)"
                   : c.forward_only     ? "replicated, no all-reduce (forward-only)"
                                        : "replicated, all-reduce: " + comm.name() + " in buckets of " +
                                              mib_number(sizes.bucket_mib) + " MiB (the first " +
                                              mib_number(sizes.first_bucket_mib) + " MiB)";
  info.param_count = graph.param_count();
  info.gflops_per_image = graph.flops_per_image() / 1e9;
  info.backend = executable->description();
  info.device_memory_bytes = executable->memory().total();
  info.seed = c.seed;

  // Under a launcher: the nodes (every rank's host, a collective) and the network
  // between them, as NCCL reported it once started.
  std::vector<std::string> launch_lines;
  if (plan.launch.launched()) {
    const std::vector<std::string> hosts = comm.all_gather(plan.environment.host_name);
    if (rank0) {
      launch_lines.push_back(nodes_header_line(group_by_host(hosts)));
      // getenv only: nothing sets variables once the run has started.
      if (info.world_size > 1) {
        launch_lines.push_back(network_header_line(
            comm.name(), plan.nccl_log != nullptr ? plan.nccl_log->network() : std::nullopt,
            plan.nccl_log != nullptr ? plan.nccl_log->unreadable_reason() : std::string(), process_env));
      }
    }
  }

  RankZeroReports reports;
  if (rank0) add_reporters(reports, plan, info, *executable, output, launch_lines);

  // Gradients are averaged bucket by bucket as backward finishes them.
  std::optional<mpi::GradientBuckets> buckets;
  if (!c.forward_only && info.world_size > 1) {
    buckets.emplace(comm, executable->gradients(), executable->compute_stream(), sizes);
  }

  TrainerSettings settings;
  settings.num_batches = plan.num_batches;
  settings.duration_s = info.duration_s;
  settings.num_warmup_batches = plan.num_warmup_batches;
  settings.display_every = c.display_every;
  settings.forward_only = c.forward_only;
  settings.seed = c.seed;
  settings.global_batch = info.global_batch;
  settings.program_start_s = plan.program_start_s;
  Trainer trainer(*executable, comm, reports.all, settings);
  trainer.use_stop_flag(stop);
  if (buckets) {
    trainer.use_grad_ready(buckets->hook());
    // The compute stream, not the buckets' own: a step replayed from a CUDA graph
    // runs its all-reduces inside the graph on the compute stream, and the
    // optimizer there waits for them in either case.
    if (void* compute = executable->compute_stream(); compute != nullptr) {
      trainer.use_after_enqueue([&comm, compute] { comm.wait(compute, kCollectiveTimeout); });
    }
  }
  if (rank0 && output.telemetry != nullptr && output.telemetry->sampler() != nullptr) {
    telemetry::Sampler* sampler = output.telemetry->sampler();
    trainer.use_timed_loop_hooks([sampler] { sampler->start(); }, [sampler] { sampler->stop(); });
  }

  reports.all.header(info);
  try {
    result.summary = trainer.run(info);
  } catch (const kernels::OutOfMemoryError& e) {
    throw RunError("out of memory during training allocating " + e.allocation() + " (" + mib(e.bytes()) +
                   ") at --batch_size=" + std::to_string(plan.batch) + " per device: " + e.what() +
                   "; try a smaller --batch_size");
  }
  const RunSummary& summary = result.summary;

  const RankFigures mine = own_figures(comm.rank(), plan.environment.host_name, device, plan.batch, summary);
  const std::vector<RankFigures> ranks = gather_rank_figures(comm, mine);
  if (!rank0) {
    if (c.verbose && output.out != nullptr) {
      char line[256];
      std::snprintf(line, sizeof line, "rank %d of %d (%s, %s): %d timed steps, %.2f images/sec\n",
                    comm.rank(), info.world_size, mine.host.c_str(), mine.devices.front().c_str(),
                    mine.steps, mine.images_per_sec);
      *output.out << line << std::flush;
    }
    return result;
  }

  std::vector<std::string> lines;
  if (c.baseline_images_per_sec) {
    const int devices = static_cast<int>(info.devices.size());
    lines.push_back(efficiency_line(summary.total_images_per_sec, devices, *c.baseline_images_per_sec));
    if (reports.json != nullptr) {
      reports.json->set_scaling(nlohmann::ordered_json{
          {"baseline_images_per_sec", *c.baseline_images_per_sec},
          {"devices", devices},
          {"efficiency", scaling_efficiency(summary.total_images_per_sec, devices, *c.baseline_images_per_sec)}});
    }
  }
  const std::vector<std::string> table = rank_table_lines(ranks);
  lines.insert(lines.end(), table.begin(), table.end());
  telemetry::TelemetryReport telemetry_report =
      output.telemetry != nullptr ? output.telemetry->report()
                                  : telemetry::unavailable_report("GPU telemetry off");
  if (output.telemetry != nullptr) {
    const std::vector<std::string> t = output.telemetry->text_lines();
    lines.insert(lines.end(), t.begin(), t.end());
  }
  if (reports.text != nullptr) reports.text->set_summary_lines(std::move(lines));
  if (reports.gpu_emf != nullptr) reports.gpu_emf->set_report(telemetry_report);
  if (reports.json != nullptr) {
    reports.json->set_rank_figures(ranks);
    reports.json->set_telemetry(std::move(telemetry_report));
    if (output.scaling_sweep_json) reports.json->set_scaling_sweep(output.scaling_sweep_json(info, summary));
  }
  reports.all.summary(info, summary);
  if (reports.json != nullptr) result.result_json_error = reports.json->error();
  return result;
}

int exit_status(const WorkerResult& result, std::ostream& err) {
  if (!result.result_json_error.empty()) {
    err << "cnnbench: error: " << result.result_json_error << '\n';
    err.flush();
    return kExitFailure;
  }
  return result.summary.interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace cnnbench::bench
