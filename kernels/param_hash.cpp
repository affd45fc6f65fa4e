#include "kernels/param_hash.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace cnnbench::kernels {

void check_param_layout_tiles(const std::vector<models::ParamSlot>& layout) {
  int64_t next = 0;
  for (size_t i = 0; i < layout.size(); ++i) {
    if (layout[i].offset != next || layout[i].count < 0) {
      throw std::invalid_argument("parameter slot " + std::to_string(i) + " starts at " +
                                  std::to_string(layout[i].offset) + " with " +
                                  std::to_string(layout[i].count) +
                                  " elements; the layout must tile the flat buffer in order (next "
                                  "offset " + std::to_string(next) + ")");
    }
    next += layout[i].count;
  }
}

ParamHashes param_hashes_from_sums(std::vector<uint64_t> tensor_sums) {
  ParamHashes h;
  uint64_t total = 0;
  h.per_tensor.reserve(tensor_sums.size());
  for (const uint64_t s : tensor_sums) {
    total += s;  // mod 2^64
    h.per_tensor.push_back(param_hash_finish(s));
  }
  h.total = param_hash_finish(total);
  h.tensor_sums = std::move(tensor_sums);
  return h;
}

uint64_t param_hash_sum_host(const float* flat, int64_t begin, int64_t end) {
  uint64_t s = 0;
  for (int64_t i = begin; i < end; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, flat + i, sizeof bits);
    s += param_hash_term(static_cast<uint64_t>(i), bits);
  }
  return s;
}

ParamHashes hash_parameters_host(const float* flat, const std::vector<models::ParamSlot>& layout) {
  check_param_layout_tiles(layout);
  std::vector<uint64_t> sums(layout.size(), 0);
  for (size_t t = 0; t < layout.size(); ++t) {
    sums[t] = param_hash_sum_host(flat, layout[t].offset, layout[t].offset + layout[t].count);
  }
  return param_hashes_from_sums(std::move(sums));
}

std::vector<ParamHashChunk> param_hash_chunks(const std::vector<models::ParamSlot>& layout,
                                              int64_t chunk_elements) {
  if (chunk_elements < 1) {
    throw std::invalid_argument("param_hash_chunks: chunk_elements must be >= 1, got " +
                                std::to_string(chunk_elements));
  }
  check_param_layout_tiles(layout);
  std::vector<ParamHashChunk> chunks;
  for (size_t t = 0; t < layout.size(); ++t) {
    const int64_t end = layout[t].offset + layout[t].count;
    for (int64_t b = layout[t].offset; b < end; b += chunk_elements) {
      chunks.push_back(ParamHashChunk{.begin = b,
                                      .end = std::min(end, b + chunk_elements),
                                      .tensor = static_cast<int32_t>(t)});
    }
  }
  return chunks;
}

std::vector<uint64_t> tensor_sums_from_chunks(const std::vector<ParamHashChunk>& chunks,
                                              const std::vector<uint64_t>& chunk_sums,
                                              size_t tensors) {
  if (chunk_sums.size() != chunks.size()) {
    throw std::invalid_argument("tensor_sums_from_chunks: " + std::to_string(chunk_sums.size()) +
                                " sums for " + std::to_string(chunks.size()) + " chunks");
  }
  std::vector<uint64_t> sums(tensors, 0);
  for (size_t c = 0; c < chunks.size(); ++c) sums.at(static_cast<size_t>(chunks[c].tensor)) += chunk_sums[c];
  return sums;
}

}  // namespace cnnbench::kernels
