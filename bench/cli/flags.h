// Command-line flags: parsing argv into a validated Config with the flag table
// (flag_table.h). Flag names follow tf_cnn_benchmarks wherever the meaning is
// the same (--model, --batch_size, --num_batches, ...), so existing command
// lines keep working.
#pragma once

#include <string>

#include "bench/cli/config.h"
#include "bench/cli/flag_table.h"
#include "bench/status.h"

namespace cnnbench::bench {

/// What the command line asks for.
enum class FlagsAction {
  Run,      ///< train (or --list_models, see Config::list_models)
  Help,     ///< --help: print FlagsResult::text, exit 0
  Version,  ///< --version: print FlagsResult::text, exit 0
};

/// The outcome of parse_flags.
struct FlagsResult {
  FlagsAction action = FlagsAction::Run;
  Config config;     ///< validated; defaults that depend on the device stay unset
  std::string text;  ///< the help or version text for Help and Version
};

/// Parses and validates argv (argv[0] is the program name). Accepts
/// `--flag=value` and `--flag value`; booleans as `--flag` or `--flag=true|false`
/// (also 1|0, yes|no, on|off). A flag given twice takes the last value. Flags not
/// given take the table's defaults, except those that depend on the device.
///
/// Validation builds the model (models::build_model) to check --model and the
/// model's smallest --image_size, so it takes a few milliseconds.
///
/// Throws UsageError for every invalid input: unknown flag, malformed number, value
/// out of range, unknown model, image too small for the model, conflicting flags.
FlagsResult parse_flags(int argc, const char* const* argv);

/// The --help text (also part of FlagsResult for --help).
std::string help_text();

}  // namespace cnnbench::bench
