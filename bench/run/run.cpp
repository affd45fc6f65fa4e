#include "bench/run/run.h"

#include <algorithm>
#include <string>
#include <vector>

#include "bench/discovery/preflight.h"
#include "bench/run/in_process.h"
#include "bench/run/rank.h"
#include "bench/run/scaling_sweep.h"
#include "bench/status.h"
#include "mpi/launch.h"

namespace cnnbench::bench {
namespace {

/// Checks that need no other rank (MPI build, root under mpirun, and before NCCL:
/// GPUs per host, /dev/shm, NCCL variables): warnings to `err` (once per job),
/// errors as a RunError.
void run_local_preflight(const BenchmarkPlan& plan, const DeviceSelection& selection, const EnvLookup& env,
                         const kernels::GpuEnumeration& gpus, std::ostream& err) {
  const mpi::LaunchInfo& launch = plan.launch;
  const bool gpu = selection.kind == "gpu";
  const int max_gpus_in_process = plan.config.scaling_sweep.empty() ? static_cast<int>(selection.gpus.size())
                                                                    : plan.config.scaling_sweep.back();
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

}  // namespace

int run(const BenchmarkPlan& plan, const DeviceSelection& selection, const EnvLookup& env,
        const kernels::GpuEnumeration& gpus, const std::atomic<bool>* stop, std::ostream& out,
        std::ostream& err) {
  run_local_preflight(plan, selection, env, gpus, err);
  if (!plan.config.scaling_sweep.empty()) return run_scaling_sweep(plan, selection, stop, out, err);
  if (plan.launch.needs_transport()) return run_rank(plan, selection, stop, out, err);
  return exit_status(run_in_process(plan, selection, selection.gpus, stop, out, err), out, err);
}

}  // namespace cnnbench::bench
