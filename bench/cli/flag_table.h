// The one table of command-line flags, in the spirit of cutlass's Options:
// each row holds a flag's name, value type and range, default (per device kind
// where it differs), help text and the Config member it sets. Parsing
// (flags.cpp), --help, the result JSON's echo of the resolved flags
// (resolve.cpp) and the fuzz dictionary are all made from it, so a flag is
// written in one place.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/cli/config.h"

namespace cnnbench::bench {

/// Largest accepted --batch_size (images per device): far above what fits in any
/// device's memory at 224×224, low enough to catch typos such as 2560000.
inline constexpr int kMaxBatchSize = 65536;
/// Largest accepted --image_size (pixels per side).
inline constexpr int kMaxImageSize = 1024;

/// A flag's default, written as a value on the command line would be ("64",
/// "fp16", "true"), so that the flag's own parser turns it into the Config
/// member. Empty `gpu`: no default value (the member stays unset, or another
/// rule resolves it: the help text says which).
struct FlagDefault {
  std::string gpu{};  ///< on GPU runs, or on every run when `cpu` is empty
  std::string cpu{};  ///< on CPU runs, when it differs
  [[nodiscard]] bool per_device() const { return !cpu.empty(); }
  [[nodiscard]] const std::string& on(bool gpu_run) const { return gpu_run || cpu.empty() ? gpu : cpu; }
};

/// How a flag's value reaches its Config member and comes back for the echo.
struct FlagBinding {
  /// Parses the value as given and stores it; throws UsageError naming the flag,
  /// the value and what is valid.
  std::function<void(std::string_view text, Config& config)> set;
  /// The member as JSON (null while unset).
  std::function<nlohmann::ordered_json(const Config& config)> get;
  /// Values worth trying: the choices, or the bounds and one step past them.
  std::vector<std::string> tokens;
  bool boolean = false;  ///< "--flag" alone means true; =true|false|1|0|yes|no|on|off
};

/// One command-line flag.
struct Flag {
  std::string name{};        ///< spelled --name
  std::string value_name{};  ///< "INT", "fp32|tf32|fp16|bf16"; empty for a boolean
  std::string help{};        ///< one line, without the default
  FlagDefault default_value{};
  /// How --help states the default; "{}" stands for the value(s) ("64 on GPU, 16
  /// on CPU" for a per-device default). Empty: --help states none.
  std::string default_help{};
  /// The key of the result JSON's "config" object (a Config member's name;
  /// "optimizer.momentum" nests). Empty: not echoed (aliases, --version).
  std::string key{};
  FlagBinding bind{};
};

/// Every flag, in --help order.
const std::vector<Flag>& flag_table();
/// The row of --`name`; throws std::logic_error for a name not in the table.
const Flag& flag(std::string_view name);

/// "--name=value" as the user spelled it, for messages ("''" for an empty value).
std::string spelled(std::string_view name, std::string_view value);
/// Throws UsageError("--name=value: what").
[[noreturn]] void fail(std::string_view name, std::string_view value, std::string_view what);

/// The --help line of `f`: its help, then "; default ..." when it states one.
std::string help_line(const Flag& f);

/// Sets every member whose flag is not in `config.given` and has a default to
/// that default for a GPU run (`gpu_run`) or a CPU run. Per-device defaults
/// only when `per_device` is true (they wait until the device is known).
void apply_defaults(Config& config, bool gpu_run, bool per_device);

/// The result JSON's "config": every echoed flag's value in `resolved`, keyed by
/// Flag::key, in table order.
nlohmann::ordered_json config_echo(const Config& resolved);
/// The keys of the echoed flags that `config` did not get from the command line.
std::vector<std::string> defaulted_keys(const Config& config);

/// A libFuzzer dictionary for the flag parser: every flag as "--name" and
/// "--name=", every binding's tokens, the model names and a few separators.
std::string fuzz_dictionary();

}  // namespace cnnbench::bench
