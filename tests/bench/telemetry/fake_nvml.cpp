// A fake libnvidia-ml.so.1 for the telemetry tests: the entry points the
// telemetry resolves, with nvml.h's C signatures, layouts and values written out
// here independently of bench/telemetry/nvml_abi.h (so a mistake there shows),
// answering for five canned GPUs:
//
//   GPU-00000000-...  "Fake H100 A": busy, healthy. Reads alternate between two
//                     values (utilization 90/100 %, power 650/700 W, temperature
//                     60/62 °C); memory 40960 MiB; SM 1980 MHz, memory 2619 MHz;
//                     clock event reasons: sync boost only; PCIe replays 5; NVLink
//                     links 0-3 active, 4-11 inactive, 12+ invalid; DL_REPLAY reads
//                     link + 1 (total 10), DL_CRC_FLIT is not supported.
//   MIG-11111111-...  a MIG device: memory (10240 MiB) and clocks only; the rest
//                     NVML_ERROR_NOT_SUPPORTED.
//   GPU-22222222-...  "Fake H100 C": held at its power cap (sw_power_cap in every
//                     read), 700 W, 100 %, 70 °C, SM 1600 MHz; PCIe replays grow by
//                     1 per read; no NVLink.
//   GPU-33333333-...  like the first, but every second power read fails with
//                     NVML_ERROR_GPU_IS_LOST.
//   anything else     NVML_ERROR_NOT_FOUND.
//
// Built three ways (tests/bench/telemetry/CMakeLists.txt): as is; with
// FAKE_NVML_INIT_RESULT (nvmlInit_v2 fails with that code); with
// FAKE_NVML_OLD_DRIVER (no nvmlDeviceGetTemperatureV, nvmlDeviceGetMemoryInfo_v2
// or nvmlDeviceGetCurrentClocksEventReasons, as in drivers before R535).
#include <atomic>
#include <cstring>

