// The plan cache file (--plan_cache=PATH): the autotuner's engine choice per
// convolution plan key, saved after set-up and read before it, so that a
// second run on the same GPU model and cuDNN rebuilds its plans from known
// engines instead of searching and timing again (cuDNN's own advice for
// autotuning results, CUDNN.md §4).
//
// Format: JSON, {"format": "cnnbench-plan-cache", "version": 1, "gpu": NAME,
// "cudnn_version": 91900, "entries": [{"key": {...}, "engine": {...}}]}. Keys
// carry no device ordinal (a choice holds for every GPU of the model); the file
// is rewritten atomically (a temporary file renamed over it).
//
// Never trusted: a file for another GPU model or cuDNN version, of another
// format, or unparsable, is ignored with a warning; an entry whose engine does
// not fit the graph any more is dropped by ConvPlan (it searches instead).
// Host code; needs no GPU. Nothing here prints.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/plan_cache.h"

namespace cnnbench::kernels::cuda {

/// What a plan cache file belongs to.
struct PlanCacheIdentity {
  std::string gpu_name;       ///< cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3"
  int64_t cudnn_version = 0;  ///< cudnnGetVersion() of the loaded library, e.g. 91900
};

/// The outcome of reading a plan cache file.
struct PlanCacheLoad {
  /// Entries with PlanKey::device set to the `device` passed to the reader.
  std::vector<std::pair<PlanKey, EngineChoice>> entries;
  /// Empty when the file was read or does not exist yet; else why it was
  /// ignored ("written for GPU 'A10G', this is 'H100 ...'").
  std::string warning;
  bool existed = false;  ///< the file was there
};

/// Reads `path` for `identity`, keys bound to CUDA ordinal `device`. Never
/// throws for the file's content or absence: see PlanCacheLoad::warning.
PlanCacheLoad read_plan_cache(const std::string& path, const PlanCacheIdentity& identity,
                              int device);

/// Writes `entries` (device ordinals dropped) for `identity` to `path`
/// atomically. Throws BackendError naming the path and the system's reason
/// when it cannot be written.
void write_plan_cache(const std::string& path, const PlanCacheIdentity& identity,
                      const std::vector<std::pair<PlanKey, EngineChoice>>& entries);

}  // namespace cnnbench::kernels::cuda
