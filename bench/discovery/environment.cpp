#include "bench/discovery/environment.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#ifndef CNNBENCH_VERSION
#define CNNBENCH_VERSION "unknown"
#endif

namespace cnnbench::bench {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

// The value of the first "key : value" line of /proc/cpuinfo whose key is `key`.
std::string cpuinfo_field(std::string_view cpuinfo, std::string_view key) {
  std::istringstream lines{std::string(cpuinfo)};
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim(std::string_view(line).substr(0, colon)) == key) {
      return std::string(trim(std::string_view(line).substr(colon + 1)));
    }
  }
  return "";
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..." (or the
// open module's "... Open Kernel Module for x86_64  535.104.05  Release Build ..."):
// the first word that looks like a dotted version.
std::string nvidia_driver_version(std::string_view text) {
  const size_t start = text.find("NVRM version:");
  if (start == std::string_view::npos) return "";
  text = text.substr(start);
  text = text.substr(0, text.find('\n'));
  std::istringstream words{std::string(text)};
  for (std::string word; words >> word;) {
    const bool dotted = word.find('.') != std::string::npos && std::isdigit(static_cast<unsigned char>(word.front())) != 0 &&
                        word.find_first_not_of("0123456789.") == std::string::npos;
    if (dotted) return word;
  }
  return "";
}

std::string value_or_empty(const EnvLookup& env, const std::string& name) {
  if (!env) return "";
  return env(name).value_or("");
}

std::string pad(std::string_view label) {
  std::string out(label);
  out.resize(13, ' ');
  return out;
}

}  // namespace

EnvironmentSources system_sources() {
  EnvironmentSources s;
  s.env = mpi::process_environment();
  s.read_file = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  s.host_name = [] {
    std::array<char, 256> name{};
    if (gethostname(name.data(), name.size() - 1) != 0) return std::string();
    return std::string(name.data());
  };
  s.online_cores = [] { return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); };
  s.usable_cores = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    return CPU_COUNT(&set);
  };
  return s;
}

Environment collect_environment(const EnvironmentSources& sources, const kernels::GpuEnumeration& gpus,
                                const kernels::LibraryVersions& libraries) {
  Environment e;
  if (sources.host_name) e.host_name = sources.host_name();
  if (sources.online_cores) e.logical_cores = std::max(0, sources.online_cores());
  if (sources.usable_cores) e.usable_cores = std::max(0, sources.usable_cores());
  if (sources.read_file) {
    if (auto cpuinfo = sources.read_file("/proc/cpuinfo")) e.cpu_model = cpuinfo_field(*cpuinfo, "model name");
    if (auto driver = sources.read_file("/proc/driver/nvidia/version")) {
      e.versions.nvidia_driver = nvidia_driver_version(*driver);
    }
  }

  e.ecs_metadata_uri = value_or_empty(sources.env, "ECS_CONTAINER_METADATA_URI_V4");
  e.in_ecs = !e.ecs_metadata_uri.empty();
  e.aws_execution_env = value_or_empty(sources.env, "AWS_EXECUTION_ENV");
  e.aws_region = value_or_empty(sources.env, "AWS_REGION");
  if (e.aws_region.empty()) e.aws_region = value_or_empty(sources.env, "AWS_DEFAULT_REGION");
  e.aws_batch_job_id = value_or_empty(sources.env, "AWS_BATCH_JOB_ID");
  e.fault_flip_bit = value_or_empty(sources.env, "CNNBENCH_FAULT_INJECT_FLIP_BIT");
  if (sources.env) {
    e.nvidia_visible_devices = sources.env("NVIDIA_VISIBLE_DEVICES");
    e.cuda_visible_devices = sources.env("CUDA_VISIBLE_DEVICES");
  }

  e.versions.cnnbench = CNNBENCH_VERSION;
  if (gpus.built_with_cuda) {
    if (gpus.driver_version > 0) e.versions.cuda_driver = kernels::format_cuda_version(gpus.driver_version);
    if (gpus.runtime_version > 0) e.versions.cuda_runtime = kernels::format_cuda_version(gpus.runtime_version);
  }
  e.versions.cudnn = libraries.cudnn;
  e.versions.cublas = libraries.cublas;
  return e;
}

std::vector<std::string> format_environment(const Environment& e) {
  std::vector<std::string> lines;

  std::string where;
  const auto add_where = [&where](const std::string& part) {
    if (!part.empty()) where += (where.empty() ? "" : ", ") + part;
  };
  if (e.in_ecs) add_where("Amazon ECS");
  add_where(e.aws_execution_env);
  if (!e.aws_batch_job_id.empty()) add_where("AWS Batch job " + e.aws_batch_job_id);
  add_where(e.aws_region);
  lines.push_back(pad("Host:") + (e.host_name.empty() ? "unknown" : e.host_name) +
                  (where.empty() ? "" : " (" + where + ")"));

  std::string cpu = (e.cpu_model.empty() ? "unknown model" : e.cpu_model) + ", " +
                    std::to_string(e.logical_cores) + " logical cores";
  if (e.usable_cores > 0 && e.usable_cores != e.logical_cores) {
    cpu += " (" + std::to_string(e.usable_cores) + " usable by this process)";
  }
  lines.push_back(pad("CPU:") + cpu);

  const Versions& v = e.versions;
  std::string versions = "cnnbench " + v.cnnbench;
  const auto add = [&versions](const std::string& name, const std::string& value) {
    if (!value.empty()) versions += ", " + name + " " + value;
  };
  if (!v.nvidia_driver.empty() || !v.cuda_driver.empty()) {
    versions += ", NVIDIA driver " + (v.nvidia_driver.empty() ? std::string("unknown") : v.nvidia_driver) +
                (v.cuda_driver.empty() ? "" : " (CUDA " + v.cuda_driver + ")");
  }
  add("CUDA runtime", v.cuda_runtime);
  add("cuDNN", v.cudnn);
  add("cuBLAS", v.cublas);
  add("NCCL", v.nccl);
  add("oneDNN", v.onednn);
  add("MPI", v.mpi);
  lines.push_back(pad("Versions:") + versions);
  return lines;
}

}  // namespace cnnbench::bench
