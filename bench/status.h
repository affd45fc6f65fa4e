// How the program ends: its error types, its exit statuses, and the one place
// where an error becomes a line on stderr and an exit status. A leaf: every
// room of bench/ may include it, and it includes nothing of ours.
#pragma once

#include <exception>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

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
/// The replica check found a GPU (or CPU rank) whose parameters differ from the
/// others' (run/replica_check.h); the summary was printed.
inline constexpr int kExitReplicaMismatch = 4;
/// --verify found a GPU whose training step disagrees with the CPU backend
/// beyond the tolerance (run/verify.h); nothing was trained.
inline constexpr int kExitVerifyFailed = 5;
/// The status a stopped run exits with when the signal is not known here: a rank
/// stopped because another rank of the job was signalled. Every launcher we
/// know (mpirun, srun, docker stop, ECS) asks a job to end with SIGTERM.
inline constexpr int kExitTerminated = 128 + 15;

/// The process's exit status for a run's `status`: kExitInterrupted becomes
/// `signal_exit_code` (128 + the signal's number: 143 SIGTERM, 130 SIGINT) or
/// kExitTerminated when no signal reached this process; anything else stays.
constexpr int exit_status_for(int status, int signal_exit_code) {
  if (status != kExitInterrupted) return status;
  return signal_exit_code != 0 ? signal_exit_code : kExitTerminated;
}

/// A flag, a combination of flags or an environment value is invalid. what()
/// names the input, the value given and what is valid, e.g. "--batch_size=0:
/// expected an integer from 1 to 65536". Exit status 2.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

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

/// The exit status an error ends the program with: kExitUsage for a UsageError,
/// CollectiveError::exit_code(), else kExitFailure.
int exit_code_for(const std::exception& error);

/// Flushes `out` (so that the report so far comes first), then writes to `err`
/// and flushes it: "cnnbench: error: <where>: <what>" (without "<where>: " when
/// `where` is empty, e.g. "rank 1 of 2 on host h" or "GPU 1 (worker 1 of 2)").
/// A UsageError reported for the whole program (`where` empty) adds the line
/// "see cnnbench --help". Returns exit_code_for(error).
int print_error(const std::exception& error, std::ostream& out, std::ostream& err,
                std::string_view where = {});

}  // namespace cnnbench::bench
