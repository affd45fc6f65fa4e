#include "bench/report/result_json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "bench/report/rank_figures.h"
#include "bench/report/sweep_table.h"
#include "bench/telemetry/telemetry_json.h"

namespace cnnbench::bench {
namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json number(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

ordered_json optional_string(const std::optional<std::string>& value) {
  if (!value) return nullptr;
  return *value;
}

// "2026-11-20T22:21:16.123Z"
std::string iso8601_utc(int64_t ms) {
  const auto seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  char millis[8];
  std::snprintf(millis, sizeof millis, ".%03dZ", static_cast<int>(ms % 1000));
  return std::string(text, n) + millis;
}

ordered_json run_json(const RunInfo& i) {
  return ordered_json{
      {"model", i.model},
      {"image_size", i.image_size},
      {"num_classes", i.num_classes},
      {"mode", i.mode},
      {"per_device_batch", i.per_device_batch},
      {"global_batch", i.global_batch},
      {"num_batches", i.num_batches},
      {"duration_s", number(i.duration_s)},
      {"num_warmup_batches", i.num_warmup_batches},
      {"display_every", i.display_every},
      {"device_kind", i.device_kind},
      {"device_reason", i.device_reason},
      {"data_format", i.data_format},
      {"precision", i.precision},
      {"optimizer", i.optimizer},
      {"learning_rate", number(i.learning_rate)},
      {"momentum", number(i.momentum)},
      {"weight_decay", number(i.weight_decay)},
      {"variables", i.variables},
      {"world_size", i.world_size},
      {"param_count", i.param_count},
      {"gflops_per_image", number(i.gflops_per_image)},
      {"backend", i.backend},
      {"device_memory_bytes", i.device_memory_bytes},
      {"seed", i.seed},
  };
}

ordered_json environment_json(const Environment& e) {
  const Versions& v = e.versions;
  return ordered_json{
      {"host_name", e.host_name},
      {"cpu_model", e.cpu_model},
      {"logical_cores", e.logical_cores},
      {"usable_cores", e.usable_cores},
      {"in_ecs", e.in_ecs},
      {"ecs_metadata_uri", e.ecs_metadata_uri},
      {"aws_execution_env", e.aws_execution_env},
      {"aws_region", e.aws_region},
      {"aws_batch_job_id", e.aws_batch_job_id},
      {"nvidia_visible_devices", optional_string(e.nvidia_visible_devices)},
      {"cuda_visible_devices", optional_string(e.cuda_visible_devices)},
      {"versions",
       {{"cnnbench", v.cnnbench},
        {"nvidia_driver", v.nvidia_driver},
        {"cuda_driver", v.cuda_driver},
        {"cuda_runtime", v.cuda_runtime},
        {"cudnn", v.cudnn},
        {"cublas", v.cublas},
        {"nccl", v.nccl},
        {"onednn", v.onednn},
        {"mpi", v.mpi}}},
  };
}

ordered_json percentiles_json(const Percentiles& p) {
  return ordered_json{{"mean", number(p.mean)}, {"min", number(p.min)}, {"p50", number(p.p50)},
                      {"p90", number(p.p90)},   {"p99", number(p.p99)}, {"max", number(p.max)}};
}

ordered_json step_json(const StepStats& s) {
  return ordered_json{{"step", s.step},
                      {"images_per_sec", number(s.images_per_sec)},
                      {"uncertainty", number(s.uncertainty)},
                      {"jitter", number(s.jitter)},
                      {"step_time_ms", number(s.step_time_ms)},
                      {"loss", number(s.loss)},
                      {"elapsed_s", number(s.elapsed_s)}};
}

std::vector<RankFigures> default_ranks(const ResultJsonOptions& options, const RunResult& result) {
  RankFigures r;
  r.rank = 0;
  r.host = options.environment.host_name;
  if (result.info.world_size <= 1) {
    for (const auto& d : result.info.devices) r.devices.push_back(d.ordinal >= 0 ? d.uuid : "cpu");
    if (!result.info.devices.empty()) r.ordinal = result.info.devices.front().ordinal;
  }
  r.steps = result.summary.steps;
  r.images_per_sec = result.summary.total_images_per_sec / std::max(1, result.info.world_size);
  r.step_time_ms = result.summary.step_time_ms;
  return {r};
}

/// {baseline_images_per_sec, devices, efficiency} against --baseline_images_per_sec; null without one.
ordered_json scaling_json(const RunResult& result) {
  if (!(result.baseline_images_per_sec > 0)) return nullptr;
  const int devices = static_cast<int>(result.info.devices.size());
  return {{"baseline_images_per_sec", result.baseline_images_per_sec},
          {"devices", devices},
          {"efficiency", number(scaling_efficiency(result.summary.total_images_per_sec, devices,
                                                   result.baseline_images_per_sec))}};
}

std::string describe_errno(int err) { return std::system_category().message(err); }

// Closes a descriptor and removes the temporary file unless the write succeeded.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  int& fd() { return fd_; }
  void close_checked(const std::string& prefix) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw std::runtime_error(prefix + "cannot close " + path_ + ": " + describe_errno(errno));
  }
  void commit() { committed_ = true; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

nlohmann::ordered_json device_json(const DeviceEntry& d) {
  return ordered_json{{"ordinal", d.ordinal},       {"name", d.name},       {"uuid", d.uuid},
                      {"pci_bus_id", d.pci_bus_id}, {"host_id", d.host_id}, {"memory_bytes", d.memory_bytes}};
}

nlohmann::ordered_json build_result_document(const ResultJsonOptions& options, const ResultRecord& record) {
  const RunResult& result = record.result;
  const RunSummary& s = result.summary;
  ordered_json devices = ordered_json::array();
  for (const auto& d : result.info.devices) devices.push_back(device_json(d));
  ordered_json displayed = ordered_json::array();
  for (const auto& step : record.displayed_steps) displayed.push_back(step_json(step));
  ordered_json step_times = ordered_json::array();
  for (double t : s.step_times_ms) step_times.push_back(number(t));
  ordered_json losses = ordered_json::array();
  for (double l : s.losses) losses.push_back(number(l));

  ordered_json ranks = ordered_json::array();
  for (const auto& r : result.ranks.empty() ? default_ranks(options, result) : result.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"host", r.host},
                     {"devices", r.devices},
                     {"ordinal", r.ordinal},
                     {"steps", r.steps},
                     {"images_per_sec", number(r.images_per_sec)},
                     {"step_time_ms", percentiles_json(r.step_time_ms)}});
  }

  return ordered_json{
      {"schema_version", kResultSchemaVersion},
      {"program", "cnnbench"},
      {"started_at", iso8601_utc(record.started_at_ms)},
      {"finished_at", iso8601_utc(record.finished_at_ms)},
      {"config", options.config},
      {"config_defaults", options.config_defaults},
      {"run", run_json(result.info)},
      {"environment", environment_json(options.environment)},
      {"device_source", options.device_source},
      {"devices", devices},
      {"setup",
       {{"plans_s", number(result.info.setup.plans_s)},
        {"autotune_s", number(result.info.setup.autotune_s)},
        {"allocation_s", number(result.info.setup.allocation_s)},
        {"capture_s", number(result.info.setup.capture_s)},
        {"plans_built", result.info.setup.plans_built},
        {"plans_autotuned", result.info.setup.plans_autotuned},
        {"plans_from_cache", result.info.setup.plans_from_cache},
        {"notes", result.info.setup.notes}}},
      {"summary",
       {{"steps", s.steps},
        {"images", s.images},
        {"wall_time_s", number(s.wall_time_s)},
        {"total_images_per_sec", number(s.total_images_per_sec)},
        {"images_per_sec", number(s.last.images_per_sec)},
        {"uncertainty", number(s.last.uncertainty)},
        {"jitter", number(s.last.jitter)},
        {"step_time_ms", percentiles_json(s.step_time_ms)},
        {"step_timing", s.step_timing},
        {"final_loss", number(s.final_loss)},
        {"warmup_time_s", number(s.warmup_time_s)},
        {"setup_time_s", number(s.setup_time_s)}}},
      {"verify", {{"passed", result.info.verify_passed}, {"lines", result.info.verify_lines}}},
      {"replicas",
       s.replicas ? ordered_json{{"replicas", s.replicas->replicas},
                                 {"checks", s.replicas->checks},
                                 {"after_step", s.replicas->after_step},
                                 {"identical", s.replicas->identical},
                                 {"parameter_hash", s.replicas->hash},
                                 {"seconds", number(s.replicas->seconds)},
                                 {"lines", s.replicas->lines}}
                  : ordered_json(nullptr)},
      {"step_times_ms", step_times},
      {"displayed_steps", displayed},
      {"losses", losses},
      {"interrupted", s.interrupted},
      {"stop_reason", s.stop_reason},
      {"per_rank", ranks},
      {"telemetry", telemetry::telemetry_json(result.telemetry ? *result.telemetry
                                                             : telemetry::unavailable_report(
                                                                   "GPU telemetry not collected"))},
      {"scaling", scaling_json(result)},
      {"scaling_sweep", result.sweep.empty()
                            ? ordered_json(nullptr)
                            : sweep_json(result.sweep, result.info.per_device_batch,
                                         result.baseline_images_per_sec > 0
                                             ? std::optional<double>(result.baseline_images_per_sec)
                                             : std::nullopt)},
  };
}

