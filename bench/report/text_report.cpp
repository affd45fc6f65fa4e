#include "bench/report/text_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/format.h"
#include "bench/report/rank_figures.h"
#include "bench/telemetry/telemetry_text.h"

namespace cnnbench::bench {
namespace {

constexpr const char* kDashes = "----------------------------------------------------------------";

void line(std::ostream& out, const std::string& label, const std::string& value) {
  out << header_line(label, value) << '\n';
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

/// "4 x NVIDIA H100 80GB HBM3 [GPU-5d5b..., GPU-...]" when all devices share a
/// name; each device in turn otherwise; the bare model name for one CPU.
std::string devices_text(const std::vector<DeviceEntry>& devices) {
  if (devices.empty()) return "none";
  bool same_name = true;
  std::vector<std::string> uuids;
  for (const auto& d : devices) {
    same_name = same_name && d.name == devices.front().name;
    if (!d.uuid.empty()) uuids.push_back(d.uuid);
  }
  if (same_name) {
    std::string s = devices.size() == 1 && uuids.empty()
                        ? devices.front().name
                        : fmt("%zu x ", devices.size()) + devices.front().name;
    if (!uuids.empty()) s += " [" + join(uuids) + "]";
    return s;
  }
  std::vector<std::string> each;
  for (const auto& d : devices) each.push_back(d.uuid.empty() ? d.name : d.name + " [" + d.uuid + "]");
  return join(each);
}

/// The lines after the step times: the scaling efficiency against a baseline,
/// the per-rank table, the replica check, the GPU telemetry and its notes.
std::vector<std::string> summary_lines(const RunResult& result) {
  std::vector<std::string> lines;
  if (result.baseline_images_per_sec > 0) {
    lines.push_back(efficiency_line(result.summary.total_images_per_sec, static_cast<int>(result.info.devices.size()),
                                    result.baseline_images_per_sec));
  }
  const std::vector<std::string> table = rank_table_lines(result.ranks);
  lines.insert(lines.end(), table.begin(), table.end());
  if (result.summary.replicas) {
    const std::vector<std::string>& r = result.summary.replicas->lines;
    lines.insert(lines.end(), r.begin(), r.end());
  }
  if (result.telemetry) {
    const std::vector<std::string> telemetry = telemetry::telemetry_lines(*result.telemetry);
    lines.insert(lines.end(), telemetry.begin(), telemetry.end());
    lines.insert(lines.end(), result.telemetry_notes.begin(), result.telemetry_notes.end());
  }
  return lines;
}

std::string num_batches_text(const RunInfo& info) {
  if (info.duration_s > 0) return fmt("as many as run in %g s (--duration)", info.duration_s);
  return std::to_string(info.num_batches);
}

}  // namespace

std::string header_line(const std::string& label, const std::string& value) {
  // An empty label continues the previous line's value (the batch size's second line).
  std::string l = label.empty() ? std::string() : label + ":";
  l.resize(std::max<size_t>(l.size() + 1, 13), ' ');
  return l + value;
}

void TextReporter::header(const RunInfo& info) {
  line(out_, "Model", info.model);
  line(out_, "Dataset", "imagenet (synthetic)");
  line(out_, "Mode", info.mode);
  line(out_, "Batch size", fmt("%d global", info.global_batch));
  line(out_, "", fmt("%d per device", info.per_device_batch));
  line(out_, "Num batches", num_batches_text(info));
  line(out_, "Num warm-up", fmt("%d (untimed)", info.num_warmup_batches));
  line(out_, "Devices", devices_text(info.devices));
  line(out_, "Device", info.device_reason.empty() ? info.device_kind
                                                  : info.device_kind + " (" + info.device_reason + ")");
  line(out_, "Data format", info.data_format);
  line(out_, "Precision", info.precision);
  line(out_, "Optimizer", fmt("%s (momentum %g, learning rate %g, weight decay %g)",
                              info.optimizer.c_str(), static_cast<double>(info.momentum),
                              static_cast<double>(info.learning_rate),
                              static_cast<double>(info.weight_decay)));
  line(out_, "Variables", info.variables);
  line(out_, "Image size", fmt("%d x %d pixels", info.image_size, info.image_size));
  line(out_, "Parameters", fmt("%lld (%.2f million)", static_cast<long long>(info.param_count),
                               static_cast<double>(info.param_count) / 1e6));
  line(out_, "FLOPs", fmt("%.2f GFLOPs/image (forward; multiply-add = 2 FLOPs)",
                          info.gflops_per_image));
  line(out_, "Backend", info.backend);
  line(out_, "Memory", fmt("%.1f MiB per device",
                           static_cast<double>(info.device_memory_bytes) / (1024.0 * 1024.0)));
  if (const kernels::SetupReport& su = info.setup; su.plans_built > 0 || su.allocation_s > 0) {
    line(out_, "Set-up", fmt("plans %.2f s, autotuning %.2f s, allocation %.2f s; %lld cuDNN plans "
                             "(%lld autotuned, %lld from the plan cache)",
                             su.plans_s, su.autotune_s, su.allocation_s,
                             static_cast<long long>(su.plans_built),
                             static_cast<long long>(su.plans_autotuned),
                             static_cast<long long>(su.plans_from_cache)));
  }
  for (const std::string& note : info.setup.notes) line(out_, "Note", note);
  for (const std::string& v : info.verify_lines) line(out_, "Verify", v);
  for (const auto& l : extra_header_lines_) out_ << l << '\n';
  out_ << "==========\n";
  if (info.num_warmup_batches > 0) out_ << "Running warm up\n";
  out_.flush();
}

void TextReporter::step(const RunInfo& info, const StepStats& stats) {
  // Printed at the first step line rather than when warm-up ends, because the
  // Reporter interface has no warm-up event; the first line follows it at once.
  if (!steps_started_) {
    if (info.num_warmup_batches > 0) out_ << "Done warm up\n";
    out_ << "Step\tImg/sec\ttotal_loss\n";
    steps_started_ = true;
  }
  out_ << fmt("%d\timages/sec: %.1f +/- %.1f (jitter = %.1f)\t%.3f\n", stats.step,
              stats.images_per_sec, stats.uncertainty, stats.jitter, stats.loss);
  out_.flush();
}

void TextReporter::summary(const RunResult& result) {
  const RunInfo& info = result.info;
  const RunSummary& summary = result.summary;
  out_ << kDashes << '\n';
  out_ << fmt("total images/sec: %.2f\n", summary.total_images_per_sec);
  out_ << kDashes << '\n';
  out_ << fmt("timed steps: %d (%lld images in %.3f s of wall time)\n", summary.steps,
              static_cast<long long>(summary.images), summary.wall_time_s);
  if (summary.steps > 0) {
    const Percentiles& p = summary.step_time_ms;
    out_ << fmt("step time p50/p90/p99: %.2f / %.2f / %.2f ms%s\n", p.p50, p.p90, p.p99,
                summary.step_timing.empty() ? "" : (" (" + summary.step_timing + ")").c_str());
    out_ << fmt("step time mean/min/max: %.2f / %.2f / %.2f ms\n", p.mean, p.min, p.max);
  }
  for (const auto& l : summary_lines(result)) out_ << l << '\n';
  if (info.num_warmup_batches > 0 && (summary.steps > 0 || !summary.interrupted)) {
    out_ << fmt("warm-up: %d step%s in %.3f s (untimed)", info.num_warmup_batches,
                info.num_warmup_batches == 1 ? "" : "s", summary.warmup_time_s);
    if (info.setup.capture_s > 0) {
      out_ << fmt("; CUDA graph capture %.3f s of it", info.setup.capture_s);
    }
    out_ << '\n';
  }
  if (std::isfinite(summary.final_loss) && summary.steps > 0) {
    out_ << fmt("final loss: %.3f (mean cross-entropy of the last step)\n", summary.final_loss);
  }
  if (summary.interrupted) {
    out_ << "interrupted: " << (summary.stop_reason.empty() ? "stop requested" : summary.stop_reason)
         << fmt("; the figures above cover the %d timed steps completed\n", summary.steps);
  }
  out_.flush();
}

}  // namespace cnnbench::bench
