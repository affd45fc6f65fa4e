// Per-rank figures: what each rank (one GPU, or one CPU process) measured on its
// own (gathered on rank 0 by run/gather.h), the per-GPU table and the
// scaling-efficiency line.
#pragma once

#include <string>
#include <vector>

#include "bench/report/run_result.h"

namespace cnnbench::bench {

/// A rank more than this fraction below the median images/sec is named as the
/// slowest in the per-rank table.
inline constexpr double kSlowRankFraction = 0.05;

/// This rank's figures. images_per_sec = per_device_batch × steps / (sum of its
/// step times − RunSummary::grad_hook_time_s): its own throughput without the host
/// time it spent blocked in the gradient all-reduce, so that on CPU ranks a fast
/// rank waiting for a slow one does not look slow. On GPUs the all-reduce runs on
/// its own stream inside the step time, and the figures of the ranks agree
/// closely (synchronous training). 0 when no step was timed.
RankFigures own_figures(int rank, const std::string& host, const DeviceEntry& device,
                        int per_device_batch, const RunSummary& summary);

/// The per-rank table for the text report: a title saying what the figure is, a
/// header, one line per rank (rank, host, CUDA ordinal, UUID, images/sec) grouped
/// by host (hosts in the order of their lowest rank), the min / median / max line,
/// and when the slowest rank is more than kSlowRankFraction below the median, a
/// line naming it (rank, host, ordinal, UUID). With several hosts, each host's
/// ranks end with a line of their median and slowest rank, and a host whose median
/// is more than kSlowRankFraction below the median of the hosts is named. Empty
/// for fewer than 2 ranks.
std::vector<std::string> rank_table_lines(const std::vector<RankFigures>& ranks);

/// Scaling efficiency of `total_images_per_sec` on `devices` devices against a
/// one-device figure: total / (devices × baseline).
double scaling_efficiency(double total_images_per_sec, int devices, double baseline_images_per_sec);

/// "scaling efficiency: 93.1% (11590.42 images/sec on 4 devices vs 4 x 3112.00 images/sec of
/// --baseline_images_per_sec)".
std::string efficiency_line(double total_images_per_sec, int devices, double baseline_images_per_sec);

}  // namespace cnnbench::bench
