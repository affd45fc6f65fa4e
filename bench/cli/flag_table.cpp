#include "bench/cli/flag_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <utility>

#include "bench/report/emf.h"
#include "bench/status.h"
#include "bench/telemetry/sampler.h"
#include "models/zoo.h"

namespace cnnbench::bench {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

// ---------------------------------------------------------------- value parsers

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

/// "1,2,4,8": distinct GPU counts in increasing order.
std::vector<int> parse_gpu_counts(std::string_view flag, std::string_view text) {
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
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 1 || v > 1024 ||
        (!counts.empty() && v <= counts.back())) {
      fail(flag, text, kValid);
    }
    counts.push_back(v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return counts;
}

// ---------------------------------------------------------------- bindings

/// An integer member (int or std::optional<int>) in [lo, hi]. `valid` says what
/// is valid; empty = "an integer from lo to hi" (or "of at least lo").
template <typename M>
FlagBinding integer(M Config::*member, std::string name, int64_t lo, int64_t hi, std::string valid = {}) {
  if (valid.empty()) {
    valid = hi == kIntMax ? "an integer of at least " + std::to_string(lo)
                          : "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  }
  FlagBinding b;
  b.set = [member, name, lo, hi, valid](std::string_view text, Config& c) {
    c.*member = static_cast<int>(parse_integer(name, text, lo, hi, valid));
  };
  b.get = [member](const Config& c) -> ordered_json {
    if constexpr (std::is_same_v<M, int>) {
      return c.*member;
    } else {
      return c.*member ? ordered_json(*(c.*member)) : ordered_json(nullptr);
    }
  };
  b.tokens = {std::to_string(lo), std::to_string(lo - 1), std::to_string(hi), std::to_string(hi + 1)};
  return b;
}

/// A decimal number stored by `store`, valid when `ok` accepts it; `valid` says
/// what is valid.
FlagBinding number(std::string name, std::function<bool(double)> ok, std::string valid,
                   std::function<void(Config&, double)> store,
                   std::function<ordered_json(const Config&)> load, std::vector<std::string> tokens) {
  FlagBinding b;
  b.set = [name, ok = std::move(ok), valid, store = std::move(store)](std::string_view text, Config& c) {
    const double v = parse_number(name, text, valid);
    if (!ok(v)) fail(name, text, "expected " + valid);
    store(c, v);
  };
  b.get = [load = std::move(load)](const Config& c) -> ordered_json {
    const ordered_json v = load(c);
    if (v.is_number_float() && !std::isfinite(v.get<double>())) return nullptr;
    return v;
  };
  b.tokens = std::move(tokens);
  return b;
}

/// A bool or std::optional<bool> member.
template <typename M>
FlagBinding boolean(M Config::*member, std::string name) {
  FlagBinding b;
  b.set = [member, name](std::string_view text, Config& c) { c.*member = parse_bool(name, text); };
  b.get = [member](const Config& c) -> ordered_json {
    if constexpr (std::is_same_v<M, bool>) {
      return c.*member;
    } else {
      return c.*member ? ordered_json(*(c.*member)) : ordered_json(nullptr);
    }
  };
  b.tokens = {"true", "false", "0", "1", "yes", "off"};
  b.boolean = true;
  return b;
}

template <typename E>
struct Choice {
  std::string_view name;
  E value;
};

/// One of `choices`, stored in an E or std::optional<E> member.
template <typename M, typename E, size_t N>
FlagBinding choice(M Config::*member, std::string name, const Choice<E> (&choices)[N]) {
  std::vector<std::pair<std::string, E>> list;
  std::string valid;
  for (const auto& c : choices) {
    list.emplace_back(std::string(c.name), c.value);
    valid += valid.empty() ? "" : ", ";
    valid += c.name;
  }
  FlagBinding b;
  b.set = [member, name, list, valid](std::string_view text, Config& c) {
    for (const auto& [n, v] : list) {
      if (text == n) {
        c.*member = v;
        return;
      }
    }
    fail(name, text, "expected one of " + valid);
  };
  b.get = [member, list](const Config& c) -> ordered_json {
    const auto name_of = [&list](E v) -> ordered_json {
      for (const auto& [n, e] : list) {
        if (e == v) return n;
      }
      return nullptr;
    };
    if constexpr (std::is_same_v<M, E>) {
      return name_of(c.*member);
    } else {
      return c.*member ? name_of(*(c.*member)) : ordered_json(nullptr);
    }
  };
  for (const auto& [n, v] : list) b.tokens.push_back(n);
  return b;
}

FlagBinding text(std::string Config::*member, std::function<void(std::string_view name, std::string_view)> check,
                 std::string name) {
  FlagBinding b;
  b.set = [member, name, check = std::move(check)](std::string_view value, Config& c) {
    if (check) check(name, value);
    c.*member = std::string(value);
  };
  b.get = [member](const Config& c) -> ordered_json { return c.*member; };
  return b;
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
constexpr Choice<ListFormat> kListFormats[] = {{"table", ListFormat::Table}, {"json", ListFormat::Json}};

// ---------------------------------------------------------------- checks of text values

void check_model(std::string_view name, std::string_view value) {
  try {
    (void)models::model_info(std::string(value));
  } catch (const std::invalid_argument&) {
    fail(name, value, "unknown model; valid: " + models::model_names());
  }
}

void check_metrics_namespace(std::string_view name, std::string_view value) {
  if (auto why = check_emf_namespace(value)) fail(name, value, "invalid: " + *why);
}

void check_result_path(std::string_view name, std::string_view path) {
  if (path.empty()) fail(name, path, "expected a file path");
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    fail(name, path, "directory " + parent.string() + " does not exist");
  }
  if (std::filesystem::path(path).filename().empty() || std::filesystem::is_directory(path, ec)) {
    fail(name, path, "is a directory; expected a file path");
  }
}

// ---------------------------------------------------------------- the table

std::vector<Flag> make_table() {
  const auto positive = [](double v) { return v > 0; };
  std::vector<Flag> t;
  // What the model trains. Defaults are tf_cnn_benchmarks' where a flag of the
  // same name exists on the GPU; smaller on the CPU so that a default CPU run
  // ends in minutes.
  t.push_back({.name = "model", .value_name = "NAME", .help = "model of the zoo (see --list_models)",
               .default_value = {.gpu = "resnet50"}, .default_help = "{}", .key = "model",
               .bind = text(&Config::model, check_model, "model")});
  t.back().bind.tokens = {"resnet50", "vgg16", "inception3", "mobilenet_v2", "trivial"};
  t.push_back({.name = "batch_size", .value_name = "INT", .help = "images per device per step",
               .default_value = {.gpu = "64", .cpu = "16"}, .default_help = "{}", .key = "batch_size",
               .bind = integer(&Config::batch_size, "batch_size", 1, kMaxBatchSize)});
  t.push_back({.name = "num_batches", .value_name = "INT", .help = "timed steps",
               .default_value = {.gpu = "100", .cpu = "20"}, .default_help = "{}", .key = "num_batches",
               .bind = integer(&Config::num_batches, "num_batches", 1, kIntMax)});
  t.push_back({.name = "num_warmup_batches", .value_name = "INT", .help = "untimed steps before them",
               .default_value = {.gpu = "10", .cpu = "2"}, .default_help = "{}", .key = "num_warmup_batches",
               .bind = integer(&Config::num_warmup_batches, "num_warmup_batches", 0, kIntMax)});
  t.push_back({.name = "duration", .value_name = "SECONDS",
               .help = "run timed steps for this long instead of --num_batches", .key = "duration_s",
               .bind = number("duration", positive, "a number of seconds greater than 0",
                              [](Config& c, double v) { c.duration_s = v; },
                              [](const Config& c) { return c.duration_s ? ordered_json(*c.duration_s) : nullptr; },
                              {"0", "0.5", "-5", "1e30", "nan", "inf"})});
  t.push_back({.name = "display_every", .value_name = "INT", .help = "print a step line every INT timed steps",
               .default_value = {.gpu = "10"}, .default_help = "{}", .key = "display_every",
               .bind = integer(&Config::display_every, "display_every", 1, kIntMax)});
  t.push_back({.name = "forward_only", .help = "time inference (forward pass and loss) instead of training",
               .default_value = {.gpu = "false"}, .key = "forward_only",
               .bind = boolean(&Config::forward_only, "forward_only")});
  t.push_back({.name = "image_size", .value_name = "PIXELS", .help = "square input side",
               .default_help = "the model's own (224, 299)", .key = "image_size",
               .bind = integer(&Config::image_size, "image_size", 1, kMaxImageSize)});
  t.push_back({.name = "num_classes", .value_name = "INT", .help = "classes of the synthetic labels and the last layer",
               .default_value = {.gpu = "1000"}, .default_help = "{}", .key = "num_classes",
               .bind = integer(&Config::num_classes, "num_classes", 2, 1000000)});
  FlagBinding seed;
  seed.set = [](std::string_view text, Config& c) {
    uint64_t v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || ptr != end) {
      fail("seed", text, "expected an integer from 0 to 18446744073709551615");
    }
    c.seed = v;
  };
  seed.get = [](const Config& c) -> ordered_json { return c.seed; };
  seed.tokens = {"0", "-1", "18446744073709551615", "18446744073709551616"};
  t.push_back({.name = "seed", .value_name = "INT", .help = "seed of the weights and the synthetic batch",
               .default_value = {.gpu = "1234"}, .default_help = "{}", .key = "seed", .bind = seed});
  // Numerics.
  t.push_back({.name = "precision", .value_name = "fp32|tf32|fp16|bf16",
               .default_value = {.gpu = "fp16", .cpu = "fp32"}, .default_help = "{}", .key = "precision",
               .bind = choice(&Config::precision, "precision", kPrecisions)});
  t.push_back({.name = "use_fp16", .help = "tf_cnn_benchmarks' spelling of --precision=fp16",
               .bind = boolean(&Config::use_fp16, "use_fp16")});
  t.push_back({.name = "data_format", .value_name = "NHWC|NCHW", .help = "activation layout",
               .default_value = {.gpu = "NHWC"}, .default_help = "{}", .key = "data_format",
               .bind = choice(&Config::data_format, "data_format", kDataFormats)});
  t.push_back({.name = "learning_rate", .value_name = "FLOAT", .help = "SGD learning rate",
               .default_value = {.gpu = "0.01"}, .default_help = "{}", .key = "optimizer.learning_rate",
               .bind = number("learning_rate", positive, "a finite number greater than 0",
                              [](Config& c, double v) { c.optimizer.learning_rate = static_cast<float>(v); },
                              [](const Config& c) { return ordered_json(c.optimizer.learning_rate); },
                              {"0", "-0.1", "0.1", "1e30", "nan", "inf"})});
  t.push_back({.name = "momentum", .value_name = "FLOAT", .help = "SGD momentum in [0, 1)",
               .default_value = {.gpu = "0.9"}, .default_help = "{}", .key = "optimizer.momentum",
               .bind = number("momentum", [](double v) { return v >= 0 && v < 1; }, "a number in [0, 1)",
                              [](Config& c, double v) { c.optimizer.momentum = static_cast<float>(v); },
                              [](const Config& c) { return ordered_json(c.optimizer.momentum); },
                              {"0", "0.9", "1", "-0.5"})});
  t.push_back({.name = "weight_decay", .value_name = "FLOAT", .help = "L2 weight decay",
               .default_value = {.gpu = "0.0001"}, .default_help = "{}", .key = "optimizer.weight_decay",
               .bind = number("weight_decay", [](double v) { return v >= 0; }, "a finite number of at least 0",
                              [](Config& c, double v) { c.optimizer.weight_decay = static_cast<float>(v); },
                              [](const Config& c) { return ordered_json(c.optimizer.weight_decay); },
                              {"0", "5e-4", "-1e-4"})});
  // Devices.
  t.push_back({.name = "device", .value_name = "auto|cpu|gpu",
               .help = "auto: the GPUs when there are any, else the CPU", .default_value = {.gpu = "auto"},
               .key = "device", .bind = choice(&Config::device, "device", kDevices)});
  t.push_back({.name = "num_gpus", .value_name = "INT", .help = "GPUs to use", .default_value = {.gpu = "0"},
               .default_help = "{} = every allocated GPU", .key = "num_gpus",
               .bind = integer(&Config::num_gpus, "num_gpus", 0, 1024, "an integer from 0 (every GPU) to 1024")});
  t.push_back({.name = "num_threads", .value_name = "INT", .help = "CPU threads", .default_value = {.gpu = "0"},
               .default_help = "{} = the OpenMP runtime's choice", .key = "num_threads",
               .bind = integer(&Config::num_threads, "num_threads", 0, 4096,
                               "an integer from 0 (the OpenMP runtime's choice) to 4096")});
  t.push_back({.name = "cuda_graph", .help = "capture the step in a CUDA graph and replay it",
               .default_value = {.gpu = "true"}, .default_help = "{} (=false: off)", .key = "cuda_graph",
               .bind = boolean(&Config::cuda_graph, "cuda_graph")});
  t.push_back({.name = "cudnn_autotune", .help = "time cuDNN engine candidates once per shape",
               .default_value = {.gpu = "true"}, .default_help = "{} (=false: off)", .key = "cudnn_autotune",
               .bind = boolean(&Config::cudnn_autotune, "cudnn_autotune")});
  t.push_back({.name = "cudnn_runtime_compiled_engines",
               .help = "let runtime-compiled cuDNN engines (NVRTC, seconds each) compete in autotuning",
               .default_value = {.gpu = "false"}, .default_help = "{} (they run only where nothing else does)",
               .key = "cudnn_runtime_compiled_engines",
               .bind = boolean(&Config::cudnn_runtime_compiled_engines, "cudnn_runtime_compiled_engines")});
  t.push_back({.name = "plan_cache", .value_name = "PATH",
               .help = "file of the chosen cuDNN engine per shape, keyed by GPU model and cuDNN version: "
                       "read at set-up, rewritten after",
               .key = "plan_cache", .bind = text(&Config::plan_cache, check_result_path, "plan_cache")});
  t.push_back({.name = "check_every", .value_name = "INT",
               .help = "also check every INT timed steps that all replicas' parameters are identical",
               .default_value = {.gpu = "0"}, .default_help = "{} = at the end only", .key = "check_every",
               .bind = integer(&Config::check_every, "check_every", 0, 1000000000)});
  t.push_back({.name = "verify", .help = "before warm-up, check one training step on each GPU against the CPU backend",
               .default_value = {.gpu = "false"}, .key = "verify", .bind = boolean(&Config::verify, "verify")});
  t.push_back({.name = "allreduce_bucket_mb", .value_name = "MIB", .help = "gradient all-reduce bucket size",
               .default_value = {.gpu = "25"}, .default_help = "{} (first bucket 1)", .key = "allreduce_bucket_mb",
               .bind = number("allreduce_bucket_mb", [](double v) { return v > 0 && v <= 4096; },
                              "a number of MiB greater than 0 and at most 4096",
                              [](Config& c, double v) { c.allreduce_bucket_mb = v; },
                              [](const Config& c) { return ordered_json(c.allreduce_bucket_mb); },
                              {"0", "0.5", "4096", "4097"})});
  FlagBinding sweep;
  sweep.set = [](std::string_view text, Config& c) { c.scaling_sweep = parse_gpu_counts("scaling_sweep", text); };
  sweep.get = [](const Config& c) -> ordered_json { return c.scaling_sweep; };
  sweep.tokens = {"1,2,4", "2,1", "1,,2", "0"};
  t.push_back({.name = "scaling_sweep", .value_name = "N,N,...",
               .help = "run on the first N GPUs for each N (e.g. 1,2,4,8) and print a table",
               .key = "scaling_sweep", .bind = sweep});
  t.push_back({.name = "baseline_images_per_sec", .value_name = "FLOAT",
               .help = "one-GPU images/sec to compute scaling efficiency against", .key = "baseline_images_per_sec",
               .bind = number("baseline_images_per_sec", positive, "a number of images/sec greater than 0",
                              [](Config& c, double v) { c.baseline_images_per_sec = v; },
                              [](const Config& c) {
                                return c.baseline_images_per_sec ? ordered_json(*c.baseline_images_per_sec)
                                                                 : ordered_json(nullptr);
                              },
                              {"0", "2900.5"})});
  // Output.
  t.push_back({.name = "list_models", .help = "print the model zoo and exit", .default_value = {.gpu = "false"},
               .key = "list_models", .bind = boolean(&Config::list_models, "list_models")});
  t.push_back({.name = "format", .value_name = "table|json", .help = "output format of --list_models",
               .default_value = {.gpu = "table"}, .default_help = "{}", .key = "list_format",
               .bind = choice(&Config::list_format, "format", kListFormats)});
  t.push_back({.name = "log_format", .value_name = "text|emf|both", .help = "progress output",
               .default_help = "both inside ECS, else text", .key = "log_format",
               .bind = choice(&Config::log_format, "log_format", kLogFormats)});
  t.push_back({.name = "metrics_namespace", .value_name = "NAME", .help = "CloudWatch namespace of the EMF metrics",
               .default_value = {.gpu = "cnnbench"}, .default_help = "{}", .key = "metrics_namespace",
               .bind = text(&Config::metrics_namespace, check_metrics_namespace, "metrics_namespace")});
  t.push_back({.name = "result_json", .value_name = "PATH", .help = "write the whole result as JSON to PATH",
               .key = "result_json", .bind = text(&Config::result_json, check_result_path, "result_json")});
  FlagBinding interval = integer(&Config::telemetry_interval_ms, "telemetry_interval_ms", 0, kIntMax,
                                 "0 (GPU telemetry off) or 50 to 60000 milliseconds");
  interval.set = [check = interval.set](std::string_view text, Config& c) {
    check(text, c);
    if (auto why = telemetry::check_interval_ms(c.telemetry_interval_ms)) throw UsageError(*why);
  };
  interval.tokens = {"0", "10", "50", "60000", "60001", "-1"};
  t.push_back({.name = "telemetry_interval_ms", .value_name = "MS", .help = "NVML sampling interval on GPU runs",
               .default_value = {.gpu = "1000"}, .default_help = "{}, 0 = off", .key = "telemetry_interval_ms",
               .bind = interval});
  t.push_back({.name = "verbose", .help = "print more detail (the memory by purpose)",
               .default_value = {.gpu = "false"}, .key = "verbose", .bind = boolean(&Config::verbose, "verbose")});
  t.push_back({.name = "version", .help = "print the version and exit", .bind = boolean(&Config::version, "version")});
  return t;
}

std::string replace_value(std::string text, const std::string& value) {
  const size_t at = text.find("{}");
  if (at != std::string::npos) text.replace(at, 2, value);
  return text;
}

/// A libFuzzer dictionary line: the token quoted, with \\, \" and bytes outside
/// printable ASCII escaped as \xNN.
std::string dictionary_line(std::string_view token) {
  std::string line = "\"";
  for (const char ch : token) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      line += '\\';
      line += ch;
    } else if (byte < 0x20 || byte >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      line += "\\x";
      line += kHex[byte >> 4];
      line += kHex[byte & 0xf];
    } else {
      line += ch;
    }
  }
  return line + "\"\n";
}

}  // namespace

