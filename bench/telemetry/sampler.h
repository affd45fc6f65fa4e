// A thread that samples NVML during the timed loop.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/telemetry/gpu_sample.h"
#include "bench/telemetry/gpu_summary.h"
#include "bench/telemetry/nvml_library.h"
#include "bench/telemetry/sample_series.h"
#include "bench/telemetry/telemetry_report.h"

namespace cnnbench::bench::telemetry {

/// --telemetry_interval_ms: the default, and the valid range (0 turns telemetry off).
inline constexpr int kDefaultIntervalMs = 1000;
/// Below 50 ms samples mostly repeat: NVML refreshes utilisation every 1/6 s to
/// 1 s (by product) and reports power as a 1 s average on Ampere and later.
inline constexpr int kMinIntervalMs = 50;
inline constexpr int kMaxIntervalMs = 60000;
/// 100000 samples of 64 bytes: 6.4 MB per GPU; 27.7 hours at 1 s.
inline constexpr size_t kDefaultMaxSamplesPerGpu = 100000;

/// Why `interval_ms` is not a valid --telemetry_interval_ms, naming the flag, the
/// value and the valid values (0, or 50 to 60000); std::nullopt when it is valid.
std::optional<std::string> check_interval_ms(int64_t interval_ms);

/// How the Sampler samples.
struct SamplerOptions {
  int interval_ms = kDefaultIntervalMs;                   ///< > 0; check_interval_ms() for user input
  size_t max_samples_per_gpu = kDefaultMaxSamplesPerGpu;  ///< see SampleSeries for what happens past it
  /// Sample timestamps, milliseconds since the Unix epoch, called at each GPU's
  /// read (on the sampler's thread); empty = std::chrono::system_clock.
  std::function<int64_t()> clock_ms;
};

/// A GPU's most recent sample.
struct GpuReading {
  GpuId id;
  GpuSample sample;
};

/// Samples every GPU given, on its own thread, from start() to stop(): one round
/// at once, then one per interval (on a fixed schedule; a round that overruns
/// skips the ticks it missed). NVML reads happen outside the lock that the
/// accessors take, so a reporter calling latest() from the training thread waits
/// for a copy, not for the driver. The thread is joined by stop() or the destructor.
class Sampler {
 public:
  /// Opens each GPU by UUID; one NVML cannot open is reported with its reason and
  /// not sampled. `nvml` must outlive the sampler. With NVML unavailable, the
  /// sampler does nothing and report() carries nvml.reason().
  Sampler(const Nvml& nvml, std::vector<GpuId> gpus, SamplerOptions options = {});
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  /// Starts the thread (once; later calls do nothing). Throws std::system_error
  /// when no thread can be started.
  void start();
  /// Wakes the thread and joins it: returns when a round in progress ends, not at
  /// the next tick. Safe to call more than once, or without start().
  void stop();
  [[nodiscard]] bool running() const { return thread_.joinable(); }

  /// Takes one round now on the calling thread, as the thread does each interval.
  void sample_now();

  [[nodiscard]] size_t gpu_count() const { return gpus_.size(); }
  /// The stored samples of the gpu-th GPU (given order); see SampleSeries.
  [[nodiscard]] std::vector<GpuSample> samples(size_t gpu) const;
  /// The latest sample of every GPU sampled at least once, in the order given.
  [[nodiscard]] std::vector<GpuReading> latest() const;
  /// Everything so far, for the reports.
  [[nodiscard]] TelemetryReport report() const;

 private:
  /// What the accessors read, guarded by data_mutex_.
  struct Shared {
    SampleSeries series;
    GpuSummary summary;
    std::optional<GpuSample> latest;
    std::array<FigureStatus, kFigureCount> status;
  };

  void run();
  int64_t now_ms() const;

  const Nvml& nvml_;
  SamplerOptions options_;
  std::vector<NvmlGpu> gpus_;  ///< touched only under read_mutex_
  std::mutex read_mutex_;      ///< one round of NVML reads at a time
  mutable std::mutex data_mutex_;
  std::vector<Shared> shared_;
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_requested_ = false;  ///< guarded by wake_mutex_
  std::thread thread_;
};

}  // namespace cnnbench::bench::telemetry
