// bench/telemetry/nvml_abi.h against nvml.h, wherever the build finds the header:
// every value, layout and structure version the telemetry passes to NVML.
#include "bench/telemetry/nvml_abi.h"

#include <gtest/gtest.h>
#include <nvml.h>

#include <cstddef>

namespace cnnbench::bench::telemetry {
namespace {

static_assert(sizeof(nvmlReturn_t) == sizeof(nvml::Return));
static_assert(nvml::kSuccess == NVML_SUCCESS);
static_assert(nvml::kErrorUninitialized == NVML_ERROR_UNINITIALIZED);
static_assert(nvml::kErrorInvalidArgument == NVML_ERROR_INVALID_ARGUMENT);
static_assert(nvml::kErrorNotSupported == NVML_ERROR_NOT_SUPPORTED);
static_assert(nvml::kErrorNoPermission == NVML_ERROR_NO_PERMISSION);
static_assert(nvml::kErrorNotFound == NVML_ERROR_NOT_FOUND);
static_assert(nvml::kErrorDriverNotLoaded == NVML_ERROR_DRIVER_NOT_LOADED);
static_assert(nvml::kErrorFunctionNotFound == NVML_ERROR_FUNCTION_NOT_FOUND);
static_assert(nvml::kErrorGpuIsLost == NVML_ERROR_GPU_IS_LOST);
static_assert(nvml::kErrorUnknown == NVML_ERROR_UNKNOWN);

static_assert(sizeof(nvml::Utilization) == sizeof(nvmlUtilization_t));
static_assert(offsetof(nvml::Utilization, gpu) == offsetof(nvmlUtilization_t, gpu));
static_assert(sizeof(nvml::MemoryV2) == sizeof(nvmlMemory_v2_t));
static_assert(offsetof(nvml::MemoryV2, used) == offsetof(nvmlMemory_v2_t, used));
static_assert(offsetof(nvml::MemoryV2, reserved) == offsetof(nvmlMemory_v2_t, reserved));
static_assert(sizeof(nvml::Memory) == sizeof(nvmlMemory_t));
static_assert(offsetof(nvml::Memory, used) == offsetof(nvmlMemory_t, used));
static_assert(sizeof(nvml::TemperatureV1) == sizeof(nvmlTemperature_v1_t));
static_assert(offsetof(nvml::TemperatureV1, sensor_type) == offsetof(nvmlTemperature_v1_t, sensorType));
static_assert(offsetof(nvml::TemperatureV1, temperature) == offsetof(nvmlTemperature_v1_t, temperature));
static_assert(nvml::kMemoryV2Version == nvmlMemory_v2);
static_assert(nvml::kTemperatureV1Version == nvmlTemperature_v1);

static_assert(nvml::kTemperatureGpu == NVML_TEMPERATURE_GPU);
static_assert(nvml::kClockSm == NVML_CLOCK_SM);
static_assert(nvml::kClockMem == NVML_CLOCK_MEM);
static_assert(nvml::kFeatureEnabled == NVML_FEATURE_ENABLED);
static_assert(sizeof(nvmlEnableState_t) == sizeof(int));
static_assert(nvml::kNvLinkErrorDlReplay == NVML_NVLINK_ERROR_DL_REPLAY);
static_assert(nvml::kNvLinkErrorDlRecovery == NVML_NVLINK_ERROR_DL_RECOVERY);
static_assert(nvml::kNvLinkErrorDlCrcFlit == NVML_NVLINK_ERROR_DL_CRC_FLIT);
static_assert(nvml::kNvLinkErrorDlCrcData == NVML_NVLINK_ERROR_DL_CRC_DATA);
static_assert(nvml::kNvLinkMaxLinks == NVML_NVLINK_MAX_LINKS);
static_assert(nvml::kDeviceNameBufferSize == NVML_DEVICE_NAME_V2_BUFFER_SIZE);

static_assert(nvml::kReasonGpuIdle == nvmlClocksEventReasonGpuIdle);
static_assert(nvml::kReasonApplicationsClocksSetting == nvmlClocksEventReasonApplicationsClocksSetting);
static_assert(nvml::kReasonSwPowerCap == nvmlClocksEventReasonSwPowerCap);
static_assert(nvml::kReasonHwSlowdown == nvmlClocksThrottleReasonHwSlowdown);
static_assert(nvml::kReasonSyncBoost == nvmlClocksEventReasonSyncBoost);
static_assert(nvml::kReasonSwThermalSlowdown == nvmlClocksEventReasonSwThermalSlowdown);
static_assert(nvml::kReasonHwThermalSlowdown == nvmlClocksThrottleReasonHwThermalSlowdown);
static_assert(nvml::kReasonHwPowerBrakeSlowdown == nvmlClocksThrottleReasonHwPowerBrakeSlowdown);
static_assert(nvml::kReasonDisplayClockSetting == nvmlClocksEventReasonDisplayClockSetting);

TEST(NvmlAbi, MatchesNvmlHeader) {
  SUCCEED() << "checked at compile time (NVML_API_VERSION " << NVML_API_VERSION << ")";
}

}  // namespace
}  // namespace cnnbench::bench::telemetry
