#include "bench/telemetry/sampler.h"

#include <chrono>
#include <utility>

namespace cnnbench::bench::telemetry {

std::optional<std::string> check_interval_ms(int64_t interval_ms) {
  if (interval_ms == 0 || (interval_ms >= kMinIntervalMs && interval_ms <= kMaxIntervalMs)) return std::nullopt;
  return "--telemetry_interval_ms=" + std::to_string(interval_ms) + ": must be 0 (GPU telemetry off) or " +
         std::to_string(kMinIntervalMs) + " to " + std::to_string(kMaxIntervalMs) + " milliseconds";
}

TelemetryReport unavailable_report(std::string reason) {
  TelemetryReport report;
  report.reason = std::move(reason);
  return report;
}

Sampler::Sampler(const Nvml& nvml, std::vector<GpuId> gpus, SamplerOptions options)
    : nvml_(nvml), options_(std::move(options)) {
  if (options_.interval_ms <= 0) options_.interval_ms = kDefaultIntervalMs;
  gpus_.reserve(gpus.size());
  shared_.reserve(gpus.size());
  for (const GpuId& id : gpus) {
    gpus_.push_back(nvml_.open(id));
    shared_.push_back(Shared{SampleSeries(options_.max_samples_per_gpu), {}, std::nullopt, gpus_.back().status});
  }
}

Sampler::~Sampler() { stop(); }

int64_t Sampler::now_ms() const {
  if (options_.clock_ms) return options_.clock_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Sampler::start() {
  if (thread_.joinable() || !nvml_.available()) return;
  bool any = false;
  for (const NvmlGpu& g : gpus_) any = any || g.ok();
  if (!any) return;
  {
    const std::lock_guard lock(wake_mutex_);
    stop_requested_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void Sampler::stop() {
  {
    const std::lock_guard lock(wake_mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Sampler::run() {
  using clock = std::chrono::steady_clock;
  const auto interval = std::chrono::milliseconds(options_.interval_ms);
  auto next = clock::now();
  std::unique_lock lock(wake_mutex_);
  while (!stop_requested_) {
    lock.unlock();
    sample_now();
    lock.lock();
    next += interval;
    const auto now = clock::now();
    while (next <= now) next += interval;  // a slow round skips the ticks it missed
    wake_.wait_until(lock, next, [this] { return stop_requested_; });
  }
}

void Sampler::sample_now() {
  const std::lock_guard read_lock(read_mutex_);
  for (size_t i = 0; i < gpus_.size(); ++i) {
    NvmlGpu& gpu = gpus_[i];
    if (!gpu.ok()) continue;
    const GpuSample sample = nvml_.read(gpu, now_ms());
    const std::lock_guard data_lock(data_mutex_);
    Shared& s = shared_[i];
    s.series.push(sample);
    s.summary.add(sample);
    s.latest = sample;
    s.status = gpu.status;
  }
}

std::vector<GpuSample> Sampler::samples(size_t gpu) const {
  const std::lock_guard lock(data_mutex_);
  return gpu < shared_.size() ? shared_[gpu].series.stored() : std::vector<GpuSample>{};
}

std::vector<GpuReading> Sampler::latest() const {
  std::vector<GpuReading> out;
  const std::lock_guard lock(data_mutex_);
  for (size_t i = 0; i < shared_.size(); ++i) {
    if (shared_[i].latest) out.push_back(GpuReading{gpus_[i].id, *shared_[i].latest});
  }
  return out;
}

TelemetryReport Sampler::report() const {
  TelemetryReport r;
  r.reason = nvml_.reason();
  r.library = nvml_.library_path();
  r.interval_ms = options_.interval_ms;
  r.max_samples_per_gpu = shared_.empty() ? options_.max_samples_per_gpu : shared_.front().series.capacity();
  const std::lock_guard lock(data_mutex_);
  for (size_t i = 0; i < shared_.size(); ++i) {
    GpuTelemetry g;
    g.id = gpus_[i].id;
    g.name = gpus_[i].name;
    g.error = gpus_[i].error;
    g.status = shared_[i].status;
    g.summary = shared_[i].summary;
    g.samples = shared_[i].series.stored();
    g.stride = shared_[i].series.stride();
    r.gpus.push_back(std::move(g));
  }
  return r;
}

}  // namespace cnnbench::bench::telemetry
