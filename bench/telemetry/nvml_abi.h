// The part of NVML's C interface that the telemetry uses, declared here because
// libnvidia-ml.so.1 is loaded at run time (dlopen) and nvml.h is not part of every
// build image. Values, layouts and signatures are those of the NVML API reference
// (docs.nvidia.com/deploy/nvml-api, NVML_API_VERSION 12); NVML keeps them stable
// across driver releases. tests/bench/telemetry/nvml_abi_test.cpp compares them
// with nvml.h wherever the build finds that header.
//
// Only non-deprecated entry points are named: nvmlDeviceGetTemperatureV (not
// nvmlDeviceGetTemperature) and nvmlDeviceGetCurrentClocksEventReasons (not
// ...ClocksThrottleReasons), both deprecated in CUDA 13.0.
#pragma once

#include <cstdint>

namespace cnnbench::bench::telemetry::nvml {

/// nvmlReturn_t: a C enum, passed and returned as int.
using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;  ///< e.g. utilisation on a MIG device
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;  ///< e.g. no GPU with this UUID
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorUnknown = 999;

/// nvmlDevice_t: an opaque handle owned by the library.
struct DeviceOpaque;
using Device = DeviceOpaque*;

/// nvmlUtilization_t: percent of the last sample period (1/6 s to 1 s, by product)
/// during which a kernel ran (gpu) or device memory was read or written (memory).
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};

/// nvmlMemory_v2_t, bytes.
struct MemoryV2 {
  unsigned int version;  ///< kMemoryV2Version
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};

/// nvmlMemory_t (version 1), bytes; for drivers older than nvmlDeviceGetMemoryInfo_v2.
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

/// nvmlTemperature_v1_t: degrees Celsius of one sensor.
struct TemperatureV1 {
  unsigned int version;  ///< kTemperatureV1Version
  int sensor_type;       ///< nvmlTemperatureSensors_t
  int temperature;
};

/// NVML_STRUCT_VERSION(data, ver): the structure's size ORed with ver << 24.
inline constexpr unsigned int kMemoryV2Version = static_cast<unsigned int>(sizeof(MemoryV2)) | (2U << 24U);
inline constexpr unsigned int kTemperatureV1Version = static_cast<unsigned int>(sizeof(TemperatureV1)) | (1U << 24U);

/// nvmlTemperatureSensors_t
inline constexpr int kTemperatureGpu = 0;
/// nvmlClockType_t
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;
/// nvmlEnableState_t
inline constexpr int kFeatureEnabled = 1;
/// nvmlNvLinkErrorCounter_t: the four link-level error counters (DCGM adds the same
/// four into its NVLink error totals; DL_ECC_DATA counts corrected data).
inline constexpr int kNvLinkErrorDlReplay = 0;
inline constexpr int kNvLinkErrorDlRecovery = 1;
inline constexpr int kNvLinkErrorDlCrcFlit = 2;
inline constexpr int kNvLinkErrorDlCrcData = 3;
/// NVML_NVLINK_MAX_LINKS
inline constexpr unsigned int kNvLinkMaxLinks = 18;
/// NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned int kDeviceNameBufferSize = 96;

/// Bits of nvmlDeviceGetCurrentClocksEventReasons (nvmlClocksEventReason*; the
/// three hardware ones keep their nvmlClocksThrottleReason* names in nvml.h).
inline constexpr uint64_t kReasonGpuIdle = 0x1;
inline constexpr uint64_t kReasonApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kReasonSwPowerCap = 0x4;
inline constexpr uint64_t kReasonHwSlowdown = 0x8;
inline constexpr uint64_t kReasonSyncBoost = 0x10;
inline constexpr uint64_t kReasonSwThermalSlowdown = 0x20;
inline constexpr uint64_t kReasonHwThermalSlowdown = 0x40;
inline constexpr uint64_t kReasonHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kReasonDisplayClockSetting = 0x100;

/// Signatures of the entry points, named after them.
extern "C" {
using InitV2Fn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return result);
using DeviceGetHandleByUuidFn = Return (*)(const char* uuid, Device* device);
using DeviceGetNameFn = Return (*)(Device device, char* name, unsigned int length);
using DeviceGetUtilizationRatesFn = Return (*)(Device device, Utilization* utilization);
using DeviceGetMemoryInfoV2Fn = Return (*)(Device device, MemoryV2* memory);
using DeviceGetMemoryInfoFn = Return (*)(Device device, Memory* memory);
using DeviceGetPowerUsageFn = Return (*)(Device device, unsigned int* milliwatts);
using DeviceGetTemperatureVFn = Return (*)(Device device, TemperatureV1* temperature);
using DeviceGetClockInfoFn = Return (*)(Device device, int clock_type, unsigned int* mhz);
using DeviceGetCurrentClocksEventReasonsFn = Return (*)(Device device, unsigned long long* reasons);
using DeviceGetPcieReplayCounterFn = Return (*)(Device device, unsigned int* value);
using DeviceGetNvLinkStateFn = Return (*)(Device device, unsigned int link, int* is_active);
using DeviceGetNvLinkErrorCounterFn = Return (*)(Device device, unsigned int link, int counter,
                                                 unsigned long long* value);
}

}  // namespace cnnbench::bench::telemetry::nvml
