#include "bench/run/worker.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "bench/report/emf_report.h"
#include "bench/report/hosts.h"
#include "bench/report/rank_figures.h"
#include "bench/report/reporter.h"
#include "bench/report/result_json.h"
#include "bench/report/text_report.h"
#include "bench/run/gather.h"
#include "bench/run/nccl_network.h"
#include "bench/run/replica_check.h"
#include "bench/run/trainer.h"
#include "bench/run/verify.h"
#include "bench/status.h"
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

/// --verify on every worker, gathered: every worker gets every worker's lines.
struct GatheredVerify {
  bool passed_everywhere = true;
  std::vector<std::string> lines;
};

GatheredVerify run_verify(const RunPlan& plan, kernels::Backend& backend,
                          mpi::Communicator& comm, const DeviceEntry& device) {
  if (device.ordinal < 0) {
    throw RunError("--verify checks a GPU's training step against the CPU backend, and this run "
                   "trains on the CPU (" + plan.site.devices.reason +
                   "); drop --verify or run on GPUs");
  }
  std::unique_ptr<kernels::Backend> cpu;
  try {
    cpu = kernels::make_cpu_backend();
  } catch (const kernels::BackendUnavailable&) {
    // verify_against_cpu says what is missing.
  }
  // The unshaped model: verify compiles it for its own small batch.
  const models::Graph graph = models::build_model(plan.model, plan.num_classes);
  VerifyOutcome mine;
  try {
    mine = verify_against_cpu(backend, cpu.get(), graph, plan.precision, plan.data_format,
                              device.ordinal, plan.image_size, plan.seed);
  } catch (const kernels::BackendUnavailable& e) {
    throw RunError(e.what());
  }
  nlohmann::json j = {{"passed", mine.passed()},
                      {"lines", mine.lines("GPU " + std::to_string(device.ordinal) + " " + device.name)}};
  GatheredVerify all;
  for (const std::string& text : comm.all_gather(j.dump())) {
    const nlohmann::json w = nlohmann::json::parse(text);
    all.passed_everywhere = all.passed_everywhere && w.at("passed").get<bool>();
    for (const auto& l : w.at("lines")) all.lines.push_back(l.get<std::string>());
  }
  return all;
}

/// The Memory line's continuation under --verbose: the executable's bytes by purpose.
std::string memory_detail(const kernels::MemoryReport& m) {
  return "             parameters " + mib(m.parameters) + ", gradients " + mib(m.gradients) +
         ", activations " + mib(m.activations) + ", workspace " + mib(m.workspace) + ", data " +
         mib(m.data);
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
std::vector<std::string> header_lines(const RunPlan& plan, const RunInfo& info,
                                      const kernels::Executable& executable,
                                      const std::vector<std::string>& launch_lines) {
  std::vector<std::string> lines = format_environment(plan.site.environment);
  if (plan.site.launch.launched()) {
    lines.push_back(header_line("Launch", std::string(mpi::to_string(plan.site.launch.launcher)) + ", " +
                                              std::to_string(info.world_size) + " rank" +
                                              (info.world_size == 1 ? "" : "s") + " (" +
                                              plan.site.launch.evidence + ")"));
    lines.insert(lines.end(), launch_lines.begin(), launch_lines.end());
  }
  if (info.device_kind == "gpu") {
    lines.push_back(header_line("GPU list", plan.site.devices.discovery.source));
    std::string table = format_device_table(info.devices);
    for (size_t start = 0; start < table.size();) {
      const size_t end = table.find('\n', start);
      lines.push_back("  " + table.substr(start, end - start));
      start = end == std::string::npos ? table.size() : end + 1;
    }
  }
  lines.insert(lines.end(), plan.notes.begin(), plan.notes.end());
  if (plan.verbose) lines.push_back(memory_detail(executable.memory()));
  return lines;
}

/// Rank 0's reporters, as --log_format and --result_json ask.
void add_reporters(MultiReporter& reports, const RunPlan& plan, const RunInfo& info,
                   const kernels::Executable& executable, const WorkerOutput& output,
                   const std::vector<std::string>& launch_lines) {
  if (plan.log_format == LogFormat::Text || plan.log_format == LogFormat::Both) {
    auto text = std::make_unique<TextReporter>(*output.out);
    text->add_header_lines(header_lines(plan, info, executable, launch_lines));
    reports.add(std::move(text));
  }
  if (plan.log_format == LogFormat::Emf || plan.log_format == LogFormat::Both) {
    EmfOptions emf;
    emf.metrics_namespace = plan.metrics_namespace;
    emf.context = {{"Host", plan.site.environment.host_name}};
    if (output.telemetry != nullptr && output.telemetry->sampler() != nullptr) {
      const telemetry::Sampler* sampler = output.telemetry->sampler();
      emf.gpu_readings = [sampler] { return sampler->latest(); };
    }
    reports.add(std::make_unique<EmfReporter>(*output.out, std::move(emf)));
  }
  if (!plan.result_json.empty()) {
    ResultJsonOptions o;
    o.path = plan.result_json;
    o.config = plan.config_echo;
    o.config_defaults = plan.config_defaults;
    o.environment = plan.site.environment;
    o.device_source = plan.gpu() ? plan.site.devices.discovery.source : "";
    reports.add(std::make_unique<ResultJsonReporter>(std::move(o)));
  }
}

}  // namespace

