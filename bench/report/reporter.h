// The Reporter interface that writes a run's figures as they happen (text,
// CloudWatch EMF, result JSON), and MultiReporter, which fans them out.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/report/run_result.h"

namespace cnnbench::bench {

/// Receives a run's figures as they happen: the header before the first step,
/// each displayed step, and the whole result once at the end. Implementations
/// write text, EMF or JSON; none may throw from step() or summary() (a failing
/// writer must not stop training or hide the other reports).
class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void header(const RunInfo& info) = 0;
  virtual void step(const RunInfo& info, const StepStats& stats) = 0;
  virtual void summary(const RunResult& result) = 0;
  /// Empty, or why a report the user asked for could not be written (the run
  /// then ends with exit status 1). Read after summary().
  [[nodiscard]] virtual std::string error() const { return {}; }
};

/// Fans every call out to several reporters (text, EMF, result JSON), in the
/// order they were added. Owns them.
class MultiReporter final : public Reporter {
 public:
  void add(std::unique_ptr<Reporter> reporter) { reporters_.push_back(std::move(reporter)); }
  [[nodiscard]] bool empty() const { return reporters_.empty(); }

  void header(const RunInfo& info) override {
    for (auto& r : reporters_) r->header(info);
  }
  void step(const RunInfo& info, const StepStats& stats) override {
    for (auto& r : reporters_) r->step(info, stats);
  }
  void summary(const RunResult& result) override {
    for (auto& r : reporters_) r->summary(result);
  }
  /// The first reporter's error, in the order they were added.
  [[nodiscard]] std::string error() const override {
    for (const auto& r : reporters_) {
      if (std::string e = r->error(); !e.empty()) return e;
    }
    return {};
  }

 private:
  std::vector<std::unique_ptr<Reporter>> reporters_;
};

}  // namespace cnnbench::bench
