// NVML, loaded at run time: libnvidia-ml.so.1 comes with the NVIDIA driver (the
// container runtime mounts it into GPU containers), so the program neither links
// it nor needs it to start. Without it, or where nvmlInit fails, telemetry is off
// and the run goes on; the reason is one line for the report.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/telemetry/gpu_sample.h"
#include "bench/telemetry/nvml_abi.h"

namespace cnnbench::bench::telemetry {

/// The soname the NVIDIA driver installs.
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

/// How one figure of one GPU has fared so far.
struct FigureStatus {
  bool supported = true;        ///< false once the query returned NVML_ERROR_NOT_SUPPORTED, or the driver lacks it
  std::string why_unsupported;  ///< e.g. "not supported", "driver lacks nvmlDeviceGetTemperatureV"
  int64_t failures = 0;         ///< reads that failed for another reason (the figure is missing from those samples)
  std::string last_error;       ///< e.g. "nvmlDeviceGetPowerUsage: GPU is lost"
};

/// One GPU opened through NVML by its UUID. Read it with Nvml::read() from one
/// thread at a time.
class NvmlGpu {
 public:
  GpuId id;
  std::string name;   ///< nvmlDeviceGetName, e.g. "NVIDIA H200"; empty if unknown
  std::string error;  ///< empty when opened; else why not, e.g. "nvmlDeviceGetHandleByUUID(GPU-...): Not Found"
  std::array<FigureStatus, kFigureCount> status;

  [[nodiscard]] bool ok() const { return error.empty(); }
  [[nodiscard]] const FigureStatus& figure(Figure f) const { return status[static_cast<size_t>(f)]; }
  [[nodiscard]] FigureStatus& figure(Figure f) { return status[static_cast<size_t>(f)]; }
  /// Active NVLink links whose error counters are read, as (link, counter) pairs.
  [[nodiscard]] const std::vector<std::pair<unsigned, int>>& nvlink_counters() const { return nvlink_counters_; }

 private:
  friend class Nvml;
  nvml::Device handle_ = nullptr;
  std::vector<std::pair<unsigned, int>> nvlink_counters_;
};

/// The loaded library, initialised (nvmlInit_v2) for the object's lifetime and
/// shut down (nvmlShutdown; NVML counts initialisations, so NCCL's own use is
/// unaffected) and closed on destruction. Construction never throws but
/// std::bad_alloc: either available() or reason() says why not.
class Nvml {
 public:
  /// `library_path`: a soname searched as dlopen(3) does, or a path (tests load a fake).
  explicit Nvml(std::string library_path = kNvmlLibrary);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  [[nodiscard]] bool available() const { return reason_.empty(); }
  /// Empty when available; else one line: "NVML not found (libnvidia-ml.so.1):
  /// GPU telemetry off", "NVML (path) lacks nvmlInit_v2: GPU telemetry off" or
  /// "nvmlInit failed: Driver Not Loaded: GPU telemetry off".
  [[nodiscard]] const std::string& reason() const { return reason_; }
  [[nodiscard]] const std::string& library_path() const { return library_path_; }

  /// Finds the GPU with this UUID (nvmlDeviceGetHandleByUUID) and learns which
  /// figures it offers: a query the driver lacks is marked unsupported, and so is
  /// NVLink on a GPU without active links. Failures are in NvmlGpu::error.
  [[nodiscard]] NvmlGpu open(const GpuId& id) const;

  /// Reads every supported figure of `gpu`, stamped `time_ms`. A query returning
  /// NVML_ERROR_NOT_SUPPORTED marks its figure unsupported (never queried again);
  /// another error leaves the figure out of this sample and is counted in
  /// gpu.status. Never throws.
  GpuSample read(NvmlGpu& gpu, int64_t time_ms) const;

  /// nvmlErrorString, or "NVML error N" when the library gives none.
  [[nodiscard]] std::string error_string(nvml::Return result) const;

 private:
  /// Entry points; the optional ones are null when the driver lacks them.
  struct Functions {
    nvml::InitV2Fn init = nullptr;
    nvml::ShutdownFn shutdown = nullptr;
    nvml::ErrorStringFn error_string = nullptr;
    nvml::DeviceGetHandleByUuidFn get_handle_by_uuid = nullptr;
    nvml::DeviceGetNameFn get_name = nullptr;
    nvml::DeviceGetUtilizationRatesFn get_utilization = nullptr;
    nvml::DeviceGetMemoryInfoV2Fn get_memory_v2 = nullptr;
    nvml::DeviceGetMemoryInfoFn get_memory = nullptr;
    nvml::DeviceGetPowerUsageFn get_power = nullptr;
    nvml::DeviceGetTemperatureVFn get_temperature = nullptr;
    nvml::DeviceGetClockInfoFn get_clock = nullptr;
    nvml::DeviceGetCurrentClocksEventReasonsFn get_clock_event_reasons = nullptr;
    nvml::DeviceGetPcieReplayCounterFn get_pcie_replays = nullptr;
    nvml::DeviceGetNvLinkStateFn get_nvlink_state = nullptr;
    nvml::DeviceGetNvLinkErrorCounterFn get_nvlink_error = nullptr;
  };

  /// dlopen handle, closed by its destructor.
  class Library {
   public:
    Library() = default;
    explicit Library(const std::string& path);
    ~Library();
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    [[nodiscard]] bool loaded() const { return handle_ != nullptr; }
    [[nodiscard]] void* symbol(const char* name) const;

   private:
    void* handle_ = nullptr;
  };

  bool load_functions();
  void probe_nvlink(NvmlGpu& gpu) const;
  /// True on success; else records the failure of `figure` in `gpu`.
  bool check(NvmlGpu& gpu, Figure figure, nvml::Return result) const;

  std::string library_path_;
  Library library_;
  Functions fn_;
  bool initialised_ = false;
  std::string reason_;
};

}  // namespace cnnbench::bench::telemetry
