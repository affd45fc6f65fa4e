// The human-readable report on stdout, in tf_cnn_benchmarks' shape (header block,
// "==========", tab-separated step lines, "total images/sec") so that existing
// parsers and habits keep working, followed by the lines it never had.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "bench/report/reporter.h"

namespace cnnbench::bench {

/// A header line without its newline: "Label:" padded so that `value` starts in
/// column 13, as tf_cnn_benchmarks' header; an empty label continues the value
/// of the line before.
std::string header_line(const std::string& label, const std::string& value);

/// Writes the text report to a stream, flushing after each call so that a log
/// collector sees every line as it happens.
///
/// Shape (see DESIGN.md, Output):
///   header:  "Model:       resnet50" ... "Memory: ...", the added header lines,
///            "==========", "Running warm up"
///   first step: "Done warm up", "Step\tImg/sec\ttotal_loss", then
///   each step: "10\timages/sec: 2904.8 +/- 3.1 (jitter = 5.2)\t6.987"
///   summary: 64 dashes, "total images/sec: 11590.42", 64 dashes, timed steps,
///            step time p50/p90/p99 and mean/min/max (ms), the scaling
///            efficiency (with a baseline), the per-rank table (several ranks),
///            the GPU telemetry and its notes (when collected), warm-up time,
///            final loss, and when interrupted a line saying so.
/// Never throws from step(): stream errors set the stream's state only.
class TextReporter final : public Reporter {
 public:
  /// `out` must outlive the reporter.
  explicit TextReporter(std::ostream& out) : out_(out) {}

  /// Lines printed at the end of the header block, before "==========" (each
  /// without its newline): the environment, the device table, --verbose details.
  void add_header_lines(const std::vector<std::string>& lines) {
    extra_header_lines_.insert(extra_header_lines_.end(), lines.begin(), lines.end());
  }

  void header(const RunInfo& info) override;
  void step(const RunInfo& info, const StepStats& stats) override;
  void summary(const RunResult& result) override;

 private:
  std::ostream& out_;
  std::vector<std::string> extra_header_lines_;
  bool steps_started_ = false;
};

}  // namespace cnnbench::bench
