// Loading NVML at run time and reading a GPU, through fake libnvidia-ml.so.1
// builds (fake_nvml.cpp): a missing library or a failing nvmlInit gives one line
// and no exception; NOT_SUPPORTED marks a figure unsupported; values convert to
// the documented units.
#include "bench/telemetry/nvml_library.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "tests/bench/telemetry/fake_gpus.h"

namespace cnnbench::bench::telemetry {
namespace {

using namespace fake;

TEST(Nvml, MissingLibraryGivesOneLineAndNoException) {
  const std::string path = "/nonexistent/libnvidia-ml.so.1";
  Nvml nvml(path);
  EXPECT_FALSE(nvml.available());
  EXPECT_EQ(nvml.reason(), "NVML not found (/nonexistent/libnvidia-ml.so.1): GPU telemetry off");
  NvmlGpu gpu = nvml.open(kBusyGpu);
  EXPECT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.error, nvml.reason());
  EXPECT_EQ(nvml.read(gpu, 5).read_mask, 0);
}

TEST(Nvml, DefaultSonameWhereTheDriverIsAbsent) {
  Nvml nvml;
  EXPECT_EQ(nvml.library_path(), "libnvidia-ml.so.1");
  if (nvml.available()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  EXPECT_EQ(nvml.reason(), "NVML not found (libnvidia-ml.so.1): GPU telemetry off");
}

TEST(Nvml, ALibraryThatIsNotNvml) {
  Nvml nvml("libm.so.6");
  EXPECT_FALSE(nvml.available());
  EXPECT_EQ(nvml.reason(), "NVML (libm.so.6) lacks nvmlInit_v2: GPU telemetry off");
}

TEST(Nvml, FailingInitGivesItsError) {
  Nvml nvml(FAKE_NVML_INIT_FAILS);
  EXPECT_FALSE(nvml.available());
  EXPECT_EQ(nvml.reason(), "nvmlInit failed: Driver Not Loaded: GPU telemetry off");
}

TEST(Nvml, ReadsEveryFigureInItsUnit) {
  Nvml nvml(FAKE_NVML);
  ASSERT_TRUE(nvml.available()) << nvml.reason();
  NvmlGpu gpu = nvml.open(kBusyGpu);
  ASSERT_TRUE(gpu.ok()) << gpu.error;
  EXPECT_EQ(gpu.name, "Fake H100 A");
  EXPECT_EQ(gpu.nvlink_counters().size(), 4U * 3U) << "links 0-3, three of the four counters each";

  const GpuSample a = nvml.read(gpu, 1000);
  const GpuSample b = nvml.read(gpu, 2000);
  EXPECT_EQ(a.time_ms, 1000);
  for (int f = 0; f < kFigureCount; ++f)
    EXPECT_TRUE(a.has(static_cast<Figure>(f))) << figure_key(static_cast<Figure>(f));
  // The fake alternates between two values per query.
  EXPECT_FLOAT_EQ(std::min(a.utilization_pct, b.utilization_pct), 90);
  EXPECT_FLOAT_EQ(std::max(a.utilization_pct, b.utilization_pct), 100);
  EXPECT_FLOAT_EQ(a.memory_used_mib, 40960);             // bytes / 2^20
  EXPECT_FLOAT_EQ(std::min(a.power_w, b.power_w), 650);  // mW / 1000
  EXPECT_FLOAT_EQ(std::max(a.power_w, b.power_w), 700);
  EXPECT_FLOAT_EQ(std::min(a.temperature_c, b.temperature_c), 60);
  EXPECT_FLOAT_EQ(a.sm_clock_mhz, 1980);
  EXPECT_FLOAT_EQ(a.memory_clock_mhz, 2619);
  EXPECT_EQ(a.clock_event_reasons, 0x10U);  // sync boost
  EXPECT_EQ(a.pcie_replays, 5U);
  EXPECT_EQ(a.nvlink_errors, 1U + 2U + 3U + 4U);
  for (const FigureStatus& s : gpu.status) {
    EXPECT_TRUE(s.supported);
    EXPECT_EQ(s.failures, 0);
  }
}

TEST(Nvml, NotSupportedMarksTheFigureAndTheRunGoesOn) {
  Nvml nvml(FAKE_NVML);
  NvmlGpu gpu = nvml.open(kMigGpu);
  ASSERT_TRUE(gpu.ok()) << gpu.error;
  EXPECT_FALSE(gpu.figure(Figure::NvLinkErrors).supported) << "no active NVLink";
  const GpuSample s = nvml.read(gpu, 1);
  EXPECT_TRUE(s.has(Figure::MemoryUsed));
  EXPECT_FLOAT_EQ(s.memory_used_mib, 10240);
  EXPECT_TRUE(s.has(Figure::SmClock));
  for (const Figure f : {Figure::Utilization, Figure::Power, Figure::Temperature, Figure::ClockEventReasons,
                         Figure::PcieReplays, Figure::NvLinkErrors}) {
    EXPECT_FALSE(s.has(f)) << figure_key(f);
    EXPECT_FALSE(gpu.figure(f).supported) << figure_key(f);
    EXPECT_EQ(gpu.figure(f).failures, 0) << figure_key(f);
  }
  EXPECT_EQ(gpu.figure(Figure::Power).why_unsupported, "not supported");
  const GpuSample again = nvml.read(gpu, 2);
  EXPECT_EQ(again.read_mask, s.read_mask);
}

TEST(Nvml, OtherErrorsAreCountedAndTheFigureLeftOut) {
  Nvml nvml(FAKE_NVML);
  NvmlGpu gpu = nvml.open(kFlakyGpu);
  ASSERT_TRUE(gpu.ok());
  int with_power = 0;
  for (int i = 0; i < 4; ++i) with_power += nvml.read(gpu, i).has(Figure::Power) ? 1 : 0;
  EXPECT_EQ(with_power, 2);
  EXPECT_TRUE(gpu.figure(Figure::Power).supported);
  EXPECT_EQ(gpu.figure(Figure::Power).failures, 2);
  EXPECT_EQ(gpu.figure(Figure::Power).last_error, "nvmlDeviceGetPowerUsage: GPU is lost");
}

TEST(Nvml, UnknownUuidIsAnErrorForThatGpuOnly) {
  Nvml nvml(FAKE_NVML);
  const NvmlGpu gpu = nvml.open(kUnknownGpu);
  EXPECT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.error, "nvmlDeviceGetHandleByUUID(" + kUnknownGpu.uuid + "): Not Found");
  EXPECT_TRUE(nvml.open(kBusyGpu).ok());
}

TEST(Nvml, OldDriverLeavesNewerFiguresUnsupported) {
  Nvml nvml(FAKE_NVML_OLD_DRIVER);
  ASSERT_TRUE(nvml.available()) << nvml.reason();
  NvmlGpu gpu = nvml.open(kBusyGpu);
  ASSERT_TRUE(gpu.ok());
  EXPECT_FALSE(gpu.figure(Figure::Temperature).supported);
  EXPECT_EQ(gpu.figure(Figure::Temperature).why_unsupported, "driver lacks nvmlDeviceGetTemperatureV");
  EXPECT_EQ(gpu.figure(Figure::ClockEventReasons).why_unsupported,
            "driver lacks nvmlDeviceGetCurrentClocksEventReasons");
  const GpuSample s = nvml.read(gpu, 1);
  EXPECT_TRUE(s.has(Figure::MemoryUsed)) << "nvmlDeviceGetMemoryInfo when _v2 is missing";
  EXPECT_FLOAT_EQ(s.memory_used_mib, 40960);
  EXPECT_FALSE(s.has(Figure::Temperature));
  EXPECT_TRUE(s.has(Figure::Power));
}

TEST(Nvml, TwoInstancesShareTheLibrary) {
  // NVML counts nvmlInit calls; each object shuts down its own.
  auto first = std::make_unique<Nvml>(FAKE_NVML);
  Nvml second(FAKE_NVML);
  first.reset();
  NvmlGpu gpu = second.open(kBusyGpu);
  EXPECT_TRUE(gpu.ok()) << gpu.error;
}

}  // namespace
}  // namespace cnnbench::bench::telemetry
