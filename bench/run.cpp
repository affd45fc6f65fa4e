#include "bench/run.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/config.h"
#include "bench/device_selection.h"
#include "bench/environment.h"
#include "bench/flags.h"
#include "bench/mpi_ranks.h"
#include "bench/multi_gpu.h"
#include "bench/preflight.h"
#include "bench/run_error.h"
#include "bench/scaling_sweep.h"
#include "bench/trainer.h"
#include "bench/worker.h"
#include "kernels/gpu_info.h"
#include "kernels/onednn_version.h"
#include "models/zoo.h"
#include "mpi/launch.h"

namespace cnnbench::bench {
namespace {

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

// --- the run --------------------------------------------------------------------

/// Checks that need no other rank (MPI build, root under mpirun, and before NCCL:
/// GPUs per host, /dev/shm, NCCL variables): warnings to `err` (once per job),
/// errors as a RunError.
void run_local_preflight(const Config& config, const DeviceSelection& selection,
                         const mpi::LaunchInfo& launch, const EnvLookup& env,
                         const kernels::GpuEnumeration& gpus, std::ostream& err) {
  const bool gpu = selection.kind == "gpu";
  const int max_gpus_in_process =
      config.scaling_sweep.empty() ? static_cast<int>(selection.gpus.size()) : config.scaling_sweep.back();
  preflight::LocalInputs in;
  in.host = preflight::gather_host_facts(env);
  in.launch = launch;
  in.env = env;
  in.mpi_built = mpi::mpi_built();
  in.uses_nccl = gpu && (launch.needs_transport() || max_gpus_in_process > 1);
  in.local_ranks = launch.needs_transport() ? std::max(1, launch.local_size) : 1;
  in.local_gpus = launch.needs_transport() ? in.local_ranks : max_gpus_in_process;
  in.visible_gpus = static_cast<int>(gpus.gpus.size());
  const std::vector<preflight::Finding> findings = preflight::run_local_checks(in);
  std::string errors;
  for (const auto& f : findings) {
    if (f.severity == preflight::Severity::Error) {
      if (!errors.empty()) errors += '\n';
      errors += preflight::format(f);
    } else if (launch.rank <= 0) {
      err << "cnnbench: " << preflight::format(f) << '\n';
    }
  }
  err.flush();
  if (!errors.empty()) throw RunError("preflight check failed:\n" + errors);
}

/// The whole program after flag parsing succeeded. Throws UsageError (exit 2) and
/// anything else (exit 1).
int run_benchmark(const Config& config, std::ostream& out, std::ostream& err,
                  const std::atomic<bool>* stop, double program_start_s) {
  // The environment is read here, on the main thread, before any thread starts.
  const EnvLookup env = process_env;
  mpi::LaunchInfo launch;
  try {
    launch = mpi::detect_launch(env);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const kernels::GpuEnumeration gpus = kernels::enumerate_gpus();
  const DeviceSelection selection = select_devices(config, launch, env, gpus);

  Environment environment = collect_environment(system_sources(), gpus, kernels::library_versions());
  environment.versions.onednn = kernels::onednn_version();
  environment.versions.mpi = mpi::mpi_library_version();
  BenchmarkPlan plan = make_plan(config, selection, environment, launch, program_start_s);

  run_local_preflight(config, selection, launch, env, gpus, err);

  // Ranks on GPUs: NCCL's log names the network it chose, for the header.
  NcclLog nccl_log;
  if (launch.needs_transport() && selection.kind == "gpu" && config.scaling_sweep.empty()) {
    nccl_log = NcclLog::prepare_for_this_process();
    plan.nccl_log = &nccl_log;
  }

  if (!config.scaling_sweep.empty()) return run_scaling_sweep(plan, selection, stop, out, err);
  if (launch.needs_transport()) return run_rank(plan, selection, stop, out, err);
  return exit_status(run_in_process(plan, selection, selection.gpus, stop, out, err), err);
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
    return run_benchmark(flags.config, out, err, stop, program_start_s);
  } catch (const UsageError& e) {
    out.flush();
    err << "cnnbench: error: " << e.what() << "\nsee cnnbench --help\n";
    err.flush();
    return kExitUsage;
  } catch (const CollectiveError& e) {
    out.flush();
    err << "cnnbench: error: " << e.what() << '\n';
    err.flush();
    return e.exit_code();
  } catch (const std::exception& e) {
    out.flush();
    err << "cnnbench: error: " << e.what() << '\n';
    err.flush();
    return kExitFailure;
  }
}

}  // namespace cnnbench::bench
