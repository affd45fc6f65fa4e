// The program: flags → devices → plan → run → report. main() only calls
// run_program(); tests call it with string streams.
#pragma once

#include <atomic>
#include <ostream>

namespace cnnbench::bench {

/// Runs cnnbench with the command line `argv` (argv[0] is the program name):
/// parses and validates the flags, answers --help, --version and --list_models,
/// discovers the devices and the launcher, resolves the plan and runs it (run.h).
/// The report goes to `out`, errors to `err` as "cnnbench: error: ..." lines
/// (status.h). `stop`, when not null, is polled between steps (set by a signal
/// handler). Returns the exit status (kExit*); never throws.
int run_program(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                const std::atomic<bool>* stop = nullptr);

}  // namespace cnnbench::bench
