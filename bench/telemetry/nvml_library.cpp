#include "bench/telemetry/nvml_library.h"

#include <dlfcn.h>

#include <utility>

namespace cnnbench::bench::telemetry {
namespace {

constexpr double kBytesPerMiB = 1024.0 * 1024.0;
constexpr const char* kOff = ": GPU telemetry off";

/// dlsym's void* to a function pointer (POSIX guarantees the conversion).
template <typename Fn>
Fn as_function(void* symbol) {
  return reinterpret_cast<Fn>(symbol);
}

}  // namespace

// ------------------------------------------------------------------ Library

Nvml::Library::Library(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {}

Nvml::Library::~Library() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* Nvml::Library::symbol(const char* name) const { return handle_ == nullptr ? nullptr : dlsym(handle_, name); }

// --------------------------------------------------------------------- Nvml

Nvml::Nvml(std::string library_path) : library_path_(std::move(library_path)), library_(library_path_) {
  if (!library_.loaded()) {
    reason_ = "NVML not found (" + library_path_ + ")" + kOff;
    return;
  }
  if (!load_functions()) return;
  const nvml::Return result = fn_.init();
  if (result != nvml::kSuccess) {
    reason_ = "nvmlInit failed: " + error_string(result) + kOff;
    return;
  }
  initialised_ = true;
}

Nvml::~Nvml() {
  if (initialised_) fn_.shutdown();
}

bool Nvml::load_functions() {
  // nvmlInit_v2 is what nvml.h maps nvmlInit to; the others have one version.
  void* const init = library_.symbol("nvmlInit_v2");
  void* const shutdown = library_.symbol("nvmlShutdown");
  void* const error_string = library_.symbol("nvmlErrorString");
  void* const by_uuid = library_.symbol("nvmlDeviceGetHandleByUUID");
  for (const auto& [name, symbol] :
       {std::pair{"nvmlInit_v2", init}, std::pair{"nvmlShutdown", shutdown}, std::pair{"nvmlErrorString", error_string},
        std::pair{"nvmlDeviceGetHandleByUUID", by_uuid}}) {
    if (symbol == nullptr) {
      reason_ = "NVML (" + library_path_ + ") lacks " + name + kOff;
      return false;
    }
  }
  fn_.init = as_function<nvml::InitV2Fn>(init);
  fn_.shutdown = as_function<nvml::ShutdownFn>(shutdown);
  fn_.error_string = as_function<nvml::ErrorStringFn>(error_string);
  fn_.get_handle_by_uuid = as_function<nvml::DeviceGetHandleByUuidFn>(by_uuid);

  // Optional: a driver without one of these leaves that figure unsupported.
  fn_.get_name = as_function<nvml::DeviceGetNameFn>(library_.symbol("nvmlDeviceGetName"));
  fn_.get_utilization =
      as_function<nvml::DeviceGetUtilizationRatesFn>(library_.symbol("nvmlDeviceGetUtilizationRates"));
  fn_.get_memory_v2 = as_function<nvml::DeviceGetMemoryInfoV2Fn>(library_.symbol("nvmlDeviceGetMemoryInfo_v2"));
  fn_.get_memory = as_function<nvml::DeviceGetMemoryInfoFn>(library_.symbol("nvmlDeviceGetMemoryInfo"));
  fn_.get_power = as_function<nvml::DeviceGetPowerUsageFn>(library_.symbol("nvmlDeviceGetPowerUsage"));
  fn_.get_temperature = as_function<nvml::DeviceGetTemperatureVFn>(library_.symbol("nvmlDeviceGetTemperatureV"));
  fn_.get_clock = as_function<nvml::DeviceGetClockInfoFn>(library_.symbol("nvmlDeviceGetClockInfo"));
  fn_.get_clock_event_reasons = as_function<nvml::DeviceGetCurrentClocksEventReasonsFn>(
      library_.symbol("nvmlDeviceGetCurrentClocksEventReasons"));
  fn_.get_pcie_replays =
      as_function<nvml::DeviceGetPcieReplayCounterFn>(library_.symbol("nvmlDeviceGetPcieReplayCounter"));
  fn_.get_nvlink_state = as_function<nvml::DeviceGetNvLinkStateFn>(library_.symbol("nvmlDeviceGetNvLinkState"));
  fn_.get_nvlink_error =
      as_function<nvml::DeviceGetNvLinkErrorCounterFn>(library_.symbol("nvmlDeviceGetNvLinkErrorCounter"));
  return true;
}

std::string Nvml::error_string(nvml::Return result) const {
  const char* text = fn_.error_string != nullptr ? fn_.error_string(result) : nullptr;
  if (text == nullptr || *text == '\0') return "NVML error " + std::to_string(result);
  return text;
}

NvmlGpu Nvml::open(const GpuId& id) const {
  NvmlGpu gpu;
  gpu.id = id;
  if (!available()) {
    gpu.error = reason_;
    return gpu;
  }
  const nvml::Return result = fn_.get_handle_by_uuid(id.uuid.c_str(), &gpu.handle_);
  if (result != nvml::kSuccess || gpu.handle_ == nullptr) {
    gpu.error = "nvmlDeviceGetHandleByUUID(" + id.uuid +
                "): " + (result == nvml::kSuccess ? std::string("no handle") : error_string(result));
    gpu.handle_ = nullptr;
    return gpu;
  }
  if (fn_.get_name != nullptr) {
    std::array<char, nvml::kDeviceNameBufferSize> name{};
    if (fn_.get_name(gpu.handle_, name.data(), static_cast<unsigned>(name.size())) == nvml::kSuccess) {
      name.back() = '\0';
      gpu.name = name.data();
    }
  }
  const auto lacks = [&gpu](Figure figure, const char* symbol) {
    gpu.figure(figure).supported = false;
    gpu.figure(figure).why_unsupported = std::string("driver lacks ") + symbol;
  };
  if (fn_.get_utilization == nullptr) lacks(Figure::Utilization, "nvmlDeviceGetUtilizationRates");
  if (fn_.get_memory_v2 == nullptr && fn_.get_memory == nullptr)
    lacks(Figure::MemoryUsed, "nvmlDeviceGetMemoryInfo_v2");
  if (fn_.get_power == nullptr) lacks(Figure::Power, "nvmlDeviceGetPowerUsage");
  if (fn_.get_temperature == nullptr) lacks(Figure::Temperature, "nvmlDeviceGetTemperatureV");
  if (fn_.get_clock == nullptr) {
    lacks(Figure::SmClock, "nvmlDeviceGetClockInfo");
    lacks(Figure::MemoryClock, "nvmlDeviceGetClockInfo");
  }
  if (fn_.get_clock_event_reasons == nullptr) {
    lacks(Figure::ClockEventReasons, "nvmlDeviceGetCurrentClocksEventReasons");
  }
  if (fn_.get_pcie_replays == nullptr) lacks(Figure::PcieReplays, "nvmlDeviceGetPcieReplayCounter");
  probe_nvlink(gpu);
  return gpu;
}

void Nvml::probe_nvlink(NvmlGpu& gpu) const {
  FigureStatus& status = gpu.figure(Figure::NvLinkErrors);
  if (fn_.get_nvlink_state == nullptr || fn_.get_nvlink_error == nullptr) {
    status.supported = false;
    status.why_unsupported = "driver lacks nvmlDeviceGetNvLinkErrorCounter";
    return;
  }
  // Links are numbered from 0; past the last one NVML answers INVALID_ARGUMENT,
  // on a GPU without NVLink NOT_SUPPORTED. Keep the counters an active link reads.
  for (unsigned link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
    int active = 0;
    if (fn_.get_nvlink_state(gpu.handle_, link, &active) != nvml::kSuccess) break;
    if (active != nvml::kFeatureEnabled) continue;
    for (const int counter : {nvml::kNvLinkErrorDlReplay, nvml::kNvLinkErrorDlRecovery, nvml::kNvLinkErrorDlCrcFlit,
                              nvml::kNvLinkErrorDlCrcData}) {
      unsigned long long value = 0;
      if (fn_.get_nvlink_error(gpu.handle_, link, counter, &value) == nvml::kSuccess) {
        gpu.nvlink_counters_.emplace_back(link, counter);
      }
    }
  }
  if (gpu.nvlink_counters_.empty()) {
    status.supported = false;
    status.why_unsupported = "no active NVLink with readable error counters";
  }
}

bool Nvml::check(NvmlGpu& gpu, Figure figure, nvml::Return result) const {
  if (result == nvml::kSuccess) return true;
  FigureStatus& status = gpu.figure(figure);
  if (result == nvml::kErrorNotSupported) {
    status.supported = false;
    status.why_unsupported = "not supported";
  } else {
    ++status.failures;
    status.last_error = std::string(figure_source(figure)) + ": " + error_string(result);
  }
  return false;
}

GpuSample Nvml::read(NvmlGpu& gpu, int64_t time_ms) const {
  GpuSample s;
  s.time_ms = time_ms;
  if (!gpu.ok() || !available()) return s;
  const nvml::Device h = gpu.handle_;
  const auto wanted = [&gpu](Figure f) { return gpu.figure(f).supported; };

  if (wanted(Figure::Utilization)) {
    nvml::Utilization u{};
    if (check(gpu, Figure::Utilization, fn_.get_utilization(h, &u))) {
      s.utilization_pct = static_cast<float>(u.gpu);
      s.mark(Figure::Utilization);
    }
  }
  if (wanted(Figure::MemoryUsed)) {
    unsigned long long used = 0;
    nvml::Return result = nvml::kSuccess;
    if (fn_.get_memory_v2 != nullptr) {
      nvml::MemoryV2 m{};
      m.version = nvml::kMemoryV2Version;
      result = fn_.get_memory_v2(h, &m);
      used = m.used;
    } else {
      nvml::Memory m{};
      result = fn_.get_memory(h, &m);
      used = m.used;
    }
    if (check(gpu, Figure::MemoryUsed, result)) {
      s.memory_used_mib = static_cast<float>(static_cast<double>(used) / kBytesPerMiB);
      s.mark(Figure::MemoryUsed);
    }
  }
  if (wanted(Figure::Power)) {
    unsigned int milliwatts = 0;
    if (check(gpu, Figure::Power, fn_.get_power(h, &milliwatts))) {
      s.power_w = static_cast<float>(milliwatts / 1000.0);
      s.mark(Figure::Power);
    }
  }
  if (wanted(Figure::Temperature)) {
    nvml::TemperatureV1 t{};
    t.version = nvml::kTemperatureV1Version;
    t.sensor_type = nvml::kTemperatureGpu;
    if (check(gpu, Figure::Temperature, fn_.get_temperature(h, &t))) {
      s.temperature_c = static_cast<float>(t.temperature);
      s.mark(Figure::Temperature);
    }
  }
  for (const auto& [figure, clock] :
       {std::pair{Figure::SmClock, nvml::kClockSm}, std::pair{Figure::MemoryClock, nvml::kClockMem}}) {
    if (!wanted(figure)) continue;
    unsigned int mhz = 0;
    if (check(gpu, figure, fn_.get_clock(h, clock, &mhz))) {
      (figure == Figure::SmClock ? s.sm_clock_mhz : s.memory_clock_mhz) = static_cast<float>(mhz);
      s.mark(figure);
    }
  }
  if (wanted(Figure::ClockEventReasons)) {
    unsigned long long reasons = 0;
    if (check(gpu, Figure::ClockEventReasons, fn_.get_clock_event_reasons(h, &reasons))) {
      s.clock_event_reasons = reasons;
      s.mark(Figure::ClockEventReasons);
    }
  }
  if (wanted(Figure::PcieReplays)) {
    unsigned int replays = 0;
    if (check(gpu, Figure::PcieReplays, fn_.get_pcie_replays(h, &replays))) {
      s.pcie_replays = replays;
      s.mark(Figure::PcieReplays);
    }
  }
  if (wanted(Figure::NvLinkErrors)) {
    uint64_t total = 0;
    bool all_read = true;
    for (const auto& [link, counter] : gpu.nvlink_counters_) {
      unsigned long long value = 0;
      const nvml::Return result = fn_.get_nvlink_error(h, link, counter, &value);
      if (result != nvml::kSuccess) {
        // A counter that read at open() and fails now is an error, not "unsupported".
        ++gpu.figure(Figure::NvLinkErrors).failures;
        gpu.figure(Figure::NvLinkErrors).last_error =
            std::string(figure_source(Figure::NvLinkErrors)) + ": " + error_string(result);
        all_read = false;
        break;
      }
      total += value;
    }
    if (all_read) {
      s.nvlink_errors = total;
      s.mark(Figure::NvLinkErrors);
    }
  }
  return s;
}

}  // namespace cnnbench::bench::telemetry
