// The replica check's parameter hash on the GPU (kernels/param_hash.h): one
// block per chunk sums the chunk's terms; the host adds the chunk sums into
// tensor sums. Integer sums, so the result equals the host's bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/param_hash.h"

namespace cnnbench::kernels::cuda {

/// out[c] = Σ_{i ∈ [chunks[c].begin, chunks[c].end)} param_hash_term(i, bits of flat[i]),
/// for c in [0, count). `flat` (fp32), `chunks` and `out` are device pointers.
/// One launch, no allocation. Throws std::invalid_argument for count < 0.
void launch_param_hash_chunks(const float* flat, const ParamHashChunk* chunks, int64_t count,
                              uint64_t* out, cudaStream_t stream);

}  // namespace cnnbench::kernels::cuda
