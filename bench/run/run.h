// The program: flags → device choice → model → compile → train → report.
// main() only calls run(); tests call it with string streams.
#pragma once

#include <atomic>
#include <memory>
#include <ostream>
#include <vector>

#include "bench/report.h"

namespace cnnbench::bench {

/// Exit statuses of the program.
inline constexpr int kExitOk = 0;
/// A run-time failure: no usable device, backend error, out of memory, NaN loss.
inline constexpr int kExitFailure = 1;
/// A usage error: an invalid flag or combination of flags (as getopt tools do).
inline constexpr int kExitUsage = 2;
/// Stopped early by a stop request; the summary of the steps done was printed.
/// main() turns it into the shell's status for the signal that asked for the
/// stop (exit_status_for).
inline constexpr int kExitInterrupted = 3;
/// The status a stopped run exits with when the signal is not known here: a rank
/// stopped because another rank of the job was signalled. Every launcher we
/// know (mpirun, srun, docker stop, ECS) asks a job to end with SIGTERM.
inline constexpr int kExitTerminated = 128 + 15;

/// The process's exit status for run()'s `status`: kExitInterrupted becomes
/// `signal_exit_code` (128 + the signal's number: 143 SIGTERM, 130 SIGINT) or
/// kExitTerminated when no signal reached this process; anything else stays.
constexpr int exit_status_for(int status, int signal_exit_code) {
  if (status != kExitInterrupted) return status;
  return signal_exit_code != 0 ? signal_exit_code : kExitTerminated;
}

/// Runs cnnbench with the command line `argv` (argv[0] is the program name):
/// the report goes to `out`, errors to `err` as "cnnbench: error: ..." lines.
/// `stop`, when not null, is polled between steps (set by a signal handler).
/// Returns the exit status (kExit*); never throws.
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
        const std::atomic<bool>* stop = nullptr);

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
