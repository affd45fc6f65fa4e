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
void run_local_preflight(const RunPlan& plan, std::ostream& err) {
  const mpi::LaunchInfo& launch = plan.site.launch;
  const bool gpu = plan.gpu();
  const int max_gpus_in_process = plan.scaling_sweep.empty() ? static_cast<int>(plan.site.devices.gpus.size())
                                                             : plan.scaling_sweep.back();
  preflight::LocalInputs in;
  in.host = preflight::gather_host_facts(plan.site.env);
  in.launch = launch;
  in.env = plan.site.env;
  in.mpi_built = mpi::mpi_built();
  in.uses_nccl = gpu && (launch.needs_transport() || max_gpus_in_process > 1);
  in.local_ranks = launch.needs_transport() ? std::max(1, launch.local_size) : 1;
  in.local_gpus = launch.needs_transport() ? in.local_ranks : max_gpus_in_process;
  in.visible_gpus = plan.site.visible_gpus;
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

int run(const RunPlan& plan, const std::atomic<bool>* stop, std::ostream& out, std::ostream& err) {
  run_local_preflight(plan, err);
  if (!plan.scaling_sweep.empty()) return run_scaling_sweep(plan, stop, out, err);
  if (plan.site.launch.needs_transport()) return run_rank(plan, stop, out, err);
  return exit_status(run_in_process(plan, plan.site.devices.gpus, stop, out, err), out, err);
}

}  // namespace cnnbench::bench
