#include "bench/report/rank_figures.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "bench/format.h"
#include "bench/report/hosts.h"
#include "bench/report/stats.h"

namespace cnnbench::bench {
namespace {

std::string device_of(const RankFigures& r) {
  return r.devices.empty() ? std::string("-") : r.devices.front();
}

std::string where(const RankFigures& r) {
  std::string s = "rank " + std::to_string(r.rank) + " (" + (r.host.empty() ? "unknown host" : r.host);
  if (r.ordinal >= 0) s += ", CUDA " + std::to_string(r.ordinal) + " " + device_of(r);
  return s + ")";
}

}  // namespace

RankFigures own_figures(int rank, const std::string& host, const DeviceEntry& device,
                        int per_device_batch, const RunSummary& summary) {
  RankFigures r;
  r.rank = rank;
  r.host = host;
  r.ordinal = device.ordinal;
  r.devices = {device.ordinal >= 0 ? device.uuid : std::string("cpu")};
  r.steps = summary.steps;
  r.step_time_ms = summary.step_time_ms;
  const double stepping_ms =
      std::accumulate(summary.step_times_ms.begin(), summary.step_times_ms.end(), 0.0);
  // The hook runs inside the steps, so its time is part of stepping_ms; the
  // floor keeps a rounding error from making the rate infinite.
  const double own_ms = std::max(stepping_ms - summary.grad_hook_time_s * 1e3, stepping_ms * 1e-3);
  if (summary.steps > 0 && own_ms > 0) {
    r.images_per_sec = static_cast<double>(per_device_batch) * summary.steps / (own_ms / 1e3);
  }
  return r;
}

std::vector<std::string> rank_table_lines(const std::vector<RankFigures>& ranks) {
  if (ranks.size() < 2) return {};
  // Rows grouped by host (hosts in the order of their lowest rank), by rank within a host.
  std::vector<std::string> host_of_rank;
  for (const auto& r : ranks) host_of_rank.push_back(r.host);
  const std::vector<HostRanks> hosts = group_by_host(host_of_rank);
  const bool several_hosts = hosts.size() > 1;

  std::vector<std::array<std::string, 5>> rows;
  rows.push_back({"rank", "host", "CUDA", "device", "images/sec"});
  for (const auto& h : hosts) {
    for (const int i : h.ranks) {
      const RankFigures& r = ranks[static_cast<size_t>(i)];
      rows.push_back({std::to_string(r.rank), r.host.empty() ? "-" : r.host,
                      r.ordinal >= 0 ? std::to_string(r.ordinal) : "-", device_of(r),
                      fmt("%.2f", r.images_per_sec)});
    }
  }
  std::array<size_t, 5> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  const auto table_line = [&width](const std::array<std::string, 5>& row) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    return line;
  };
  std::vector<std::string> lines;
  lines.push_back(
      "per-rank images/sec (per-device batch / its own step time, less the host time it waited in "
      "the gradient all-reduce):");
  lines.push_back(table_line(rows.front()));
  // With several hosts, a line after each host's ranks: their median and slowest.
  std::vector<double> host_medians;
  size_t row = 1;
  for (const auto& h : hosts) {
    std::vector<double> rates;
    const RankFigures* slow = nullptr;
    for (const int i : h.ranks) {
      const RankFigures& r = ranks[static_cast<size_t>(i)];
      lines.push_back(table_line(rows[row++]));
      rates.push_back(r.images_per_sec);
      if (slow == nullptr || r.images_per_sec < slow->images_per_sec) slow = &r;
    }
    host_medians.push_back(median(rates));
    if (several_hosts) {
      lines.push_back(fmt("    %s: rank%s %s, median %.2f, min %.2f (rank %d)", h.host.c_str(),
                          h.ranks.size() == 1 ? "" : "s", rank_ranges(h.ranks).c_str(), host_medians.back(),
                          slow->images_per_sec, slow->rank));
    }
  }
  std::vector<double> rates;
  for (const auto& r : ranks) rates.push_back(r.images_per_sec);
  const double med = median(rates);
  const auto slowest = std::min_element(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) {
    return a.images_per_sec < b.images_per_sec;
  });
  const auto fastest = std::max_element(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) {
    return a.images_per_sec < b.images_per_sec;
  });
  lines.push_back(fmt("per-rank images/sec min / median / max: %.2f (rank %d) / %.2f / %.2f (rank %d)",
                      slowest->images_per_sec, slowest->rank, med, fastest->images_per_sec,
                      fastest->rank));
  if (med > 0 && slowest->images_per_sec < (1.0 - kSlowRankFraction) * med) {
    lines.push_back(fmt("slowest: %s at %.2f images/sec, %.1f%% below the median", where(*slowest).c_str(),
                        slowest->images_per_sec, 100.0 * (1.0 - slowest->images_per_sec / med)));
  }
  // A node slower as a whole (its median well below the hosts' median): clocks, power,
  // a different instance or its network.
  if (several_hosts) {
    const double hosts_median = median(host_medians);
    const auto slow_host = std::min_element(host_medians.begin(), host_medians.end());
    if (hosts_median > 0 && *slow_host < (1.0 - kSlowRankFraction) * hosts_median) {
      const HostRanks& h = hosts[static_cast<size_t>(slow_host - host_medians.begin())];
      lines.push_back(fmt("slowest host: %s (ranks %s) at a median of %.2f images/sec, %.1f%% below the "
                          "median host",
                          h.host.c_str(), rank_ranges(h.ranks).c_str(), *slow_host,
                          100.0 * (1.0 - *slow_host / hosts_median)));
    }
  }
  return lines;
}

double scaling_efficiency(double total_images_per_sec, int devices, double baseline_images_per_sec) {
  if (devices < 1 || !(baseline_images_per_sec > 0)) return std::nan("");
  return total_images_per_sec / (devices * baseline_images_per_sec);
}

std::string efficiency_line(double total_images_per_sec, int devices, double baseline_images_per_sec) {
  return fmt("scaling efficiency: %.1f%% (%.2f images/sec on %d device%s vs %d x %.2f images/sec of "
             "--baseline_images_per_sec)",
             100.0 * scaling_efficiency(total_images_per_sec, devices, baseline_images_per_sec),
             total_images_per_sec, devices, devices == 1 ? "" : "s", devices, baseline_images_per_sec);
}

}  // namespace cnnbench::bench
