// The nodes of a run: ranks grouped by host, rank ranges, the header's Nodes line.
#include "bench/report/hosts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cnnbench::bench {
namespace {

TEST(Hosts, GroupsRanksByHostInTheOrderOfTheirLowestRank) {
  // --map-by node: ranks alternate between two hosts; a rank with no host name.
  const auto hosts = group_by_host({"ip-10-0-1-24", "ip-10-0-1-23", "ip-10-0-1-24", "ip-10-0-1-23", ""});
  ASSERT_EQ(hosts.size(), 3U);
  EXPECT_EQ(hosts[0].host, "ip-10-0-1-24");
  EXPECT_EQ(hosts[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(hosts[1].host, "ip-10-0-1-23");
  EXPECT_EQ(hosts[1].ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(hosts[2].host, "unknown host");
  EXPECT_EQ(hosts[2].ranks, (std::vector<int>{4}));
  EXPECT_TRUE(group_by_host({}).empty());
}

TEST(Hosts, RankRanges) {
  EXPECT_EQ(rank_ranges({0, 1, 2, 3, 8, 10, 11}), "0-3, 8, 10-11");
  EXPECT_EQ(rank_ranges({11, 10, 3, 3, 2}), "2-3, 10-11");
  EXPECT_EQ(rank_ranges({5}), "5");
  EXPECT_EQ(rank_ranges({}), "");
}

TEST(Hosts, NodesHeaderLine) {
  std::vector<std::string> of_rank;
  for (int r = 0; r < 16; ++r) of_rank.push_back(r < 8 ? "ip-10-0-1-23" : "ip-10-0-1-24");
  EXPECT_EQ(nodes_header_line(group_by_host(of_rank)),
            "Nodes:       2 (ip-10-0-1-23: ranks 0-7; ip-10-0-1-24: ranks 8-15)");
  EXPECT_EQ(nodes_header_line(group_by_host({"a"})), "Nodes:       1 (a: rank 0)");
  std::vector<std::string> many;
  for (int r = 0; r < 16; ++r) many.push_back("node-" + std::to_string(r));
  EXPECT_EQ(nodes_header_line(group_by_host(many), 2), "Nodes:       16 (node-0: rank 0; node-1: rank 1; and 14 more hosts)");
}

}  // namespace
}  // namespace cnnbench::bench
