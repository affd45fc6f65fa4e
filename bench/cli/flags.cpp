#include "bench/cli/flags.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "bench/report/emf.h"
#include "bench/telemetry/sampler.h"
#include "models/zoo.h"

namespace cnnbench::bench {
namespace {

/// One flag as the user spelled it, for messages: "--batch_size=abc".
std::string spelled(std::string_view flag, std::string_view value) {
  std::string s = "--";
  s += flag;
  s += '=';
  s += value.empty() ? std::string_view("''") : value;
  return s;
}

[[noreturn]] void fail(std::string_view flag, std::string_view value, std::string_view what) {
  throw UsageError(spelled(flag, value) + ": " + std::string(what));
}

/// Integers with std::from_chars: no locale, no leading '+' or spaces, no trailing
/// characters, and overflow reported instead of wrapped.
int64_t parse_integer(std::string_view flag, std::string_view text, int64_t lo, int64_t hi,
                      std::string_view valid) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) {
    fail(flag, text, "expected " + std::string(valid));
  }
  return v;
}

int parse_int(std::string_view flag, std::string_view text, int lo, int hi, std::string_view valid) {
  return static_cast<int>(parse_integer(flag, text, lo, hi, valid));
}

uint64_t parse_seed(std::string_view text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    fail("seed", text, "expected an integer from 0 to 18446744073709551615");
  }
  return v;
}

/// A finite decimal number; the range check is the caller's (it knows what is valid).
double parse_number(std::string_view flag, std::string_view text, std::string_view valid) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) {
    fail(flag, text, "expected " + std::string(valid));
  }
  return v;
}

bool parse_bool(std::string_view flag, std::string_view text) {
  // CLI11 stores "true" for a bare boolean flag.
  for (std::string_view t : {"true", "1", "yes", "on"}) {
    if (text == t) return true;
  }
  for (std::string_view f : {"false", "0", "no", "off"}) {
    if (text == f) return false;
  }
  fail(flag, text, "expected true or false (or 1/0, yes/no, on/off)");
}

template <typename E>
struct Choice {
  std::string_view name;
  E value;
};

template <typename E, size_t N>
E parse_choice(std::string_view flag, std::string_view text, const Choice<E> (&choices)[N]) {
  std::string valid;
  for (const auto& c : choices) {
    if (text == c.name) return c.value;
    valid += valid.empty() ? "" : ", ";
    valid += c.name;
  }
  fail(flag, text, "expected one of " + valid);
}

constexpr Choice<DeviceChoice> kDevices[] = {
    {"auto", DeviceChoice::Auto}, {"cpu", DeviceChoice::Cpu}, {"gpu", DeviceChoice::Gpu}};
constexpr Choice<kernels::Precision> kPrecisions[] = {{"fp32", kernels::Precision::Fp32},
                                                      {"tf32", kernels::Precision::Tf32},
                                                      {"fp16", kernels::Precision::Fp16},
                                                      {"bf16", kernels::Precision::Bf16}};
constexpr Choice<kernels::DataFormat> kDataFormats[] = {{"NHWC", kernels::DataFormat::NHWC},
                                                        {"NCHW", kernels::DataFormat::NCHW}};
constexpr Choice<LogFormat> kLogFormats[] = {
    {"text", LogFormat::Text}, {"emf", LogFormat::Emf}, {"both", LogFormat::Both}};
constexpr Choice<ListFormat> kListFormats[] = {{"table", ListFormat::Table},
                                               {"json", ListFormat::Json}};

