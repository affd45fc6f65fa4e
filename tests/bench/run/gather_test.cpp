// What rank 0 gathers from every rank: devices and figures survive the trip.
#include "bench/run/gather.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/bench/run/trainer_fakes.h"

namespace cnnbench::bench {
namespace {

TEST(Gather, RankFiguresRoundTripEveryField) {
  testing::FakeCommunicator comm(3);  // every rank sends what this one sends
  RankFigures mine;
  mine.host = "ip-10-0-1-23";
  mine.ordinal = 0;
  mine.devices = {"GPU-00000000"};
  mine.steps = 10;
  mine.images_per_sec = 1234.5;
  mine.step_time_ms = {1, 2, 3, 4, 5, 6};
  const auto all = gather_rank_figures(comm, mine);
  ASSERT_EQ(all.size(), 3U);
  EXPECT_EQ(all[2].host, mine.host);
  EXPECT_EQ(all[2].devices, mine.devices);
  EXPECT_EQ(all[2].ordinal, 0);
  EXPECT_EQ(all[2].steps, 10);
  EXPECT_DOUBLE_EQ(all[2].images_per_sec, 1234.5);
  EXPECT_DOUBLE_EQ(all[2].step_time_ms.p99, 5);
}

TEST(Gather, DevicesRoundTripEveryField) {
  testing::FakeCommunicator comm(2);  // every rank sends what this one sends
  DeviceEntry mine;
  mine.ordinal = 1;
  mine.name = "NVIDIA H100 80GB HBM3";
  mine.uuid = "GPU-5d5b";
  mine.pci_bus_id = "00000000:19:00.0";
  mine.host_id = "GPU-5d5b1c7e";
  mine.memory_bytes = int64_t{80} << 30;
  const std::vector<DeviceEntry> all = gather_devices(comm, mine);
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[1].ordinal, 1);
  EXPECT_EQ(all[1].name, mine.name);
  EXPECT_EQ(all[1].uuid, mine.uuid);
  EXPECT_EQ(all[1].pci_bus_id, mine.pci_bus_id);
  EXPECT_EQ(all[1].host_id, mine.host_id);
  EXPECT_EQ(all[1].memory_bytes, mine.memory_bytes);
}

}  // namespace
}  // namespace cnnbench::bench
