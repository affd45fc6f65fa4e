// The --scaling_sweep table and its result JSON: images/sec, images/sec per GPU
// and the scaling efficiency of each run. Weak scaling, as tf_cnn_benchmarks
// measures it: the batch per GPU stays the same, so the global batch grows with
// the GPU count.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/report/run_result.h"

namespace cnnbench::bench {

/// What the efficiencies are relative to: --baseline_images_per_sec when given,
/// else the per-GPU images/sec of the sweep's first run (its 1-GPU run when the
/// sweep starts at 1).
struct SweepReference {
  double images_per_sec = 0;  ///< one GPU's images/sec; 0 = not known yet
  std::string what;           ///< "the 1-GPU run", "--baseline_images_per_sec=3000"
};
SweepReference sweep_reference(const std::vector<SweepPoint>& points, const std::optional<double>& baseline);

/// The table: a title saying the scaling is weak (per_gpu_batch images per GPU
/// per step at every count), a header, one row per point (GPUs, images/sec, per
/// GPU, efficiency = per-GPU images/sec / the reference), and what the
/// efficiency is relative to. Interrupted runs are marked.
std::vector<std::string> sweep_table_lines(const std::vector<SweepPoint>& points, int per_gpu_batch,
                                           const std::optional<double>& baseline);

/// The result JSON's "scaling_sweep" member for `points`.
nlohmann::ordered_json sweep_json(const std::vector<SweepPoint>& points, int per_gpu_batch,
                                  const std::optional<double>& baseline);

}  // namespace cnnbench::bench