void write_file_atomically(const std::string& path, std::string_view contents, std::string_view what) {
  const std::string prefix = std::string(what) + "=" + path + ": ";
  if (path.empty()) throw std::runtime_error(std::string(what) + ": no path given");
  if (std::filesystem::path(path).filename().empty()) {
    throw std::runtime_error(prefix + "names a directory, not a file");
  }
  TempFile tmp(path + ".tmp." + std::to_string(::getpid()));
  tmp.fd() = ::open(tmp.path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tmp.fd() < 0) {
    const int err = errno;
    tmp.commit();  // nothing was created, nothing to remove
    throw std::runtime_error(prefix + "cannot create " + tmp.path() + ": " + describe_errno(err));
  }
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(tmp.fd(), contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(prefix + "cannot write " + tmp.path() + ": " + describe_errno(errno));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(tmp.fd()) != 0) {
    throw std::runtime_error(prefix + "cannot flush " + tmp.path() + " to disk: " + describe_errno(errno));
  }
  tmp.close_checked(prefix);
  if (::rename(tmp.path().c_str(), path.c_str()) != 0) {
    throw std::runtime_error(prefix + "cannot rename " + tmp.path() + " to " + path + ": " + describe_errno(errno));
  }
  tmp.commit();
  // Makes the rename itself durable; a failure here loses nothing already written.
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
}

ResultJsonReporter::ResultJsonReporter(ResultJsonOptions options) : options_(std::move(options)) {}

int64_t ResultJsonReporter::now_ms() const {
  if (options_.clock_ms) return options_.clock_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void ResultJsonReporter::header(const RunInfo& info) {
  try {
    record_.result.info = info;
    record_.started_at_ms = now_ms();
  } catch (const std::exception&) {
    // Keeping the record is best effort; summary() still writes what it has.
  }
}

void ResultJsonReporter::step(const RunInfo& /*info*/, const StepStats& stats) {
  try {
    record_.displayed_steps.push_back(stats);
  } catch (const std::exception&) {
  }
}

void ResultJsonReporter::summary(const RunResult& result) {
  try {
    record_.result = result;
    record_.finished_at_ms = now_ms();
    if (record_.started_at_ms == 0) record_.started_at_ms = record_.finished_at_ms;
    const std::string text = build_result_document(options_, record_).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    write_file_atomically(options_.path, text, "--result_json");
    written_ = true;
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

}  // namespace cnnbench::bench
