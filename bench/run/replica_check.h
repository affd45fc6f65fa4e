// The replica check: in data-parallel training every replica applies the same
// averaged gradients to the same weights with the same deterministic
// optimizer, so every replica's fp32 master parameters must stay bitwise
// identical. Each worker hashes its parameters (kernels/param_hash.h, on its
// device), the hashes are all-gathered, and a replica whose hash differs from
// the majority is named with the first tensor that differs and by how much.
// Nothing here prints: the caller reports ReplicaCheck::lines().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "models/graph.h"
#include "mpi/communicator.h"

namespace cnnbench::bench {

/// Who a replica is, for messages.
struct ReplicaIdentity {
  int rank = 0;          ///< worker index in the communicator
  std::string host;
  int ordinal = -1;      ///< CUDA ordinal; -1 on the CPU
  std::string uuid;      ///< GPU UUID; empty on the CPU
  [[nodiscard]] std::string to_string() const;  ///< "rank 1 (ip-10-0-0-5, CUDA 1, GPU-5d5b...)"
};

/// One replica that disagrees with the majority.
struct ReplicaMismatch {
  ReplicaIdentity replica;
  uint64_t hash = 0;
  std::string first_tensor;    ///< torchvision name of the first differing tensor (layout order)
  int64_t tensor_elements = 0;
  int64_t differing_elements = 0;  ///< elements of that tensor whose bits differ
  double max_abs_diff = 0;     ///< against the majority's copy of that tensor (NaN-aware: inf)
};

/// The outcome of check_replicas.
struct ReplicaCheck {
  int replicas = 0;       ///< workers compared
  int after_step = 0;     ///< timed steps done when checked
  uint64_t hash = 0;      ///< the majority's parameter hash
  /// No hash is held by more replicas than every other (e.g. 1 against 1):
  /// the lowest rank's stands in for the majority.
  bool tie = false;
  int reference_rank = 0;  ///< the replica compared against
  std::vector<ReplicaMismatch> mismatches;  ///< empty when identical
  double seconds = 0;     ///< wall time of the check on this worker
  [[nodiscard]] bool identical() const { return mismatches.empty(); }
  /// "replicas: identical across 4 GPUs (parameter hash 0x1234abcd5678ef90)" or
  /// the error lines, one per mismatching replica.
  [[nodiscard]] std::vector<std::string> lines(const std::string& device_word) const;
};

/// Collective over `comm` (every worker calls it, in the same order): hashes
/// `executable`'s parameters over `layout`, gathers the hashes and, on a
/// mismatch, gathers the first differing tensor of each mismatching replica
/// to measure the difference. Every worker returns the same result. A single
/// worker returns an identical check of 1 replica.
ReplicaCheck check_replicas(mpi::Communicator& comm, kernels::Executable& executable,
                            const models::Graph& shaped_graph, const ReplicaIdentity& me,
                            int after_step);

/// "0x0123456789abcdef".
std::string hex64(uint64_t v);

/// A test-only fault injector: CNNBENCH_FAULT_INJECT_FLIP_BIT="RANK:ELEMENT:BIT"
/// flips bit BIT (0..31) of fp32 parameter ELEMENT on worker RANK before each
/// replica check. Returns the parsed triple, or nothing when `value` is empty;
/// throws std::invalid_argument naming the variable for a malformed value.
struct FlipBit {
  int rank = 0;
  int64_t element = 0;
  int bit = 0;
};
std::optional<FlipBit> parse_fault_flip_bit(const std::string& value);
/// Applies `flip` to `executable` when `rank` matches (read, flip, write).
void apply_fault_flip_bit(const FlipBit& flip, int rank, kernels::Executable& executable);
inline constexpr const char* kFaultFlipBitVariable = "CNNBENCH_FAULT_INJECT_FLIP_BIT";

}  // namespace cnnbench::bench
