#include "bench/cli/flags.h"

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "models/zoo.h"

namespace cnnbench::bench {
namespace {

/// The CLI11 application with every flag of the table bound to a string, so
/// that all conversion and range errors come from the table with one message style.
class CommandLine {
 public:
  CommandLine() : app_("Trains a CNN on synthetic ImageNet-shaped data and reports images/sec.", "cnnbench") {
    app_.get_formatter()->column_width(36);
    app_.footer(
        "Examples:\n"
        "  cnnbench --model=resnet50 --batch_size=256 --precision=fp16\n"
        "  cnnbench --device=cpu --model=resnet50 --batch_size=16 --num_batches=20\n"
        "  cnnbench --list_models --format=json\n"
        "Values as --flag=value or --flag value; booleans as --flag or --flag=true|false.");
    for (const Flag& f : flag_table()) {
      // A string-valued boolean keeps "--flag=maybe" for the table to report.
      CLI::Option* o = f.bind.boolean ? app_.add_flag("--" + f.name, values_[f.name], help_line(f))
                                      : app_.add_option("--" + f.name, values_[f.name], help_line(f));
      if (!f.bind.boolean) o->type_name(f.value_name);
      o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      options_[f.name] = o;
    }
  }

  /// Parses argv; CLI11's own errors (unknown flag, missing value) become UsageError.
  /// Returns false when --help was asked for.
  bool parse(int argc, const char* const* argv) {
    try {
      app_.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      return false;
    } catch (const CLI::ParseError& e) {
      throw UsageError(e.what());
    }
    return true;
  }

  /// The value of --name as given, when given.
  [[nodiscard]] std::optional<std::string> get(const std::string& name) const {
    const auto it = options_.find(name);
    if (it == options_.end() || it->second->count() == 0) return std::nullopt;
    return values_.at(name);
  }

  [[nodiscard]] std::string help() const { return app_.help(); }

 private:
  CLI::App app_;
  std::map<std::string, std::string> values_;  // node-based: CLI11 keeps references into it
  std::map<std::string, CLI::Option*> options_;
};

/// The smallest square image `graph` accepts, found by trying sizes upward
/// (shape inference of a zoo model takes microseconds); 0 if none up to `limit`.
int smallest_image_size(models::Graph& graph, int limit) {
  for (int s = 1; s <= limit; ++s) {
    try {
      graph.infer_shapes(1, s, s);
      return s;
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}

void validate_image_size(const Config& c, const std::string& image_size_text) {
  const int size = *c.image_size;
  models::Graph graph = models::build_model(c.model, c.num_classes);
  try {
    graph.infer_shapes(1, size, size);
  } catch (const std::invalid_argument& e) {
    const int smallest = smallest_image_size(graph, models::model_info(c.model).default_image_size);
    std::string valid = "too small for " + c.model + " (" + e.what() + ")";
    if (smallest > 0) {
      valid += "; valid: " + std::to_string(smallest) + " to " + std::to_string(kMaxImageSize);
    }
    fail("image_size", image_size_text, valid);
  }
}

/// The rules between flags; every single value is valid already.
void check_combinations(Config& c, const CommandLine& given) {
  if (auto d = given.get("duration"); d && given.get("num_batches")) {
    throw UsageError(spelled("duration", *d) + " and " + spelled("num_batches", *given.get("num_batches")) +
                     ": give one of them, not both");
  }
  if (c.use_fp16) {
    const bool fp16 = *c.use_fp16;
    const bool conflict = c.precision && (fp16 ? *c.precision != kernels::Precision::Fp16
                                               : *c.precision == kernels::Precision::Fp16);
    if (conflict) {
      throw UsageError(spelled("use_fp16", *given.get("use_fp16")) + " conflicts with " +
                       spelled("precision", *given.get("precision")) +
                       ": --use_fp16 means --precision=fp16; give one of them");
    }
    // tf_cnn_benchmarks' --use_fp16=false means fp32.
    if (!c.precision) c.precision = fp16 ? kernels::Precision::Fp16 : kernels::Precision::Fp32;
    c.given.insert("precision");
  }
  if (auto n = given.get("num_gpus"); n && c.device == DeviceChoice::Cpu && c.num_gpus > 1) {
    throw UsageError(spelled("num_gpus", *n) + " conflicts with --device=cpu: a CPU run uses one device per process");
  }
  if (auto s = given.get("scaling_sweep")) {
    if (c.device == DeviceChoice::Cpu) {
      throw UsageError(spelled("scaling_sweep", *s) + " conflicts with --device=cpu: the sweep runs on 1, 2, ... GPUs");
    }
    if (auto n = given.get("num_gpus")) {
      throw UsageError(spelled("scaling_sweep", *s) + " and " + spelled("num_gpus", *n) +
                       ": give one of them, not both (the sweep sets the GPU count of each run)");
    }
  }
  if (auto v = given.get("verify"); v && c.verify && c.device == DeviceChoice::Cpu) {
    throw UsageError(spelled("verify", *v) +
                     " conflicts with --device=cpu: --verify checks the GPU against the CPU "
                     "backend; a CPU run has no GPU to check");
  }
  if (auto f = given.get("format"); f && !c.list_models) {
    fail("format", *f, "applies only to --list_models (training output is set by --log_format)");
  }
  // Last: it needs --model and --num_classes, and builds the graph.
  if (auto s = given.get("image_size")) validate_image_size(c, *s);
}

}  // namespace

std::string help_text() { return CommandLine().help(); }

FlagsResult parse_flags(int argc, const char* const* argv) {
  CommandLine command_line;
  FlagsResult result;
  if (!command_line.parse(argc, argv)) {
    result.action = FlagsAction::Help;
    result.text = command_line.help();
    return result;
  }
  Config& c = result.config;
  // --version answers before any other flag is checked.
  if (auto v = command_line.get("version")) {
    flag("version").bind.set(*v, c);
    if (c.version) {
      result.action = FlagsAction::Version;
      result.text = std::string("cnnbench ") + CNNBENCH_VERSION + "\n";
      return result;
    }
  }
  for (const Flag& f : flag_table()) {
    if (auto v = command_line.get(f.name)) {
      f.bind.set(*v, c);
      c.given.insert(f.name);
    }
  }
  apply_defaults(c, /*gpu_run=*/true, /*per_device=*/false);
  check_combinations(c, command_line);
  return result;
}

}  // namespace cnnbench::bench
