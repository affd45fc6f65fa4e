// Clean stops: SIGTERM (docker stop, ECS StopTask, AWS Batch termination) and
// SIGINT (Ctrl-C) ask the trainer to stop between steps, so that the summary of
// the steps done is still printed, flushed and written to --result_json.
#pragma once

#include <signal.h>

#include <atomic>
#include <string>

namespace cnnbench::bench {

/// While alive, SIGTERM and SIGINT set a stop flag instead of killing the
/// process; the destructor restores the handlers that were there before.
///
/// The first stop signal sets the flag, records which signal it was and notes on
/// stderr that the run will stop after the current step. A second signal of the
/// same kind while stopping (Ctrl-C pressed twice) ends the process at once with
/// 128 + its number; a different second signal is ignored (the stop is already
/// under way). The handler only touches lock-free atomics and calls write(2) and
/// _exit(2), which are async-signal-safe (POSIX.1-2017, 2.4.3).
///
/// Only one StopSignals may exist at a time (the handler has one flag to set).
class StopSignals {
 public:
  /// Installs the handlers (sigaction, SA_RESTART so that interrupted system calls
  /// in libraries resume). Throws std::logic_error when another StopSignals is alive,
  /// std::system_error when sigaction fails.
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// The flag the trainer polls between steps (run()'s `stop` argument).
  [[nodiscard]] const std::atomic<bool>& stop_flag() const;
  [[nodiscard]] bool stop_requested() const;
  /// The first stop signal received (SIGTERM or SIGINT), 0 when none.
  [[nodiscard]] int signal_number() const;
  /// The exit status a shell reports for that signal: 128 + its number (143 for
  /// SIGTERM, 130 for SIGINT); 0 when no signal was received.
  [[nodiscard]] int exit_code() const;
  /// "SIGTERM", "SIGINT", or "" when none.
  [[nodiscard]] std::string signal_name() const;

 private:
  struct sigaction previous_term_ {};
  struct sigaction previous_int_ {};
};

}  // namespace cnnbench::bench