/// The CLI11 application with every flag bound to a string, so that all conversion
/// and range errors come from this file with one message style.
class FlagTable {
 public:
  FlagTable() : app_("Trains a CNN on synthetic ImageNet-shaped data and reports images/sec.",
                     "cnnbench") {
    app_.get_formatter()->column_width(36);
    app_.footer(
        "Examples:\n"
        "  cnnbench --model=resnet50 --batch_size=256 --precision=fp16\n"
        "  cnnbench --device=cpu --model=resnet50 --batch_size=16 --num_batches=20\n"
        "  cnnbench --list_models --format=json\n"
        "Values as --flag=value or --flag value; booleans as --flag or --flag=true|false.");
    // What the model trains.
    option("model", "NAME", "model of the zoo (see --list_models); default resnet50");
    option("batch_size", "INT", "images per device per step; default 64 on GPU, 16 on CPU");
    option("num_batches", "INT", "timed steps; default 100 on GPU, 20 on CPU");
    option("num_warmup_batches", "INT", "untimed steps before them; default 10 on GPU, 2 on CPU");
    option("duration", "SECONDS", "run timed steps for this long instead of --num_batches");
    option("display_every", "INT", "print a step line every INT timed steps; default 10");
    flag("forward_only", "time inference (forward pass and loss) instead of training");
    option("image_size", "PIXELS", "square input side; default the model's own (224, 299)");
    option("num_classes", "INT", "classes of the synthetic labels and the last layer; default 1000");
    option("seed", "INT", "seed of the weights and the synthetic batch; default 1234");
    // Numerics.
    option("precision", "fp32|tf32|fp16|bf16", "default fp16 on GPU, fp32 on CPU");
    flag("use_fp16", "tf_cnn_benchmarks' spelling of --precision=fp16");
    option("data_format", "NHWC|NCHW", "activation layout; default NHWC");
    option("learning_rate", "FLOAT", "SGD learning rate; default 0.01");
    option("momentum", "FLOAT", "SGD momentum in [0, 1); default 0.9");
    option("weight_decay", "FLOAT", "L2 weight decay; default 0.0001");
    // Devices.
    option("device", "auto|cpu|gpu", "auto: the GPUs when there are any, else the CPU");
    option("num_gpus", "INT", "GPUs to use; default 0 = every allocated GPU");
    option("num_threads", "INT", "CPU threads; default 0 = the OpenMP runtime's choice");
    flag("cuda_graph", "capture the step in a CUDA graph and replay it; default true (=false: off)");
    flag("cudnn_autotune", "time cuDNN engine candidates once per shape; default true (=false: off)");
    option("allreduce_bucket_mb", "MIB", "gradient all-reduce bucket size; default 25 (first bucket 1)");
    option("scaling_sweep", "N,N,...", "run on the first N GPUs for each N (e.g. 1,2,4,8) and print a table");
    option("baseline_images_per_sec", "FLOAT", "one-GPU images/sec to compute scaling efficiency against");
    // Output.
    flag("list_models", "print the model zoo and exit");
    option("format", "table|json", "output format of --list_models; default table");
    option("log_format", "text|emf|both", "progress output; default both inside ECS, else text");
    option("metrics_namespace", "NAME", "CloudWatch namespace of the EMF metrics; default cnnbench");
    option("result_json", "PATH", "write the whole result as JSON to PATH");
    option("telemetry_interval_ms", "MS", "NVML sampling interval on GPU runs; default 1000, 0 = off");
    flag("verbose", "print more detail (the memory by purpose)");
    flag("version", "print the version and exit");
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

  /// The value of --name, when given.
  [[nodiscard]] std::optional<std::string> get(const std::string& name) const {
    const auto it = options_.find(name);
    if (it == options_.end() || it->second->count() == 0) return std::nullopt;
    return values_.at(name);
  }
  /// A boolean flag's value; `otherwise` when it was not given.
  [[nodiscard]] bool get_bool(const std::string& name, bool otherwise) const {
    const auto v = get(name);
    return v ? parse_bool(name, *v) : otherwise;
  }

  [[nodiscard]] std::string help() const { return app_.help(); }

 private:
  void option(const std::string& name, const std::string& type, const std::string& description) {
    CLI::Option* o = app_.add_option("--" + name, values_[name], description);
    o->type_name(type)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    options_[name] = o;
  }
  void flag(const std::string& name, const std::string& description) {
    // A string-valued flag keeps "--flag=maybe" for parse_bool to report.
    CLI::Option* o = app_.add_flag("--" + name, values_[name], description);
    o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    options_[name] = o;
  }

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

void validate_model_and_image(Config& c, const std::optional<std::string>& image_size_text) {
  const models::ModelInfo* info = nullptr;
  try {
    info = &models::model_info(c.model);
  } catch (const std::invalid_argument&) {
    fail("model", c.model, "unknown model; valid: " + models::model_names());
  }
  if (!image_size_text) return;
  const int size = *c.image_size;
  models::Graph graph = models::build_model(c.model, c.num_classes);
  try {
    graph.infer_shapes(1, size, size);
  } catch (const std::invalid_argument& e) {
    const int smallest = smallest_image_size(graph, info->default_image_size);
    std::string valid = "too small for " + c.model + " (" + e.what() + ")";
    if (smallest > 0) {
      valid += "; valid: " + std::to_string(smallest) + " to " + std::to_string(kMaxImageSize);
    }
    fail("image_size", *image_size_text, valid);
  }
}

void validate_metrics_namespace(const std::string& ns) {
  if (auto why = check_emf_namespace(ns)) fail("metrics_namespace", ns, "invalid: " + *why);
}

void validate_result_json(const std::string& path) {
  if (path.empty()) fail("result_json", path, "expected a file path");
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    fail("result_json", path, "directory " + parent.string() + " does not exist");
  }
  if (std::filesystem::path(path).filename().empty() || std::filesystem::is_directory(path, ec)) {
    fail("result_json", path, "is a directory; expected a file path");
  }
}

/// "1,2,4,8": distinct GPU counts in increasing order.
std::vector<int> parse_scaling_sweep(std::string_view text) {
  constexpr std::string_view kValid =
      "expected GPU counts from 1 to 1024, comma-separated, increasing, e.g. 1,2,4,8";
  std::vector<int> counts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    int v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 1 ||
        v > 1024 || (!counts.empty() && v <= counts.back())) {
      fail("scaling_sweep", text, kValid);
    }
    counts.push_back(v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return counts;
}

}  // namespace

