// The program's run-time failures (exit status 1), beside UsageError (flags.h,
// exit status 2).
#pragma once

#include <stdexcept>
#include <string>

namespace cnnbench::bench {

/// A run-time failure with a complete message for the user: no usable device,
/// a failed preflight check, a result file that cannot be written. Exit status 1.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A failure every rank of a job found at the same point from the same gathered
/// facts (a preflight check over all ranks): rank 0 reports it, the others stay
/// silent, and all of them end normally with `exit_code` instead of aborting
/// the job.
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(const std::string& what, int exit_code)
      : std::runtime_error(what), exit_code_(exit_code) {}
  [[nodiscard]] int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace cnnbench::bench
