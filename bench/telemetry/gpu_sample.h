// One reading of one GPU's figures, and the names the reports give them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cnnbench::bench::telemetry {

/// A GPU as the run knows it: the caller's index (the CUDA ordinal the run
/// trains on) and its UUID, by which NVML finds the same device whatever
/// CUDA_VISIBLE_DEVICES renumbered.
struct GpuId {
  int index = -1;
  std::string uuid;  ///< "GPU-5d5b1c7e-..." (or "MIG-..." for a MIG device)
};

/// The figures of a sample, each read by one NVML query (NVML API reference).
enum class Figure : uint8_t {
  Utilization,        ///< %, nvmlDeviceGetUtilizationRates().gpu
  MemoryUsed,         ///< MiB, nvmlDeviceGetMemoryInfo_v2().used / 2^20
  Power,              ///< W, nvmlDeviceGetPowerUsage() mW / 1000 (a 1 s average on Ampere and later, GA100 aside)
  Temperature,        ///< °C, nvmlDeviceGetTemperatureV(NVML_TEMPERATURE_GPU)
  SmClock,            ///< MHz, nvmlDeviceGetClockInfo(NVML_CLOCK_SM)
  MemoryClock,        ///< MHz, nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)
  ClockEventReasons,  ///< bit mask, nvmlDeviceGetCurrentClocksEventReasons
  PcieReplays,        ///< count since the driver loaded, nvmlDeviceGetPcieReplayCounter
  NvLinkErrors,       ///< count, sum over active links of the four DL error counters (nvmlDeviceGetNvLinkErrorCounter)
};
inline constexpr int kFigureCount = 9;
/// The figures that have a mean and a maximum (gauges), in Figure order.
inline constexpr std::array<Figure, 6> kGaugeFigures = {Figure::Utilization, Figure::MemoryUsed, Figure::Power,
                                                        Figure::Temperature, Figure::SmClock,    Figure::MemoryClock};

/// The key of a figure in the result JSON: "utilization_pct", "memory_used_mib",
/// "power_w", "temperature_c", "sm_clock_mhz", "memory_clock_mhz",
/// "clock_event_reasons", "pcie_replays", "nvlink_errors".
const char* figure_key(Figure figure);
/// The NVML entry point that reads a figure, for messages.
const char* figure_source(Figure figure);

/// One sample of one GPU. Compact (64 bytes) because a long run keeps up to
/// SamplerOptions::max_samples_per_gpu of them per GPU.
struct GpuSample {
  int64_t time_ms = 0;               ///< when it was read, milliseconds since the Unix epoch
  float utilization_pct = 0;         ///< %
  float memory_used_mib = 0;         ///< MiB
  float power_w = 0;                 ///< W
  float temperature_c = 0;           ///< °C
  float sm_clock_mhz = 0;            ///< MHz
  float memory_clock_mhz = 0;        ///< MHz
  uint64_t clock_event_reasons = 0;  ///< nvmlClocksEventReason* bits
  uint64_t pcie_replays = 0;         ///< cumulative
  uint64_t nvlink_errors = 0;        ///< cumulative
  uint16_t read_mask = 0;            ///< bit (1 << Figure) set for each figure read

  [[nodiscard]] bool has(Figure figure) const { return (read_mask & bit(figure)) != 0; }
  void mark(Figure figure) { read_mask = static_cast<uint16_t>(read_mask | bit(figure)); }
  /// The figure as a number, or std::nullopt when it was not read.
  [[nodiscard]] std::optional<double> value(Figure figure) const;

 private:
  static constexpr uint16_t bit(Figure figure) { return static_cast<uint16_t>(1U << static_cast<unsigned>(figure)); }
};

/// Why the clocks are below their maximum, grouped as the reports count them.
enum class ThrottleClass {
  None,       ///< not a limit on the work: idle, application clocks, sync boost, display clock
  Power,      ///< the software power cap (the board's power limit)
  ThermalHw,  ///< thermal slowdown (software or hardware), hardware slowdown, power brake
};

/// One nvmlClocksEventReason* bit.
struct ClockEventReason {
  uint64_t bit = 0;
  const char* key = "";    ///< "sw_power_cap", ... (result JSON)
  const char* label = "";  ///< "power cap", ... (text)
  ThrottleClass throttle = ThrottleClass::None;
};

/// Every bit NVML defines, in bit order.
const std::vector<ClockEventReason>& clock_event_reasons();
/// The set bits of `reasons` as labels, "power cap, sync boost"; "none" when 0.
std::string describe_clock_event_reasons(uint64_t reasons);
/// Bits meaning a power limit, and bits meaning a thermal or hardware limit.
uint64_t power_throttle_mask();
uint64_t thermal_hw_throttle_mask();

}  // namespace cnnbench::bench::telemetry
