#include "models/analysis.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cnnbench::models {
namespace {

size_t at(NodeId id) { return static_cast<size_t>(id); }

}  // namespace

Consumers consumers(const Graph& graph) {
  const auto& nodes = graph.nodes();
  Consumers c(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const NodeId j : nodes[i].inputs) c[at(j)].push_back(static_cast<NodeId>(i));
  }
  return c;
}

std::vector<bool> backward_set(const Graph& graph, const Consumers& consumers) {
  const auto& nodes = graph.nodes();
  const auto count = static_cast<NodeId>(nodes.size());
  // upstream: a node with parameters at or before it; reaches: its output is
  // read, through some path, by the graph's output.
  std::vector<bool> upstream(nodes.size(), false), reaches(nodes.size(), false);
  for (NodeId i = 0; i < count; ++i) {
    bool u = has_parameters(nodes[at(i)]);
    for (const NodeId j : nodes[at(i)].inputs) u = u || upstream[at(j)];
    upstream[at(i)] = u;
  }
  for (NodeId i = count - 1; i >= 0; --i) {
    bool r = i == graph.output();
    for (const NodeId c : consumers[at(i)]) r = r || reaches[at(c)];
    reaches[at(i)] = r;
  }
  std::vector<bool> backward(nodes.size(), false);
  for (NodeId i = 1; i < count; ++i) backward[at(i)] = upstream[at(i)] && reaches[at(i)];
  return backward;
}

std::vector<NodeId> value_owners(const Graph& graph, const Consumers& consumers, const AliasRules& rules) {
  const auto& nodes = graph.nodes();
  const auto count = static_cast<NodeId>(nodes.size());
  std::vector<NodeId> owner(nodes.size(), -1);
  if (nodes.empty()) return owner;
  owner[0] = 0;
  for (NodeId i = 1; i < count; ++i) {
    const Node& n = nodes[at(i)];
    const NodeId j = n.inputs.front();
    if (rules.is_view && rules.is_view(i)) {
      owner[at(i)] = owner[at(j)];
    } else if (rules.not_stored && rules.not_stored(i)) {
      owner[at(i)] = -1;
    } else if (n.op() == OpKind::Activation && j != 0 && consumers[at(j)].size() == 1 && owner[at(j)] == j &&
               rules.output_free_after_use && rules.output_free_after_use(j)) {
      owner[at(i)] = j;  // overwrites its input in place
    } else {
      owner[at(i)] = i;
    }
  }
  return owner;
}

GradientPlan plan_gradients(const Graph& graph, const Consumers& consumers, const std::vector<bool>& backward,
                            const GradientRules& rules) {
  const auto& nodes = graph.nodes();
  const auto count = static_cast<NodeId>(nodes.size());
  const NodeId out = graph.output();
  const auto has_tensor = [&](NodeId i) {
    return i > 0 && i != out && backward[at(i)] && (!rules.has_tensor || rules.has_tensor(i));
  };
  const auto is_view = [&](NodeId i) { return rules.is_view && rules.is_view(i); };

  // Parents: a view's gradient is its input's; an Add's sole-use input that is
  // not a view shares the Add's (the identity's backward needs no copy).
  std::vector<NodeId> parent(nodes.size(), -1);
  for (NodeId i = 1; i < count; ++i) {
    if (!has_tensor(i)) continue;
    if (is_view(i)) {
      parent[at(i)] = nodes[at(i)].inputs.front();
      continue;
    }
    if (nodes[at(i)].op() != OpKind::Add) continue;
    for (const NodeId j : nodes[at(i)].inputs) {
      if (has_tensor(j) && consumers[at(j)].size() == 1 && !is_view(j)) parent[at(j)] = i;
    }
  }

  GradientPlan p;
  p.owner.assign(nodes.size(), -1);
  const auto find_owner = [&](NodeId x) {
    while (parent[at(x)] >= 0) x = parent[at(x)];
    return x;
  };
  for (NodeId i = 1; i < count; ++i) {
    if (!has_tensor(i)) continue;
    const NodeId o = find_owner(i);
    p.owner[at(i)] = has_tensor(o) ? o : -1;
  }

  // Per tensor: the unit whose backward writes it first (the last consumer) and
  // the one that reads it last (the producer of its lowest member).
  p.first_writer.assign(nodes.size(), -1);
  std::vector<NodeId> last_reader(nodes.size(), count);
  for (NodeId i = 1; i < count; ++i) {
    const NodeId o = p.owner[at(i)];
    if (o >= 0) last_reader[at(o)] = std::min(last_reader[at(o)], i);
  }
  for (const BackwardUnit& u : rules.units) {
    if (u.output < 0 || u.output >= count) {
      throw std::invalid_argument("backward unit of node " + std::to_string(u.output) + " outside graph '" +
                                  graph.name() + "'");
    }
    for (const NodeId j : u.inputs) {
      if (j < 0 || j >= count) {
        throw std::invalid_argument("backward unit input " + std::to_string(j) + " outside graph '" +
                                    graph.name() + "'");
      }
      if (p.shares_gradient(j, u.output)) continue;
      const NodeId o = p.owner[at(j)];
      if (o >= 0) p.first_writer[at(o)] = std::max(p.first_writer[at(o)], u.output);
    }
  }

  // Best fit, in the order backward first writes the tensors.
  std::vector<NodeId> owners;
  for (NodeId i = 1; i < count; ++i) {
    if (p.owner[at(i)] == i && p.first_writer[at(i)] >= 0) owners.push_back(i);
  }
  std::stable_sort(owners.begin(), owners.end(),
                   [&](NodeId a, NodeId b) { return p.first_writer[at(a)] > p.first_writer[at(b)]; });
  p.buffer_of.assign(nodes.size(), -1);
  std::vector<NodeId> buffer_last_reader;  // backward runs in descending node id
  for (const NodeId t : owners) {
    const int64_t need = rules.size(t);
    const NodeId first_writer = p.first_writer[at(t)];
    int best = -1;
    for (size_t b = 0; b < p.buffer_sizes.size(); ++b) {
      // Free once its last reader ran, strictly before this tensor's first writer.
      if (buffer_last_reader[b] > first_writer && p.buffer_sizes[b] >= need &&
          (best < 0 || p.buffer_sizes[b] < p.buffer_sizes[static_cast<size_t>(best)])) {
        best = static_cast<int>(b);
      }
    }
    if (best < 0) {
      p.buffer_sizes.push_back(need);
      buffer_last_reader.push_back(count);
      best = static_cast<int>(p.buffer_sizes.size()) - 1;
    }
    buffer_last_reader[static_cast<size_t>(best)] = last_reader[at(t)];
    p.buffer_of[at(t)] = best;
  }
  return p;
}

}  // namespace cnnbench::models
