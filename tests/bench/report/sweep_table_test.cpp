// The scaling sweep's table and JSON (weak scaling, efficiency against the
// first run or --baseline_images_per_sec).
#include "bench/report/sweep_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cnnbench::bench {
namespace {

using ::testing::HasSubstr;

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

const std::vector<SweepPoint> kPoints = {{1, 1000, false}, {2, 1900, false}, {4, 3600, false}, {8, 6400, true}};

TEST(ScalingSweep, TableIsWeakScalingAgainstTheOneGpuRun) {
  const std::string text = joined(sweep_table_lines(kPoints, 64, std::nullopt));
  EXPECT_THAT(text, HasSubstr("weak scaling: 64 images per GPU per step at every GPU count"));
  EXPECT_THAT(text, HasSubstr("  GPUs  images/sec  per GPU  efficiency\n"));
  EXPECT_THAT(text, HasSubstr("  2        1900.00   950.00  95.0%\n"));
  EXPECT_THAT(text, HasSubstr("  8        6400.00   800.00  80.0% (interrupted)\n"));
  EXPECT_THAT(text, HasSubstr("(the 1-GPU run: 1000.00)"));
}

TEST(ScalingSweep, ABaselineReplacesTheFirstRunAsReference) {
  const std::string text = joined(sweep_table_lines({{2, 1800, false}}, 32, 1000.0));
  EXPECT_THAT(text, HasSubstr("  2        1800.00   900.00  90.0%\n"));
  EXPECT_THAT(text, HasSubstr("--baseline_images_per_sec=1000"));
  // Without it, a sweep that starts at 2 GPUs is relative to that run.
  EXPECT_THAT(joined(sweep_table_lines({{2, 1800, false}, {4, 3240, false}}, 32, std::nullopt)),
              HasSubstr("  4        3240.00   810.00  90.0%\n"));
}

TEST(ScalingSweep, JsonHoldsEveryPoint) {
  const auto j = sweep_json(kPoints, 64, std::nullopt);
  EXPECT_EQ(j.at("scaling"), "weak");
  EXPECT_EQ(j.at("per_gpu_batch"), 64);
  EXPECT_DOUBLE_EQ(j.at("reference_images_per_sec").get<double>(), 1000.0);
  ASSERT_EQ(j.at("points").size(), 4U);
  EXPECT_DOUBLE_EQ(j.at("points")[2].at("efficiency").get<double>(), 0.9);
  EXPECT_TRUE(j.at("points")[3].at("interrupted").get<bool>());
}

}  // namespace
}  // namespace cnnbench::bench