namespace {

// nvml.h, NVML_API_VERSION 12.
enum nvmlReturn_t {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};
enum nvmlClockType_t { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum nvmlTemperatureSensors_t { NVML_TEMPERATURE_GPU = 0 };
enum nvmlEnableState_t { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum nvmlNvLinkErrorCounter_t {
  NVML_NVLINK_ERROR_DL_REPLAY = 0,
  NVML_NVLINK_ERROR_DL_RECOVERY = 1,
  NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
  NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
  NVML_NVLINK_ERROR_DL_ECC_DATA = 4,
};
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
struct nvmlTemperature_v1_t {
  unsigned int version;
  nvmlTemperatureSensors_t sensorType;
  int temperature;
};
constexpr unsigned int kMemoryV2Version = sizeof(nvmlMemory_v2_t) | (2U << 24U);
constexpr unsigned int kTemperatureV1Version = sizeof(nvmlTemperature_v1_t) | (1U << 24U);
constexpr unsigned long long kSyncBoost = 0x10ULL;
constexpr unsigned long long kSwPowerCap = 0x4ULL;
constexpr unsigned long long kMiB = 1024ULL * 1024ULL;

enum class Kind { Busy, Mig, PowerCapped, Flaky };

struct FakeGpu {
  const char* uuid;
  const char* name;
  Kind kind;
  std::atomic<unsigned> reads[8];  // per query, to alternate values
};

FakeGpu gpus[] = {
    {"GPU-00000000-0000-4000-8000-000000000000", "Fake H100 A", Kind::Busy, {}},
    {"MIG-11111111-1111-4111-8111-111111111111", "Fake H100 B MIG 1g.10gb", Kind::Mig, {}},
    {"GPU-22222222-2222-4222-8222-222222222222", "Fake H100 C", Kind::PowerCapped, {}},
    {"GPU-33333333-3333-4333-8333-333333333333", "Fake H100 D", Kind::Flaky, {}},
};
std::atomic<int> initialised{0};

enum Query { kUtil, kPower, kTemp, kPcie };

FakeGpu* as_gpu(void* device) {
  for (FakeGpu& g : gpus) {
    if (&g == device) return &g;
  }
  return nullptr;
}

/// 0, 1, 0, 1, ... per GPU and query.
unsigned alternate(FakeGpu* g, Query q) { return g->reads[q]++ % 2; }

}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT nvmlReturn_t nvmlInit_v2() {
#ifdef FAKE_NVML_INIT_RESULT
  return static_cast<nvmlReturn_t>(FAKE_NVML_INIT_RESULT);
#else
  ++initialised;
  return NVML_SUCCESS;
#endif
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown() {
  if (initialised.load() == 0) return NVML_ERROR_UNINITIALIZED;
  --initialised;
  return NVML_SUCCESS;
}

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (initialised.load() == 0) return NVML_ERROR_UNINITIALIZED;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (FakeGpu& g : gpus) {
    if (std::strcmp(g.uuid, uuid) == 0) {
      *device = &g;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr || name == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (std::strlen(g->name) + 1 > length) return NVML_ERROR_INVALID_ARGUMENT;
  std::strcpy(name, g->name);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(void* device, nvmlUtilization_t* u) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr || u == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->kind == Kind::Mig) return NVML_ERROR_NOT_SUPPORTED;
  u->gpu = g->kind == Kind::PowerCapped ? 100 : 90 + 10 * alternate(g, kUtil);
  u->memory = 50;
  return NVML_SUCCESS;
}

static nvmlReturn_t memory_used(void* device, unsigned long long* used) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *used = (g->kind == Kind::Mig ? 10240ULL : 40960ULL) * kMiB;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void* device, nvmlMemory_v2_t* m) {
  if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (m->version != kMemoryV2Version) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  m->total = 81559ULL * kMiB;
  m->reserved = 512ULL * kMiB;
  const nvmlReturn_t r = memory_used(device, &m->used);
  m->free = m->total - m->reserved - m->used;
  return r;
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* m) {
  if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  m->total = 81559ULL * kMiB;
  const nvmlReturn_t r = memory_used(device, &m->used);
  m->free = m->total - m->used;
  return r;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(void* device, unsigned int* milliwatts) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr || milliwatts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->kind == Kind::Mig) return NVML_ERROR_NOT_SUPPORTED;
  if (g->kind == Kind::PowerCapped) {
    *milliwatts = 700000;
    return NVML_SUCCESS;
  }
  const unsigned odd = alternate(g, kPower);
  if (g->kind == Kind::Flaky && odd == 1) return NVML_ERROR_GPU_IS_LOST;
  *milliwatts = 650000 + 50000 * odd;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(void* device, nvmlTemperature_v1_t* t) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr || t == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (t->version != kTemperatureV1Version) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (t->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->kind == Kind::Mig) return NVML_ERROR_NOT_SUPPORTED;
  t->temperature = (g->kind == Kind::PowerCapped ? 70 : 60) + 2 * static_cast<int>(alternate(g, kTemp));
  return NVML_SUCCESS;
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(void* device, nvmlClockType_t type, unsigned int* mhz) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr || mhz == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  switch (type) {
    case NVML_CLOCK_SM:
      *mhz = g->kind == Kind::PowerCapped ? 1600 : 1980;
      return NVML_SUCCESS;
    case NVML_CLOCK_MEM:
      *mhz = 2619;
      return NVML_SUCCESS;
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void* device, unsigned long long* reasons) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr || reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->kind == Kind::Mig) return NVML_ERROR_NOT_SUPPORTED;
  *reasons = g->kind == Kind::PowerCapped ? kSwPowerCap : kSyncBoost;
  return NVML_SUCCESS;
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(void* device, unsigned int* value) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr || value == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->kind == Kind::Mig) return NVML_ERROR_NOT_SUPPORTED;
  *value = g->kind == Kind::PowerCapped ? g->reads[kPcie]++ : 5;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(void* device, unsigned int link, nvmlEnableState_t* active) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr || active == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->kind == Kind::Mig || g->kind == Kind::PowerCapped) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= 12) return NVML_ERROR_INVALID_ARGUMENT;
  *active = link < 4 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(void* device, unsigned int link,
                                                         nvmlNvLinkErrorCounter_t counter, unsigned long long* value) {
  FakeGpu* g = as_gpu(device);
  if (g == nullptr || value == nullptr || link >= 12) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->kind == Kind::Mig || g->kind == Kind::PowerCapped) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= 4) return NVML_ERROR_INVALID_ARGUMENT;
  switch (counter) {
    case NVML_NVLINK_ERROR_DL_REPLAY:
      *value = link + 1;
      return NVML_SUCCESS;
    case NVML_NVLINK_ERROR_DL_CRC_FLIT:
      return NVML_ERROR_NOT_SUPPORTED;
    default:
      *value = 0;
      return NVML_SUCCESS;
  }
}