WorkerResult run_worker(const RunPlan& plan, kernels::Backend& backend, mpi::Communicator& comm,
                        const DeviceEntry& device, const std::atomic<bool>* stop, const WorkerOutput& output) {
  const bool rank0 = comm.rank() == 0;
  std::vector<std::string> verify_lines;
  const models::Graph& graph = plan.graph;  // shapes inferred for plan.batch by resolve()

  if (plan.verify) {
    const GatheredVerify v = run_verify(plan, backend, comm, device);
    if (!v.passed_everywhere) {
      WorkerResult failed;
      failed.verify_failed = true;
      if (rank0) {
        failed.error_lines = v.lines;
        failed.error_lines.push_back(
            "--verify: a GPU's training step disagrees with the CPU backend beyond the "
            "tolerance, so its results cannot be trusted (a driver, cuDNN or hardware fault); "
            "nothing was trained");
      }
      return failed;
    }
    verify_lines = v.lines;
  }

  kernels::CompileOptions options;
  options.batch = plan.batch;
  options.image_h = options.image_w = plan.image_size;
  options.precision = plan.precision;
  options.format = plan.data_format;
  options.optimizer = plan.optimizer;
  options.seed = plan.seed;
  options.training = !plan.forward_only;
  options.device = std::max(device.ordinal, 0);
  options.num_threads = plan.num_threads;
  options.cuda_graph = plan.cuda_graph;
  options.cudnn_autotune = plan.cudnn_autotune;
  options.cudnn_runtime_compiled_engines = plan.cudnn_runtime_compiled_engines;
  options.plan_cache_path = plan.plan_cache;
  const std::unique_ptr<kernels::Executable> executable = compile(backend, graph, options);

  WorkerResult result;
  RunInfo& info = result.info;
  info.model = plan.model;
  info.image_size = plan.image_size;
  info.num_classes = plan.num_classes;
  info.mode = plan.forward_only ? "forward-only" : "training";
  info.per_device_batch = plan.batch;
  info.world_size = comm.world_size();
  info.global_batch = plan.batch * info.world_size;
  info.num_batches = plan.duration_s > 0 ? 0 : plan.num_batches;
  info.duration_s = plan.duration_s;
  info.num_warmup_batches = plan.num_warmup_batches;
  info.display_every = plan.display_every;
  info.device_kind = plan.site.devices.kind;
  info.device_reason = plan.site.devices.reason;
  info.devices = gather_devices(comm, device);
  info.data_format = kernels::to_string(plan.data_format);
  info.precision = precision_text(plan.precision);
  info.optimizer = "momentum";
  info.learning_rate = plan.optimizer.learning_rate;
  info.momentum = plan.optimizer.momentum;
  info.weight_decay = plan.optimizer.weight_decay;
  mpi::BucketSizes sizes;
  sizes.bucket_mib = plan.allreduce_bucket_mb;
  sizes.first_bucket_mib = std::min(1.0, plan.allreduce_bucket_mb);
  info.variables = info.world_size == 1 ? "local (one worker)"
                   : plan.forward_only  ? "replicated, no all-reduce (forward-only)"
                                        : "replicated, all-reduce: " + comm.name() + " in buckets of " +
                                              mib_number(sizes.bucket_mib) + " MiB (the first " +
                                              mib_number(sizes.first_bucket_mib) + " MiB)";
  info.param_count = graph.param_count();
  info.gflops_per_image = graph.flops_per_image() / 1e9;
  info.backend = executable->description();
  info.setup = executable->setup_report();
  info.verify_lines = verify_lines;
  info.device_memory_bytes = executable->memory().total();
  info.seed = plan.seed;

  // Under a launcher: the nodes (every rank's host, a collective) and the network
  // between them, as NCCL reported it once started.
  std::vector<std::string> launch_lines;
  if (plan.site.launch.launched()) {
    const std::vector<std::string> hosts = comm.all_gather(plan.site.environment.host_name);
    if (rank0) {
      launch_lines.push_back(nodes_header_line(group_by_host(hosts)));
      if (info.world_size > 1) {
        launch_lines.push_back(network_header_line(
            comm.name(), plan.nccl_log != nullptr ? plan.nccl_log->network() : std::nullopt,
            plan.nccl_log != nullptr ? plan.nccl_log->unreadable_reason() : std::string(),
            plan.site.env));
      }
    }
  }

  MultiReporter reports;
  if (rank0) add_reporters(reports, plan, info, *executable, output, launch_lines);

  // Gradients are averaged bucket by bucket as backward finishes them.
  std::optional<mpi::GradientBuckets> buckets;
  if (!plan.forward_only && info.world_size > 1) {
    buckets.emplace(comm, executable->gradients(), executable->compute_stream(), sizes);
  }

  TrainerSettings settings;
  settings.num_batches = plan.num_batches;
  settings.duration_s = info.duration_s;
  settings.num_warmup_batches = plan.num_warmup_batches;
  settings.display_every = plan.display_every;
  settings.forward_only = plan.forward_only;
  settings.seed = plan.seed;
  settings.global_batch = info.global_batch;
  settings.program_start_s = plan.program_start_s;
  Trainer trainer(*executable, comm, reports, settings);
  trainer.use_stop_flag(stop);

  // The replica check: every --check_every steps and after the timed loop.
  std::optional<FlipBit> fault;
  try {
    fault = parse_fault_flip_bit(plan.site.environment.fault_flip_bit);
  } catch (const std::invalid_argument& e) {
    throw RunError(e.what());
  }
  ReplicaReport replicas;
  const ReplicaIdentity me{.rank = comm.rank(),
                           .host = plan.site.environment.host_name,
                           .ordinal = device.ordinal,
                           .uuid = device.uuid};
  const std::string replica_word = device.ordinal >= 0 ? "GPU" : "CPU rank";
  const auto check = [&](int step) {
    if (fault) {
      apply_fault_flip_bit(*fault, comm.rank(), *executable);
      fault.reset();  // one flip: a second would restore the bit
    }
    const ReplicaCheck rc = check_replicas(comm, *executable, graph, me, step);
    ++replicas.checks;
    replicas.replicas = rc.replicas;
    replicas.after_step = rc.after_step;
    replicas.identical = rc.identical();
    replicas.hash = hex64(rc.hash);
    replicas.lines = rc.lines(replica_word);
    replicas.seconds += rc.seconds;
    return rc.identical();
  };
  if (!plan.forward_only && plan.check_every > 0) trainer.use_periodic_check(plan.check_every, check);
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

  reports.header(info);
  try {
    result.summary = trainer.run(info);
  } catch (const kernels::OutOfMemoryError& e) {
    throw RunError("out of memory during training allocating " + e.allocation() + " (" + mib(e.bytes()) +
                   ") at --batch_size=" + std::to_string(plan.batch) + " per device: " + e.what() +
                   "; try a smaller --batch_size");
  }
  if (!plan.forward_only && result.summary.steps > 0) {
    // After the timed loop (untimed); a failed periodic check already ended it.
    if (replicas.identical && (replicas.checks == 0 || replicas.after_step != result.summary.steps)) {
      check(result.summary.steps);
    }
    result.summary.replicas = replicas;
  }
  const RunSummary& summary = result.summary;
  info.setup = executable->setup_report();  // capture happened during warm-up

  const RankFigures mine = own_figures(comm.rank(), plan.site.environment.host_name, device, plan.batch, summary);
  const std::vector<RankFigures> ranks = gather_rank_figures(comm, mine);
  if (!rank0) {
    if (plan.verbose && output.out != nullptr) {
      char line[256];
      std::snprintf(line, sizeof line, "rank %d of %d (%s, %s): %d timed steps, %.2f images/sec\n",
                    comm.rank(), info.world_size, mine.host.c_str(), mine.devices.front().c_str(),
                    mine.steps, mine.images_per_sec);
      *output.out << line << std::flush;
    }
    return result;
  }

  RunResult run;
  run.info = info;
  run.summary = summary;
  run.ranks = ranks;
  if (output.telemetry != nullptr) {
    run.telemetry = output.telemetry->report();
    run.telemetry_notes = output.telemetry->notes();
  }
  run.baseline_images_per_sec = plan.baseline_images_per_sec;
  if (output.sweep_before) {
    run.sweep = *output.sweep_before;
    run.sweep.push_back({static_cast<int>(info.devices.size()), summary.total_images_per_sec, summary.interrupted});
  }
  reports.summary(run);
  result.result_json_error = reports.error();
  return result;
}

int exit_status(const WorkerResult& result, std::ostream& out, std::ostream& err) {
  if (!result.result_json_error.empty()) return print_error(RunError(result.result_json_error), out, err);
  if (result.verify_failed) {
    out.flush();
    for (const std::string& l : result.error_lines) err << "cnnbench: error: " << l << '\n';
    err.flush();
    return kExitVerifyFailed;
  }
  if (result.summary.replicas && !result.summary.replicas->identical) return kExitReplicaMismatch;
  return result.summary.interrupted ? kExitInterrupted : kExitOk;
}

std::vector<telemetry::GpuId> telemetry_ids(const std::vector<DeviceEntry>& devices) {
  std::vector<telemetry::GpuId> ids;
  for (const auto& d : devices) ids.push_back({d.ordinal, d.uuid});
  return ids;
}

}  // namespace cnnbench::bench
