// The hosts (nodes) of a run and the ranks on each, for the header's Nodes line and
// the per-rank table grouped by host.
#pragma once

#include <string>
#include <vector>

namespace cnnbench::bench {

/// One host and the ranks that run on it, in rank order.
struct HostRanks {
  std::string host;
  std::vector<int> ranks;
};

/// Groups ranks by host name: `host_of_rank[r]` is the host of rank r. Hosts come
/// in the order of their lowest rank (rank 0's host first); an empty name counts
/// as the host "unknown host".
std::vector<HostRanks> group_by_host(const std::vector<std::string>& host_of_rank);

/// Ranks as ranges, ascending: {0,1,2,3,8,10,11} -> "0-3, 8, 10-11". The input need
/// not be sorted; duplicates are listed once.
std::string rank_ranges(std::vector<int> ranks);

/// The header line naming the nodes, e.g.
///   "Nodes:       2 (ip-10-0-1-23: ranks 0-7; ip-10-0-1-24: ranks 8-15)"
/// At most `max_listed` hosts are listed by name; the rest are counted
/// ("...; and 14 more hosts").
std::string nodes_header_line(const std::vector<HostRanks>& hosts, size_t max_listed = 8);

}  // namespace cnnbench::bench
