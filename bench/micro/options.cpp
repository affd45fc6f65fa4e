#include "bench/micro/options.h"

#include <charconv>
#include <functional>
#include <sstream>

#include "bench/micro/flops.h"
#include "bench/micro/shapes.h"

namespace cnnbench::bench::micro {

namespace {

/// One flag: its name, the value's type and default for the usage text, what it
/// does, and how it stores a value (throwing OptionsError on a bad one).
struct Flag {
  const char* name;
  const char* type;
  const char* default_text;
  const char* help;
  std::function<void(Options&, const std::string&)> set;
};

[[noreturn]] void bad_value(const std::string& name, const std::string& value,
                            const std::string& expected) {
  throw OptionsError("--" + name + "=" + value + ": expected " + expected);
}

int parse_int(const std::string& name, const std::string& value, int lo, int hi) {
  int v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < lo || v > hi) {
    bad_value(name, value, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return v;
}

bool parse_bool(const std::string& name, const std::string& value) {
  if (value == "true" || value == "1" || value == "yes" || value == "on") return true;
  if (value == "false" || value == "0" || value == "no" || value == "off") return false;
  bad_value(name, value, "true or false");
}

int64_t parse_size(const std::string& name, const std::string& value) {
  try {
    return parse_bytes(value);
  } catch (const std::invalid_argument&) {
    bad_value(name, value, "a size in bytes such as 4096, 1K, 64M or 1G");
  }
}

const std::vector<Flag>& flags() {
  static const std::vector<Flag> kFlags = {
      {"models", "LIST", "resnet50",
       "comma-separated zoo models whose layers and kernels are benchmarked, or 'all'",
       [](Options& o, const std::string& v) {
         std::vector<std::string> names;
         std::stringstream in(v);
         for (std::string name; std::getline(in, name, ',');) {
           if (!name.empty()) names.push_back(name);
         }
         if (names.empty()) bad_value("models", v, "a model name, a comma-separated list, or all");
         try {
           o.models = resolve_models(names);
         } catch (const std::invalid_argument& e) {
           throw OptionsError("--models=" + v + ": " + e.what());
         }
       }},
      {"cpu_batch", "N", "32", "images per batch of the CPU layer benchmarks",
       [](Options& o, const std::string& v) { o.cpu_batch = parse_int("cpu_batch", v, 1, 65536); }},
      {"gpu_batch", "N", "256", "images per batch of the GPU layer and kernel benchmarks",
       [](Options& o, const std::string& v) { o.gpu_batch = parse_int("gpu_batch", v, 1, 65536); }},
      {"image_size", "PIXELS", "0", "square input side; 0 = each model's default (224; 299 for inception3)",
       [](Options& o, const std::string& v) { o.image_size = parse_int("image_size", v, 0, 1024); }},
      {"cudnn_autotune", "BOOL", "true",
       "time cuDNN's candidate plans once per convolution and keep the fastest, as the trainer does",
       [](Options& o, const std::string& v) { o.cudnn_autotune = parse_bool("cudnn_autotune", v); }},
      {"warmup", "N", "3", "untimed calls of each layer or kernel after its set-up",
       [](Options& o, const std::string& v) { o.warmup = parse_int("warmup", v, 0, 1000); }},
      {"allreduce_min_bytes", "SIZE", "1K", "smallest all-reduce, bytes per rank (power of two)",
       [](Options& o, const std::string& v) {
         o.allreduce_min_bytes = parse_size("allreduce_min_bytes", v);
       }},
      {"allreduce_max_bytes", "SIZE", "1G",
       "largest all-reduce, bytes per rank; lower it on small machines and in CI",
       [](Options& o, const std::string& v) {
         o.allreduce_max_bytes = parse_size("allreduce_max_bytes", v);
       }},
      {"allreduce_iters", "N", "20", "timed all-reduces per size (the same on every rank)",
       [](Options& o, const std::string& v) {
         o.allreduce_iters = parse_int("allreduce_iters", v, 1, 1000000);
       }},
      {"allreduce_warmup", "N", "5", "untimed all-reduces per size before the timed ones",
       [](Options& o, const std::string& v) {
         o.allreduce_warmup = parse_int("allreduce_warmup", v, 0, 1000000);
       }},
  };
  return kFlags;
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      throw OptionsError("unexpected argument '" + arg + "' (flags are --name=value; see --help)");
    }
    std::string name = arg.substr(2);
    std::string value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      value = args[++i];
    } else if (name == "cudnn_autotune") {
      value = "true";
    } else {
      throw OptionsError("--" + name + " needs a value (--" + name + "=VALUE)");
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags()) {
      if (name == f.name) flag = &f;
    }
    if (flag == nullptr) {
      throw OptionsError("unknown flag --" + name + " (see --help for cnnbench_micro's flags; "
                         "Google Benchmark's own flags start with --benchmark_)");
    }
    flag->set(options, value);
  }
  if (options.allreduce_min_bytes > options.allreduce_max_bytes) {
    throw OptionsError("--allreduce_min_bytes=" + format_bytes(options.allreduce_min_bytes) +
                       " is larger than --allreduce_max_bytes=" +
                       format_bytes(options.allreduce_max_bytes));
  }
  // Every model must fit the image size: shape inference says why when not.
  for (const std::string& model : options.models) {
    try {
      (void)inferred_model(model, 1, options.image_size);
    } catch (const std::invalid_argument& e) {
      throw OptionsError("--image_size=" + std::to_string(options.image_size) + " with model " +
                         model + ": " + e.what());
    }
  }
  if (options.allreduce_min_bytes < 4) {
    throw OptionsError("--allreduce_min_bytes=" + std::to_string(options.allreduce_min_bytes) +
                       ": expected at least 4 (one float)");
  }
  return options;
}

std::string usage_text() {
  std::ostringstream out;
  out << "cnnbench_micro: micro-benchmarks of the zoo's layers, the CUDA backend's kernels and\n"
         "the gradient all-reduce, on Google Benchmark.\n\n"
         "cnnbench_micro flags (Google Benchmark's --benchmark_* flags follow):\n";
  for (const Flag& f : flags()) {
    out << "  --" << f.name << "=" << f.type << "  (default " << f.default_text << ")\n      "
        << f.help << "\n";
  }
  out << "\nBenchmark names:\n"
         "  conv/<cpu|cuda>/<model>/<layer>/<fprop|dgrad|wgrad>/<precision>/<layout>\n"
         "  kernel/cuda/<kernel>/<dtype>[/<layout>]/<model>[/<layer>]   kernel/cuda/copy_d2d/<size>\n"
         "  allreduce/<nccl|mpi>/<in_place|out_of_place>/<size>\n"
         "\nExamples:\n"
         "  cnnbench_micro --benchmark_filter='conv/cpu/' --cpu_batch=8\n"
         "  cnnbench_micro --benchmark_filter='conv/cuda/.*/fp16/NHWC' "
         "--benchmark_out=h200.json --benchmark_out_format=json\n"
         "  cnnbench_micro --models=all --benchmark_filter='conv/cuda/(vgg16|googlenet)/'\n"
         "  cnnbench_micro --benchmark_filter='kernel/cuda/'\n"
         "  mpirun -np 8 cnnbench_micro --benchmark_filter='allreduce/nccl/'\n"
         "  mpirun -np 2 cnnbench_micro --benchmark_filter='allreduce/mpi/' "
         "--allreduce_max_bytes=64M\n"
         "  python3 bench/micro/compare.py before.json after.json\n";
  return out.str();
}

}  // namespace cnnbench::bench::micro
