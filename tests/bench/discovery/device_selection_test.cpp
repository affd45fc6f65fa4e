// Device selection on faked GPU enumerations: --device, --num_gpus and
// --scaling_sweep against what the process was given; errors, never a silent
// CPU run.
#include "bench/discovery/device_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "bench/status.h"

namespace cnnbench::bench {
namespace {

using ::testing::HasSubstr;

std::string uuid(int i) { return "GPU-5d5b1c7e-1f8a-4c4e-9a3b-01234567890" + std::to_string(i); }

kernels::GpuEnumeration gpus(int n) {
  kernels::GpuEnumeration e;
  e.built_with_cuda = true;
  e.driver_version = 12040;
  e.runtime_version = 12040;
  for (int i = 0; i < n; ++i) {
    kernels::GpuInfo g;
    g.ordinal = i;
    g.name = "NVIDIA H200";
    g.uuid = uuid(i);
    g.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    g.memory_bytes = int64_t{141} << 30;
    e.gpus.push_back(g);
  }
  if (n == 0) e.error = "cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected)";
  return e;
}

EnvLookup env(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    const auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

DeviceRequest config(DeviceChoice device = DeviceChoice::Auto, int num_gpus = 0) {
  DeviceRequest c;
  c.device = device;
  c.num_gpus = num_gpus;
  return c;
}

mpi::LaunchInfo two_ranks() {
  mpi::LaunchInfo l;
  l.launcher = mpi::Launcher::OpenMpi;
  l.world_size = 2;
  l.local_size = 2;
  l.evidence = "OMPI_COMM_WORLD_SIZE=2";
  return l;
}

template <typename E>
std::string error_of(const DeviceRequest& c, const mpi::LaunchInfo& launch, const EnvLookup& e,
                     const kernels::GpuEnumeration& g) {
  try {
    (void)select_devices(c, launch, e, g);
  } catch (const E& error) {
    return error.what();
  }
  ADD_FAILURE() << "no error of the expected type";
  return "";
}

TEST(DeviceSelection, CpuWhenAskedForEvenWithGpus) {
  const DeviceSelection s = select_devices(config(DeviceChoice::Cpu), {}, env({}), gpus(2));
  EXPECT_EQ(s.kind, "cpu");
  EXPECT_EQ(s.reason, "--device=cpu");
  EXPECT_TRUE(s.gpus.empty());
}

TEST(DeviceSelection, AutoTakesEveryGpuOrTheFirstNumGpus) {
  const DeviceSelection all = select_devices(config(), {}, env({}), gpus(4));
  EXPECT_EQ(all.kind, "gpu");
  ASSERT_EQ(all.gpus.size(), 4U);
  EXPECT_EQ(all.gpus[3].uuid, uuid(3));
  EXPECT_THAT(all.reason, HasSubstr("--device=auto: NVIDIA_VISIBLE_DEVICES unset"));

  const DeviceSelection two = select_devices(config(DeviceChoice::Auto, 2), {}, env({}), gpus(4));
  ASSERT_EQ(two.gpus.size(), 2U);
  EXPECT_EQ(two.gpus[1].ordinal, 1);
}

TEST(DeviceSelection, EcsUuidsMatchAndNameTheHostIds) {
  const DeviceSelection s =
      select_devices(config(), {}, env({{"NVIDIA_VISIBLE_DEVICES", uuid(1) + "," + uuid(0)}}), gpus(2));
  ASSERT_EQ(s.gpus.size(), 2U);
  EXPECT_THAT(s.discovery.source, HasSubstr("matched by UUID"));
}

TEST(DeviceSelection, AutoWithoutGpusTrainsOnTheCpuAndSaysWhy) {
  const DeviceSelection s = select_devices(config(), {}, env({}), gpus(0));
  EXPECT_EQ(s.kind, "cpu");
  EXPECT_THAT(s.reason, HasSubstr("--device=auto: no GPU is allocated or visible"));
}

TEST(DeviceSelection, AllocatedGpusThatCudaCannotShowAreAFailure) {
  kernels::GpuEnumeration none = gpus(0);
  none.driver_version = 0;
  none.error = "cudaGetDeviceCount: cudaErrorInsufficientDriver (CUDA driver is a stub library)";
  const std::string e = error_of<RunError>(config(), {}, env({{"NVIDIA_VISIBLE_DEVICES", uuid(0)}}), none);
  EXPECT_THAT(e, HasSubstr("GPUs were allocated (NVIDIA_VISIBLE_DEVICES=" + uuid(0)));
  EXPECT_THAT(e, HasSubstr("Likely cause"));
}

TEST(DeviceSelection, GpuAskedForWithoutAnyIsAFailure) {
  EXPECT_THAT(error_of<RunError>(config(DeviceChoice::Gpu), {}, env({}), gpus(0)),
              HasSubstr("--device=gpu: no usable GPU"));
}

TEST(DeviceSelection, MalformedVariablesAreUsageErrorsOnEveryRun) {
  EXPECT_THAT(error_of<UsageError>(config(DeviceChoice::Cpu), {}, env({{"NVIDIA_VISIBLE_DEVICES", "1,x"}}), gpus(0)),
              HasSubstr("NVIDIA_VISIBLE_DEVICES='1,x'"));
  EXPECT_THAT(error_of<UsageError>(config(), {}, env({{"CUDA_VISIBLE_DEVICES", "none"}}), gpus(2)),
              HasSubstr("CUDA_VISIBLE_DEVICES='none'"));
}

TEST(DeviceSelection, GpuCountsBeyondWhatWasGivenAreUsageErrors) {
  EXPECT_THAT(error_of<UsageError>(config(DeviceChoice::Auto, 5), {}, env({}), gpus(4)),
              HasSubstr("--num_gpus=5: more GPUs than this process was given; valid: 0 (every GPU) or 1 to 4"));
  EXPECT_THAT(error_of<UsageError>(config(DeviceChoice::Auto, 2), {}, env({}), gpus(0)),
              HasSubstr("--num_gpus=2: no GPU is allocated or visible"));
  DeviceRequest sweep = config();
  sweep.scaling_sweep = {1, 2, 8};
  EXPECT_THAT(error_of<UsageError>(sweep, {}, env({}), gpus(4)),
              HasSubstr("--scaling_sweep=1,2,8: 8 GPUs asked for, but this process was given 4"));
  EXPECT_THAT(error_of<UsageError>(sweep, {}, env({}), gpus(0)),
              HasSubstr("--scaling_sweep=1,2,8: the scaling sweep runs on GPUs"));
  sweep.scaling_sweep = {1, 4};
  EXPECT_EQ(select_devices(sweep, {}, env({}), gpus(4)).gpus.size(), 4U);
}

TEST(DeviceSelection, UnderALauncherEachRankTakesOneGpu) {
  const DeviceSelection s = select_devices(config(), two_ranks(), env({}), gpus(2));
  EXPECT_EQ(s.gpus.size(), 2U);  // the rank picks by its local rank
  EXPECT_THAT(error_of<UsageError>(config(DeviceChoice::Auto, 2), two_ranks(), env({}), gpus(2)),
              HasSubstr("--num_gpus=2: under Open MPI every rank trains on one GPU"));
  DeviceRequest sweep = config();
  sweep.scaling_sweep = {1, 2};
  EXPECT_THAT(error_of<UsageError>(sweep, two_ranks(), env({}), gpus(2)),
              HasSubstr("start cnnbench without Open MPI, or sweep node counts as one job per count"));
}

}  // namespace
}  // namespace cnnbench::bench
