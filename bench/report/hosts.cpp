#include "bench/report/hosts.h"

#include <algorithm>

#include "bench/report/text_report.h"

namespace cnnbench::bench {

std::vector<HostRanks> group_by_host(const std::vector<std::string>& host_of_rank) {
  std::vector<HostRanks> hosts;
  for (size_t r = 0; r < host_of_rank.size(); ++r) {
    const std::string name = host_of_rank[r].empty() ? std::string("unknown host") : host_of_rank[r];
    auto it = std::find_if(hosts.begin(), hosts.end(), [&name](const HostRanks& h) { return h.host == name; });
    if (it == hosts.end()) it = hosts.insert(hosts.end(), HostRanks{name, {}});
    it->ranks.push_back(static_cast<int>(r));
  }
  return hosts;
}

std::string rank_ranges(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += std::to_string(ranks[i]);
    if (j > i) {
      text += '-';
      text += std::to_string(ranks[j]);
    }
    i = j + 1;
  }
  return text;
}

std::string nodes_header_line(const std::vector<HostRanks>& hosts, size_t max_listed) {
  std::string list;
  for (size_t i = 0; i < hosts.size() && i < max_listed; ++i) {
    if (!list.empty()) list += "; ";
    list += hosts[i].host + (hosts[i].ranks.size() == 1 ? ": rank " : ": ranks ") + rank_ranges(hosts[i].ranks);
  }
  if (hosts.size() > max_listed) {
    const size_t more = hosts.size() - max_listed;
    list += "; and " + std::to_string(more) + " more host" + (more == 1 ? "" : "s");
  }
  return header_line("Nodes", std::to_string(hosts.size()) + " (" + list + ")");
}

}  // namespace cnnbench::bench