std::string help_text() { return FlagTable().help(); }

FlagsResult parse_flags(int argc, const char* const* argv) {
  FlagTable flags;
  FlagsResult result;
  if (!flags.parse(argc, argv)) {
    result.action = FlagsAction::Help;
    result.text = flags.help();
    return result;
  }
  if (flags.get_bool("version", false)) {
    result.action = FlagsAction::Version;
    result.text = std::string("cnnbench ") + CNNBENCH_VERSION + "\n";
    return result;
  }

  constexpr int kIntMax = std::numeric_limits<int>::max();
  Config& c = result.config;
  if (auto v = flags.get("model")) c.model = *v;
  if (auto v = flags.get("batch_size")) {
    c.batch_size = parse_int("batch_size", *v, 1, kMaxBatchSize,
                             "an integer from 1 to " + std::to_string(kMaxBatchSize));
  }
  if (auto v = flags.get("num_batches")) {
    c.num_batches = parse_int("num_batches", *v, 1, kIntMax, "an integer of at least 1");
  }
  if (auto v = flags.get("num_warmup_batches")) {
    c.num_warmup_batches =
        parse_int("num_warmup_batches", *v, 0, kIntMax, "an integer of at least 0");
  }
  if (auto v = flags.get("duration")) {
    const double d = parse_number("duration", *v, "a number of seconds greater than 0");
    if (d <= 0) fail("duration", *v, "expected a number of seconds greater than 0");
    if (auto n = flags.get("num_batches")) {
      throw UsageError(spelled("duration", *v) + " and " + spelled("num_batches", *n) +
                       ": give one of them, not both");
    }
    c.duration_s = d;
  }
  if (auto v = flags.get("display_every")) {
    c.display_every = parse_int("display_every", *v, 1, kIntMax, "an integer of at least 1");
  }
  c.forward_only = flags.get_bool("forward_only", c.forward_only);
  if (auto v = flags.get("num_classes")) {
    c.num_classes = parse_int("num_classes", *v, 2, 1000000, "an integer from 2 to 1000000");
  }
  const auto image_size_text = flags.get("image_size");
  if (image_size_text) {
    c.image_size = parse_int("image_size", *image_size_text, 1, kMaxImageSize,
                             "an integer from 1 to " + std::to_string(kMaxImageSize));
  }
  if (auto v = flags.get("seed")) c.seed = parse_seed(*v);

  if (auto v = flags.get("precision")) c.precision = parse_choice("precision", *v, kPrecisions);
  if (auto v = flags.get("use_fp16")) {
    const bool fp16 = parse_bool("use_fp16", *v);
    const bool conflict = c.precision && (fp16 ? *c.precision != kernels::Precision::Fp16
                                               : *c.precision == kernels::Precision::Fp16);
    if (conflict) {
      throw UsageError(spelled("use_fp16", *v) + " conflicts with " +
                       spelled("precision", *flags.get("precision")) +
                       ": --use_fp16 means --precision=fp16; give one of them");
    }
    // tf_cnn_benchmarks' --use_fp16=false means fp32.
    if (!c.precision) c.precision = fp16 ? kernels::Precision::Fp16 : kernels::Precision::Fp32;
  }
  if (auto v = flags.get("data_format")) {
    c.data_format = parse_choice("data_format", *v, kDataFormats);
  }
  if (auto v = flags.get("learning_rate")) {
    const double lr = parse_number("learning_rate", *v, "a finite number greater than 0");
    if (lr <= 0) fail("learning_rate", *v, "expected a finite number greater than 0");
    c.optimizer.learning_rate = static_cast<float>(lr);
  }
  if (auto v = flags.get("momentum")) {
    const double m = parse_number("momentum", *v, "a number in [0, 1)");
    if (m < 0 || m >= 1) fail("momentum", *v, "expected a number in [0, 1)");
    c.optimizer.momentum = static_cast<float>(m);
  }
  if (auto v = flags.get("weight_decay")) {
    const double wd = parse_number("weight_decay", *v, "a finite number of at least 0");
    if (wd < 0) fail("weight_decay", *v, "expected a finite number of at least 0");
    c.optimizer.weight_decay = static_cast<float>(wd);
  }

  if (auto v = flags.get("device")) c.device = parse_choice("device", *v, kDevices);
  if (auto v = flags.get("num_gpus")) {
    c.num_gpus = parse_int("num_gpus", *v, 0, 1024, "an integer from 0 (every GPU) to 1024");
    if (c.device == DeviceChoice::Cpu && c.num_gpus > 1) {
      throw UsageError(spelled("num_gpus", *v) +
                       " conflicts with --device=cpu: a CPU run uses one device per process");
    }
  }
  if (auto v = flags.get("num_threads")) {
    c.num_threads = parse_int("num_threads", *v, 0, 4096,
                              "an integer from 0 (the OpenMP runtime's choice) to 4096");
  }
  c.cuda_graph = flags.get_bool("cuda_graph", c.cuda_graph);
  c.cudnn_autotune = flags.get_bool("cudnn_autotune", c.cudnn_autotune);
  if (auto v = flags.get("allreduce_bucket_mb")) {
    constexpr std::string_view kValid = "a number of MiB greater than 0 and at most 4096";
    const double mb = parse_number("allreduce_bucket_mb", *v, kValid);
    if (!(mb > 0) || mb > 4096) fail("allreduce_bucket_mb", *v, "expected " + std::string(kValid));
    c.allreduce_bucket_mb = mb;
  }
  if (auto v = flags.get("scaling_sweep")) {
    c.scaling_sweep = parse_scaling_sweep(*v);
    if (c.device == DeviceChoice::Cpu) {
      throw UsageError(spelled("scaling_sweep", *v) +
                       " conflicts with --device=cpu: the sweep runs on 1, 2, ... GPUs");
    }
    if (auto n = flags.get("num_gpus")) {
      throw UsageError(spelled("scaling_sweep", *v) + " and " + spelled("num_gpus", *n) +
                       ": give one of them, not both (the sweep sets the GPU count of each run)");
    }
  }
  if (auto v = flags.get("baseline_images_per_sec")) {
    constexpr std::string_view kValid = "a number of images/sec greater than 0";
    const double b = parse_number("baseline_images_per_sec", *v, kValid);
    if (!(b > 0)) fail("baseline_images_per_sec", *v, "expected " + std::string(kValid));
    c.baseline_images_per_sec = b;
  }

  c.list_models = flags.get_bool("list_models", c.list_models);
  if (auto v = flags.get("format")) {
    c.list_format = parse_choice("format", *v, kListFormats);
    if (!c.list_models) {
      fail("format", *v, "applies only to --list_models (training output is set by --log_format)");
    }
  }
  if (auto v = flags.get("log_format")) c.log_format = parse_choice("log_format", *v, kLogFormats);
  if (auto v = flags.get("metrics_namespace")) {
    validate_metrics_namespace(*v);
    c.metrics_namespace = *v;
  }
  if (auto v = flags.get("result_json")) {
    validate_result_json(*v);
    c.result_json = *v;
  }
  if (auto v = flags.get("telemetry_interval_ms")) {
    const int64_t ms = parse_integer("telemetry_interval_ms", *v, 0, kIntMax,
                                     "0 (GPU telemetry off) or 50 to 60000 milliseconds");
    if (auto why = telemetry::check_interval_ms(ms)) throw UsageError(*why);
    c.telemetry_interval_ms = static_cast<int>(ms);
  }
  c.verbose = flags.get_bool("verbose", c.verbose);

  // Last: it needs --model and --num_classes, and builds the graph.
  validate_model_and_image(c, image_size_text);
  return result;
}

}  // namespace cnnbench::bench
