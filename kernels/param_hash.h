// A hash of the fp32 master parameters that every replica of a data-parallel
// run must agree on bit for bit (the replica check), computed the same way on
// the host and on a GPU.
//
// Definition: over the flat buffer's 32-bit words w_i (Graph::param_layout
// order), the hash of a range R is
//     finish( Σ_{i ∈ R} term(i, w_i)  mod 2^64 ),
//     term(i, w) = mix64((i << 32) ⊕ w ⊕ kTermSalt),  finish(s) = mix64(s ⊕ kFinishSalt),
// with mix64 the SplitMix64 finaliser (Steele, Lea, Flood, OOPSLA 2014). A sum
// of 64-bit integers is exactly associative and commutative, so any split of
// the work — GPU blocks, host threads, per-tensor partial sums added later —
// gives the same value: the hash is deterministic by construction, and the
// whole buffer's sum is the sum of its tensors' sums. Binding the index into
// each term makes a moved value change the hash, and one flipped bit changes
// its term (mix64 is a bijection) and so, but for a 2^-64 chance, the sum.
// Equal bits hash equal: +0 and −0, or two NaN payloads, do not.
//
// Host code, no device; the CUDA version is kernels/cuda/param_hash.cuh.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/host_device.h"
#include "models/graph.h"


namespace cnnbench::kernels {

inline constexpr uint64_t kParamHashTermSalt = 0x5041524148415348ULL;    // "PARAHASH"
inline constexpr uint64_t kParamHashFinishSalt = 0x434e4e42454e4348ULL;  // "CNNBENCH"

/// SplitMix64's finaliser: a bijection of 64-bit words with full avalanche.
CNNBENCH_HOST_DEVICE constexpr uint64_t param_hash_mix(uint64_t z) {
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

/// The term of word `bits` at flat index `index`.
CNNBENCH_HOST_DEVICE constexpr uint64_t param_hash_term(uint64_t index, uint32_t bits) {
  return param_hash_mix((index << 32U) ^ bits ^ kParamHashTermSalt);
}

/// The hash of a range from the sum of its terms.
CNNBENCH_HOST_DEVICE constexpr uint64_t param_hash_finish(uint64_t sum) {
  return param_hash_mix(sum ^ kParamHashFinishSalt);
}

/// The hash of the whole buffer and of each parameter tensor.
struct ParamHashes {
  uint64_t total = 0;                 ///< finish(Σ of every term)
  std::vector<uint64_t> per_tensor;   ///< finish(Σ of the slot's terms), layout order
  std::vector<uint64_t> tensor_sums;  ///< the unfinished sums (total = finish(Σ of these))
};

/// Combines per-tensor sums (layout order) into ParamHashes.
ParamHashes param_hashes_from_sums(std::vector<uint64_t> tensor_sums);

/// Hashes `flat` (fp32, Graph::param_layout order) on the host, slot by slot.
/// The slots must tile [0, total) without gaps or overlaps in order; throws
/// std::invalid_argument otherwise.
ParamHashes hash_parameters_host(const float* flat, const std::vector<models::ParamSlot>& layout);

/// A piece of one tensor, [begin, end) in flat elements, for splitting the
/// hash over GPU blocks: chunks never cross a tensor's boundary.
struct ParamHashChunk {
  int64_t begin = 0;
  int64_t end = 0;
  int32_t tensor = 0;  ///< index into the layout
  int32_t pad_ = 0;
};

/// Elements per chunk (one GPU block hashes one chunk).
inline constexpr int64_t kParamHashChunkElements = int64_t{1} << 16;

/// The chunks of `layout`, in order, at most `chunk_elements` each (a tensor
/// of 0 elements gets none). Throws std::invalid_argument for a layout that
/// does not tile the buffer or chunk_elements < 1.
std::vector<ParamHashChunk> param_hash_chunks(const std::vector<models::ParamSlot>& layout,
                                              int64_t chunk_elements = kParamHashChunkElements);

/// Adds per-chunk sums (same order as `chunks`) into per-tensor sums of
/// `tensors` tensors.
std::vector<uint64_t> tensor_sums_from_chunks(const std::vector<ParamHashChunk>& chunks,
                                              const std::vector<uint64_t>& chunk_sums,
                                              size_t tensors);

/// The sum of the terms of flat[begin, end) (host).
uint64_t param_hash_sum_host(const float* flat, int64_t begin, int64_t end);

/// Checks that `layout` tiles [0, Σ counts) in order; throws std::invalid_argument.
void check_param_layout_tiles(const std::vector<models::ParamSlot>& layout);

}  // namespace cnnbench::kernels
