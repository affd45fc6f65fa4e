#include "bench/telemetry/gpu_sample.h"

#include "bench/telemetry/nvml_abi.h"

namespace cnnbench::bench::telemetry {

const char* figure_key(Figure figure) {
  switch (figure) {
    case Figure::Utilization:
      return "utilization_pct";
    case Figure::MemoryUsed:
      return "memory_used_mib";
    case Figure::Power:
      return "power_w";
    case Figure::Temperature:
      return "temperature_c";
    case Figure::SmClock:
      return "sm_clock_mhz";
    case Figure::MemoryClock:
      return "memory_clock_mhz";
    case Figure::ClockEventReasons:
      return "clock_event_reasons";
    case Figure::PcieReplays:
      return "pcie_replays";
    case Figure::NvLinkErrors:
      return "nvlink_errors";
  }
  return "unknown";
}

const char* figure_source(Figure figure) {
  switch (figure) {
    case Figure::Utilization:
      return "nvmlDeviceGetUtilizationRates";
    case Figure::MemoryUsed:
      return "nvmlDeviceGetMemoryInfo_v2";
    case Figure::Power:
      return "nvmlDeviceGetPowerUsage";
    case Figure::Temperature:
      return "nvmlDeviceGetTemperatureV";
    case Figure::SmClock:
    case Figure::MemoryClock:
      return "nvmlDeviceGetClockInfo";
    case Figure::ClockEventReasons:
      return "nvmlDeviceGetCurrentClocksEventReasons";
    case Figure::PcieReplays:
      return "nvmlDeviceGetPcieReplayCounter";
    case Figure::NvLinkErrors:
      return "nvmlDeviceGetNvLinkErrorCounter";
  }
  return "unknown";
}

std::optional<double> GpuSample::value(Figure figure) const {
  if (!has(figure)) return std::nullopt;
  switch (figure) {
    case Figure::Utilization:
      return utilization_pct;
    case Figure::MemoryUsed:
      return memory_used_mib;
    case Figure::Power:
      return power_w;
    case Figure::Temperature:
      return temperature_c;
    case Figure::SmClock:
      return sm_clock_mhz;
    case Figure::MemoryClock:
      return memory_clock_mhz;
    case Figure::ClockEventReasons:
      return static_cast<double>(clock_event_reasons);
    case Figure::PcieReplays:
      return static_cast<double>(pcie_replays);
    case Figure::NvLinkErrors:
      return static_cast<double>(nvlink_errors);
  }
  return std::nullopt;
}

const std::vector<ClockEventReason>& clock_event_reasons() {
  // Meanings: NVML API reference, "Clocks Event Reasons".
  static const std::vector<ClockEventReason> kReasons = {
      {nvml::kReasonGpuIdle, "gpu_idle", "idle", ThrottleClass::None},
      {nvml::kReasonApplicationsClocksSetting, "applications_clocks_setting", "application clocks",
       ThrottleClass::None},
      {nvml::kReasonSwPowerCap, "sw_power_cap", "power cap", ThrottleClass::Power},
      {nvml::kReasonHwSlowdown, "hw_slowdown", "HW slowdown", ThrottleClass::ThermalHw},
      {nvml::kReasonSyncBoost, "sync_boost", "sync boost", ThrottleClass::None},
      {nvml::kReasonSwThermalSlowdown, "sw_thermal_slowdown", "SW thermal slowdown", ThrottleClass::ThermalHw},
      {nvml::kReasonHwThermalSlowdown, "hw_thermal_slowdown", "HW thermal slowdown", ThrottleClass::ThermalHw},
      {nvml::kReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown", "HW power brake", ThrottleClass::ThermalHw},
      {nvml::kReasonDisplayClockSetting, "display_clock_setting", "display clock", ThrottleClass::None},
  };
  return kReasons;
}

std::string describe_clock_event_reasons(uint64_t reasons) {
  std::string out;
  uint64_t known = 0;
  for (const ClockEventReason& r : clock_event_reasons()) {
    known |= r.bit;
    if ((reasons & r.bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += r.label;
  }
  if ((reasons & ~known) != 0) out += out.empty() ? "other" : ", other";
  return out.empty() ? "none" : out;
}

namespace {
uint64_t mask_of(ThrottleClass c) {
  uint64_t mask = 0;
  for (const ClockEventReason& r : clock_event_reasons()) {
    if (r.throttle == c) mask |= r.bit;
  }
  return mask;
}
}  // namespace

uint64_t power_throttle_mask() { return mask_of(ThrottleClass::Power); }
uint64_t thermal_hw_throttle_mask() { return mask_of(ThrottleClass::ThermalHw); }

}  // namespace cnnbench::bench::telemetry
