#include "bench/cli/program.h"

#include <exception>
#include <stdexcept>
#include <utility>

#include "bench/cli/flags.h"
#include "bench/cli/model_list.h"
#include "bench/cli/resolve.h"
#include "bench/run/nccl_network.h"
#include "bench/discovery/device_selection.h"
#include "bench/discovery/environment.h"
#include "bench/run/run.h"
#include "bench/run/trainer.h"
#include "bench/status.h"
#include "kernels/gpu_info.h"
#include "kernels/onednn_version.h"
#include "mpi/launch.h"

namespace cnnbench::bench {
namespace {

/// Everything after the flags: devices, launcher, environment, plan, run.
/// Throws UsageError (exit 2) and anything else (exit 1).
int run_benchmark(const Config& config, std::ostream& out, std::ostream& err,
                  const std::atomic<bool>* stop, double program_start_s) {
  RunSite site;
  // The environment is read here, on the main thread, before any thread starts.
  site.env = mpi::process_environment();
  try {
    site.launch = mpi::detect_launch(site.env);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const kernels::GpuEnumeration gpus = kernels::enumerate_gpus();
  site.visible_gpus = static_cast<int>(gpus.gpus.size());
  site.devices = select_devices(
      {.device = config.device, .num_gpus = config.num_gpus, .scaling_sweep = config.scaling_sweep},
      site.launch, site.env, gpus);
  site.environment = collect_environment(system_sources(), gpus, kernels::library_versions());
  site.environment.versions.onednn = kernels::onednn_version();
  site.environment.versions.mpi = mpi::mpi_library_version();
  site.environment.versions.nccl = mpi::nccl_library_version();
  RunPlan plan = resolve(config, std::move(site), program_start_s);
  // Ranks on GPUs: NCCL's log names the network it chose, for the header. Set
  // up here, on the main thread, before NCCL's first call reads its variables.
  NcclLog nccl_log;
  if (plan.site.launch.needs_transport() && plan.gpu() && plan.scaling_sweep.empty()) {
    nccl_log = NcclLog::prepare_for_this_process();
    plan.nccl_log = &nccl_log;
  }
  return run(plan, stop, out, err);
}

}  // namespace

int run_program(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
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
  } catch (const std::exception& e) {
    return print_error(e, out, err);
  }
}

}  // namespace cnnbench::bench
