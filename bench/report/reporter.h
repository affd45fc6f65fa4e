// The Reporter interface that writes a run's figures as they happen (text,
// CloudWatch EMF, result JSON), and MultiReporter, which fans them out.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "bench/report/run_result.h"

namespace cnnbench::bench {

/// Receives a run's figures as they happen. Implementations write text, EMF or
/// JSON; none may throw from step() (a failing writer must not stop training).
class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void header(const RunInfo& info) = 0;
  virtual void step(const RunInfo& info, const StepStats& stats) = 0;
  virtual void summary(const RunInfo& info, const RunSummary& summary) = 0;
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
  void summary(const RunInfo& info, const RunSummary& summary) override {
    for (auto& r : reporters_) r->summary(info, summary);
  }

 private:
  std::vector<std::unique_ptr<Reporter>> reporters_;
};

}  // namespace cnnbench::bench
