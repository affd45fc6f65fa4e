// kernels::enumerate_gpus() where GPUs are present: the devices look like what
// nvidia-smi prints. Skipped (with the reason) on machines without a GPU.
#include "kernels/gpu_info.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace cnnbench::kernels {
namespace {

TEST(GpuInfoGpu, ListsPlausibleDevices) {
  const GpuEnumeration e = enumerate_gpus();
  if (e.gpus.empty()) GTEST_SKIP() << "no GPU: " << e.error;
  EXPECT_TRUE(e.error.empty());
  EXPECT_GT(e.driver_version, 0);
  EXPECT_GE(e.driver_version / 1000, e.runtime_version / 1000) << "driver older than the runtime, yet devices listed";
  const std::regex uuid("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  const std::regex pci("[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\\.0");
  std::set<std::string> uuids;
  for (size_t i = 0; i < e.gpus.size(); ++i) {
    const GpuInfo& g = e.gpus[i];
    EXPECT_EQ(g.ordinal, static_cast<int>(i));
    EXPECT_FALSE(g.name.empty());
    EXPECT_TRUE(std::regex_match(g.uuid, uuid)) << g.uuid;
    EXPECT_TRUE(std::regex_match(g.pci_bus_id, pci)) << g.pci_bus_id;
    EXPECT_GT(g.memory_bytes, int64_t{1} << 30);
    EXPECT_GE(g.compute_capability_major, 5);
    EXPECT_GT(g.multiprocessors, 0);
    uuids.insert(g.uuid);
    RecordProperty("gpu" + std::to_string(i), g.name + " " + g.uuid + " " + g.pci_bus_id);
  }
  EXPECT_EQ(uuids.size(), e.gpus.size()) << "two devices with one UUID";
}

}  // namespace
}  // namespace cnnbench::kernels