const std::vector<Flag>& flag_table() {
  static const std::vector<Flag> table = make_table();  // immutable once built
  return table;
}

const Flag& flag(std::string_view name) {
  for (const Flag& f : flag_table()) {
    if (f.name == name) return f;
  }
  throw std::logic_error("no flag --" + std::string(name) + " in the flag table");
}

std::string spelled(std::string_view name, std::string_view value) {
  std::string s = "--";
  s += name;
  s += '=';
  s += value.empty() ? std::string_view("''") : value;
  return s;
}

void fail(std::string_view name, std::string_view value, std::string_view what) {
  throw UsageError(spelled(name, value) + ": " + std::string(what));
}

std::string help_line(const Flag& f) {
  if (f.default_help.empty()) return f.help;
  const FlagDefault& d = f.default_value;
  const std::string value = d.per_device() ? d.gpu + " on GPU, " + d.cpu + " on CPU" : d.gpu;
  return (f.help.empty() ? "" : f.help + "; ") + "default " + replace_value(f.default_help, value);
}

void apply_defaults(Config& config, bool gpu_run, bool per_device) {
  for (const Flag& f : flag_table()) {
    if (config.given.contains(f.name) || f.default_value.gpu.empty()) continue;
    if (f.default_value.per_device() && !per_device) continue;
    f.bind.set(f.default_value.on(gpu_run), config);
  }
}

