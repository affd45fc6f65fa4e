#include "bench/run/scaling_sweep.h"

#include <optional>
#include <vector>

#include "bench/report/sweep_table.h"
#include "bench/run/in_process.h"
#include "bench/status.h"

namespace cnnbench::bench {

int run_scaling_sweep(const RunPlan& plan, const std::atomic<bool>* stop, std::ostream& out, std::ostream& err) {
  const std::vector<int>& counts = plan.scaling_sweep;
  const std::optional<double> baseline =
      plan.baseline_images_per_sec > 0 ? std::optional<double>(plan.baseline_images_per_sec) : std::nullopt;
  std::vector<SweepPoint> points;
  int status = kExitOk;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int n = counts[i];
    if (stop != nullptr && stop->load()) {  // asked between two runs
      status = kExitInterrupted;
      break;
    }
    out << (i == 0 ? "" : "\n") << "Scaling sweep: run " << i + 1 << " of " << counts.size() << ", on "
        << n << " GPU" << (n == 1 ? "" : "s") << '\n';
    out.flush();
    const std::vector<DeviceEntry> gpus(plan.site.devices.gpus.begin(), plan.site.devices.gpus.begin() + n);
    // The result JSON, rewritten after each run, holds the table up to that run.
    const WorkerResult result = run_in_process(plan, gpus, stop, out, err, points);
    points.push_back({n, result.summary.total_images_per_sec, result.summary.interrupted});
    const int run_status = exit_status(result, out, err);
    if (run_status != kExitOk) status = run_status;
    if (result.summary.interrupted) break;
  }
  out << '\n';
  for (const auto& line : sweep_table_lines(points, plan.batch, baseline)) {
    out << line << '\n';
  }
  out.flush();
  return status;
}

}  // namespace cnnbench::bench
