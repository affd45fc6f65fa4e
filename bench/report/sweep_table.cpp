#include "bench/report/sweep_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "bench/format.h"

namespace cnnbench::bench {
namespace {

double per_gpu(const SweepPoint& p) { return p.gpus > 0 ? p.images_per_sec / p.gpus : 0.0; }

double efficiency(const SweepPoint& p, const SweepReference& ref) {
  return ref.images_per_sec > 0 ? per_gpu(p) / ref.images_per_sec : std::nan("");
}

}  // namespace

SweepReference sweep_reference(const std::vector<SweepPoint>& points, const std::optional<double>& baseline) {
  if (baseline) return {*baseline, fmt("--baseline_images_per_sec=%g", *baseline)};
  if (points.empty()) return {0, "the first run"};
  return {per_gpu(points.front()), fmt("the %d-GPU run", points.front().gpus)};
}

std::vector<std::string> sweep_table_lines(const std::vector<SweepPoint>& points, int per_gpu_batch,
                                           const std::optional<double>& baseline) {
  const SweepReference ref = sweep_reference(points, baseline);
  std::vector<std::string> lines;
  lines.push_back(fmt("Scaling sweep (weak scaling: %d images per GPU per step at every GPU count, as "
                      "tf_cnn_benchmarks' --batch_size):",
                      per_gpu_batch));
  std::vector<std::array<std::string, 4>> rows;
  rows.push_back({"GPUs", "images/sec", "per GPU", "efficiency"});
  for (const auto& p : points) {
    const double e = efficiency(p, ref);
    rows.push_back({std::to_string(p.gpus), fmt("%.2f", p.images_per_sec), fmt("%.2f", per_gpu(p)),
                    (std::isfinite(e) ? fmt("%.1f%%", 100.0 * e) : std::string("-")) +
                        (p.interrupted ? " (interrupted)" : "")});
  }
  std::array<size_t, 4> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      // Numbers right-aligned under their heading, the GPU count left.
      const std::string pad(width[c] - row[c].size(), ' ');
      line += c == 0 || c == 3 ? row[c] + pad : pad + row[c];
      if (c + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(line);
  }
  lines.push_back("efficiency = images/sec per GPU / one GPU's images/sec (" + ref.what +
                  (ref.images_per_sec > 0 ? fmt(": %.2f", ref.images_per_sec) : std::string()) + ")");
  return lines;
}

nlohmann::ordered_json sweep_json(const std::vector<SweepPoint>& points, int per_gpu_batch,
                                  const std::optional<double>& baseline) {
  const SweepReference ref = sweep_reference(points, baseline);
  const auto number = [](double v) -> nlohmann::ordered_json {
    if (!std::isfinite(v)) return nullptr;
    return v;
  };
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& p : points) {
    rows.push_back({{"gpus", p.gpus},
                    {"images_per_sec", number(p.images_per_sec)},
                    {"per_gpu_images_per_sec", number(per_gpu(p))},
                    {"efficiency", number(efficiency(p, ref))},
                    {"interrupted", p.interrupted}});
  }
  return {{"scaling", "weak"},
          {"per_gpu_batch", per_gpu_batch},
          {"reference", ref.what},
          {"reference_images_per_sec", ref.images_per_sec > 0 ? number(ref.images_per_sec) : nullptr},
          {"points", rows}};
}

}  // namespace cnnbench::bench
