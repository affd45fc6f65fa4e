// Per-rank figures: each rank's own images/sec, the table that names a slow
// GPU, and the scaling efficiency.
#include "bench/report/rank_figures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cnnbench::bench {
namespace {

using ::testing::HasSubstr;

RankFigures gpu_rank(int rank, double images_per_sec) {
  RankFigures r;
  r.rank = rank;
  r.host = "ip-10-0-1-23";
  r.ordinal = rank;
  r.devices = {"GPU-0000000" + std::to_string(rank)};
  r.steps = 10;
  r.images_per_sec = images_per_sec;
  return r;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

TEST(RankFigures, OwnImagesPerSecLeavesOutTimeWaitingInTheAllReduce) {
  RunSummary s;
  s.steps = 4;
  s.step_times_ms = {100, 100, 100, 100};
  s.grad_hook_time_s = 0.080;  // 80 ms of the 400 ms waited in the all-reduce
  DeviceEntry gpu;
  gpu.ordinal = 3;
  gpu.uuid = "GPU-abc";
  const RankFigures r = own_figures(1, "h", gpu, 32, s);
  EXPECT_NEAR(r.images_per_sec, 4 * 32 / 0.320, 1e-9);
  EXPECT_EQ(r.ordinal, 3);
  EXPECT_EQ(r.devices, std::vector<std::string>{"GPU-abc"});

  const RankFigures cpu = own_figures(0, "h", DeviceEntry{}, 32, RunSummary{});
  EXPECT_EQ(cpu.devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(cpu.images_per_sec, 0.0);  // no timed step
}

TEST(RankFigures, TableNamesTheSlowestGpuMoreThanFivePercentBelowTheMedian) {
  const auto lines = rank_table_lines({gpu_rank(0, 1000), gpu_rank(1, 1010), gpu_rank(2, 900), gpu_rank(3, 1005)});
  const std::string text = joined(lines);
  EXPECT_THAT(text, HasSubstr("per-rank images/sec min / median / max: 900.00 (rank 2) / 1002.50 / 1010.00 (rank 1)"));
  EXPECT_THAT(text, HasSubstr("slowest: rank 2 (ip-10-0-1-23, CUDA 2 GPU-00000002) at 900.00 images/sec, 10.2% "
                              "below the median"));
  EXPECT_THAT(text, HasSubstr("  2     ip-10-0-1-23  2     GPU-00000002  900.00\n"));
}

TEST(RankFigures, NoSlowestWithinFivePercentAndNoTableForOneRank) {
  const std::string text = joined(rank_table_lines({gpu_rank(0, 1000), gpu_rank(1, 960)}));
  EXPECT_THAT(text, HasSubstr("min / median / max"));
  EXPECT_EQ(text.find("slowest"), std::string::npos) << text;
  EXPECT_TRUE(rank_table_lines({gpu_rank(0, 1000)}).empty());
}

TEST(RankFigures, TableGroupsRanksByHostAndNamesASlowHost) {
  // --map-by node over two hosts: ranks alternate; the second host runs slower.
  std::vector<RankFigures> ranks;
  for (int r = 0; r < 4; ++r) {
    RankFigures f = gpu_rank(r, r % 2 == 0 ? 1000 + r : 800 + r);
    f.host = r % 2 == 0 ? "ip-10-0-1-23" : "ip-10-0-1-24";
    f.ordinal = r / 2;
    ranks.push_back(f);
  }
  const std::string text = joined(rank_table_lines(ranks));
  EXPECT_THAT(text, HasSubstr("  rank  host          CUDA  device        images/sec\n"
                              "  0     ip-10-0-1-23  0     GPU-00000000  1000.00\n"
                              "  2     ip-10-0-1-23  1     GPU-00000002  1002.00\n"
                              "    ip-10-0-1-23: ranks 0, 2, median 1001.00, min 1000.00 (rank 0)\n"
                              "  1     ip-10-0-1-24  0     GPU-00000001  801.00\n"
                              "  3     ip-10-0-1-24  1     GPU-00000003  803.00\n"
                              "    ip-10-0-1-24: ranks 1, 3, median 802.00, min 801.00 (rank 1)\n"));
  EXPECT_THAT(text, HasSubstr("slowest host: ip-10-0-1-24 (ranks 1, 3) at a median of 802.00 images/sec, "
                              "11.0% below the median host\n"));
}

TEST(RankFigures, OneHostHasNoHostLines) {
  const std::string text = joined(rank_table_lines({gpu_rank(0, 1000), gpu_rank(1, 500)}));
  EXPECT_EQ(text.find("    ip-10-0-1-23:"), std::string::npos) << text;
  EXPECT_EQ(text.find("slowest host"), std::string::npos) << text;
}

TEST(RankFigures, ScalingEfficiencyAgainstABaseline) {
  EXPECT_DOUBLE_EQ(scaling_efficiency(3600, 4, 1000), 0.9);
  EXPECT_EQ(efficiency_line(3600, 4, 1000),
            "scaling efficiency: 90.0% (3600.00 images/sec on 4 devices vs 4 x 1000.00 images/sec of "
            "--baseline_images_per_sec)");
}

}  // namespace
}  // namespace cnnbench::bench