nlohmann::ordered_json config_echo(const Config& resolved) {
  ordered_json echo = ordered_json::object();
  for (const Flag& f : flag_table()) {
    if (f.key.empty()) continue;
    const size_t dot = f.key.find('.');
    if (dot == std::string::npos) {
      echo[f.key] = f.bind.get(resolved);
    } else {
      echo[f.key.substr(0, dot)][f.key.substr(dot + 1)] = f.bind.get(resolved);
    }
  }
  return echo;
}

std::vector<std::string> defaulted_keys(const Config& config) {
  std::vector<std::string> keys;
  for (const Flag& f : flag_table()) {
    if (!f.key.empty() && !config.given.contains(f.name)) keys.push_back(f.key);
  }
  return keys;
}

std::string fuzz_dictionary() {
  std::string dict =
      "# libFuzzer dictionary for fuzz_flags (-dict=tests/fuzz/flags.dict); also the token\n"
      "# source of the replay test. Made from the flag table (bench/cli/flag_table.cpp):\n"
      "# tests/bench/cli/flag_table_test.cpp fails when the two differ and rewrites this\n"
      "# file when CNNBENCH_WRITE_FUZZ_DICTIONARY=1 is set.\n";
  std::vector<std::string> tokens;
  const auto add = [&tokens](const std::string& token) {
    if (std::find(tokens.begin(), tokens.end(), token) == tokens.end()) tokens.push_back(token);
  };
  for (const Flag& f : flag_table()) {
    add("--" + f.name);
    add("--" + f.name + "=");
  }
  add("--help");
  add("--help=");
  for (const Flag& f : flag_table()) {
    for (const auto& token : f.bind.tokens) add(token);
  }
  for (const auto& model : models::zoo()) add(model.name);
  for (const std::string token : {"nan", "inf", "1e30", "\n", "="}) add(token);
  for (const auto& token : tokens) dict += dictionary_line(token);
  return dict;
}

}  // namespace cnnbench::bench
