// What a backend needs to know about a graph before it allocates anything: who
// reads each node's output, which nodes run a backward pass, which outputs can
// live in another node's buffer, and how activation gradients share buffers.
// Host-only and backend-neutral: where a backend's own structure matters (its
// fused steps, its element size, which of its layers read their output in
// backward) it passes rules in. Both executables (kernels/cpu, kernels/cuda)
// and the micro-benchmarks use it, so the rules are written once.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/graph.h"

namespace cnnbench::models {

/// consumers[i]: the nodes that read node i's output, in ascending order.
using Consumers = std::vector<std::vector<NodeId>>;
Consumers consumers(const Graph& graph);

/// Which nodes run a backward pass when training: node i > 0 does when a node
/// with parameters lies at or before it on a path from the input (so a
/// gradient is needed there or earlier) and its output reaches graph.output()
/// (so a gradient arrives). The input node never does.
std::vector<bool> backward_set(const Graph& graph, const Consumers& consumers);

/// The backend's answers to the questions the value plan asks about a node.
struct AliasRules {
  /// Node i's output is its first input's buffer seen another way (a flatten
  /// that moves no data).
  std::function<bool(NodeId i)> is_view;
  /// Node i's output is never stored on its own (a member fused into a later
  /// node's step, or the loss). Empty: every node's output is stored.
  std::function<bool(NodeId i)> not_stored;
  /// Nothing reads node j's output once its consumers ran (its producer's
  /// backward included), so an in-place activation may overwrite it.
  std::function<bool(NodeId j)> output_free_after_use;
};

/// Where each node's output lives: value_owner[i] is i for a buffer of its own,
/// an earlier node whose buffer it shares (a view shares its input's owner; an
/// activation overwrites its input when that input has no other consumer, owns
/// its buffer, is not the images and is free after use), 0 for the images
/// (node 0 owns them), and -1 when not stored.
std::vector<NodeId> value_owners(const Graph& graph, const Consumers& consumers, const AliasRules& rules);

/// One piece of work in the backward pass, as the backend groups nodes: the
/// node whose output gradient it reads, and the nodes whose gradients it writes.
struct BackwardUnit {
  NodeId output = 0;
  std::vector<NodeId> inputs;
};

/// The backend's answers to the questions the gradient plan asks.
struct GradientRules {
  /// Node i's output gradient is a tensor of its own (false: a member fused
  /// into a later step). Empty: every node's is. The loss never has one.
  std::function<bool(NodeId i)> has_tensor;
  /// Node i is a view (AliasRules::is_view): its gradient is its input's.
  std::function<bool(NodeId i)> is_view;
  /// Size of the gradient tensor of owner t, in the backend's unit (elements,
  /// aligned bytes).
  std::function<int64_t(NodeId t)> size;
  /// The backward units that run, in forward order (backward visits them in
  /// reverse): one per node on the CPU, one per step on CUDA.
  std::vector<BackwardUnit> units;
};

/// Activation gradients: which node's tensor each node's gradient lives in and
/// which buffer each tensor takes.
///
/// Sharing a tensor: a view's gradient is its input's. An input of an Add whose
/// only consumer is that Add, that is not the images and is not a view, shares
/// the Add's gradient tensor: d(a + b)/da is the identity, so the Add's backward
/// writes nothing for it (the rule for every backend).
///
/// Sharing a buffer: a tensor is written first by the backward of its last
/// consuming unit and read last by the backward of its lowest member's
/// producer; tensors whose [first write, last read] intervals do not overlap
/// share a buffer, assigned best fit in backward order.
struct GradientPlan {
  std::vector<NodeId> owner;         ///< per node: the tensor its gradient lives in; -1: none
  std::vector<NodeId> first_writer;  ///< per owner: the unit (by output) whose backward writes it first; -1: none
  std::vector<int> buffer_of;        ///< per owner: index into buffer_sizes; -1: no buffer (never written)
  std::vector<int64_t> buffer_sizes;

  /// Whether `input`'s gradient is `consumer`'s own (a view, or an Add input):
  /// the consumer's backward then writes nothing for it.
  [[nodiscard]] bool shares_gradient(NodeId input, NodeId consumer) const {
    const NodeId o = owner[static_cast<size_t>(input)];
    return o >= 0 && o == owner[static_cast<size_t>(consumer)];
  }
};

/// Plans the gradients of the nodes in `backward` (backward_set) other than the
/// loss. Throws std::invalid_argument when a unit names a node outside the graph.
GradientPlan plan_gradients(const Graph& graph, const Consumers& consumers, const std::vector<bool>& backward,
                            const GradientRules& rules);

}  // namespace cnnbench::models
