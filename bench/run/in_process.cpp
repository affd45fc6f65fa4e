#include "bench/run/in_process.h"

#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "bench/status.h"
#include "bench/telemetry/session.h"
#include "mpi/local_group.h"

namespace cnnbench::bench {
namespace {

WorkerResult run_local_group(const RunPlan& group_plan, const std::vector<DeviceEntry>& gpus, const std::atomic<bool>* stop,
                             std::ostream& out, std::ostream& err, const WorkerOutput& rank0_output) {
  std::vector<int> ordinals;
  for (const auto& g : gpus) ordinals.push_back(g.ordinal);
  const std::unique_ptr<mpi::LocalGroup> group = mpi::make_local_group(ordinals);
  const int n = group->size();
  std::vector<WorkerResult> results(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        // The backend first: making it probes the GPUs and selects device 0.
        const std::unique_ptr<kernels::Backend> backend = make_backend(group_plan.site.devices);
        group->bind_thread(r);
        WorkerOutput output;
        if (r == 0) {
          output = rank0_output;
        } else {
          output.out = &out;  // --verbose lines only
        }
        results[static_cast<size_t>(r)] =
            run_worker(group_plan, *backend, group->member(r), gpus[static_cast<size_t>(r)], stop, output);
      } catch (const std::exception& e) {
        const std::string where = "GPU " + std::to_string(ordinals[static_cast<size_t>(r)]) + " (worker " +
                                  std::to_string(r) + " of " + std::to_string(n) + ")";
        group->member(r).abort(print_error(e, out, err, where));
      }
    });
  }
  for (auto& t : threads) t.join();
  return std::move(results.front());
}

}  // namespace

WorkerResult run_in_process(const RunPlan& plan, const std::vector<DeviceEntry>& gpus, const std::atomic<bool>* stop,
                            std::ostream& out, std::ostream& err,
                            std::optional<std::vector<SweepPoint>> sweep_before) {
  const std::unique_ptr<telemetry::TelemetrySession> telemetry = telemetry::make_telemetry_session(
      plan.gpu(), plan.telemetry_interval_ms, telemetry_ids(gpus));
  WorkerOutput output;
  output.out = &out;
  output.telemetry = telemetry.get();
  output.sweep_before = std::move(sweep_before);

  if (gpus.size() > 1) {
    RunPlan group_plan = plan;
    if (group_plan.cuda_graph) {
      group_plan.cuda_graph = false;
      group_plan.notes.push_back(
          "CUDA graph:  off (several GPUs in one process: NCCL collectives captured in graphs can "
          "deadlock; one rank per GPU under mpirun keeps them)");
    }
    return run_local_group(group_plan, gpus, stop, out, err, output);
  }
  const std::unique_ptr<mpi::Communicator> comm = mpi::make_single_worker();
  const std::unique_ptr<kernels::Backend> backend = make_backend(plan.site.devices);
  const DeviceEntry device = gpus.empty() ? cpu_device_entry(plan.site.environment) : gpus.front();
  return run_worker(plan, *backend, *comm, device, stop, output);
}

}  // namespace cnnbench::bench
