#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/mixed_radix.h"
#include "kernels/cuda/param_copy.cuh"

namespace cnnbench::kernels::cuda {
namespace {

constexpr int kCopyThreads = 256;

/// Index on the layer's side of logical element (k, c, rs).
__device__ __forceinline__ int64_t layer_index(const ParamCopyEntry& e, int64_t k, int64_t c,
                                               int64_t rs) {
  return e.krsc != 0 ? (k * e.rs + rs) * e.stored_c + c : (k * e.stored_c + c) * e.rs + rs;
}

/// One block per chunk. Threads stride through the chunk's elements; the side
/// iterated over is written in order (coalesced), the other side is gathered
/// (weights are small and the gathers hit L2). Each thread decodes its first
/// index into (k, c, rs) once and then steps by the block size with carries
/// (mixed_radix.h): no 64-bit division per element.
template <typename T, bool kToLayers>
__global__ void __launch_bounds__(kCopyThreads)
    param_copy_kernel(const ParamCopyEntry* entries, const ParamCopyChunk* chunks) {
  const ParamCopyChunk chunk = chunks[blockIdx.x];
  const ParamCopyEntry e = entries[chunk.entry];
  const int64_t first = chunk.begin + threadIdx.x;
  if constexpr (kToLayers) {
    // The layer's side: KRSC digits (c, rs, k), KCRS digits (rs, c, k).
    const MixedRadix radix = e.krsc != 0 ? MixedRadix{e.stored_c, e.rs} : MixedRadix{e.rs, e.stored_c};
    const RadixDigits step = radix.decode(blockDim.x);
    RadixDigits d = radix.decode(first);
    for (int64_t i = first; i < chunk.end; i += blockDim.x) {
      const int64_t k = d.hi;
      const int64_t c = e.krsc != 0 ? d.lo : d.mid;
      const int64_t rs = e.krsc != 0 ? d.mid : d.lo;
      const float v = c < e.c ? static_cast<const float*>(e.src)[(k * e.c + c) * e.rs + rs] : 0.0F;
      static_cast<T*>(e.dst)[i] = from_float<T>(v);
      radix.advance(d, step);
    }
  } else {
    // The flat side, ((k·C + c)·RS + rs): digits (rs, c, k).
    const MixedRadix radix{e.rs, e.c};
    const RadixDigits step = radix.decode(blockDim.x);
    RadixDigits d = radix.decode(first);
    for (int64_t i = first; i < chunk.end; i += blockDim.x) {
      static_cast<float*>(e.dst)[i] =
          to_float(static_cast<const T*>(e.src)[layer_index(e, d.hi, d.mid, d.lo)]);
      radix.advance(d, step);
    }
  }
}

template <typename T>
void launch_typed(const ParamCopyEntry* entries, const ParamCopyChunk* chunks, int64_t blocks,
                  ParamCopyDirection direction, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(blocks));
  if (direction == ParamCopyDirection::ToLayers) {
    param_copy_kernel<T, true><<<grid, kCopyThreads, 0, stream>>>(entries, chunks);
  } else {
    param_copy_kernel<T, false><<<grid, kCopyThreads, 0, stream>>>(entries, chunks);
  }
  CNNBENCH_CHECK_LAUNCH();
}

}  // namespace

int64_t append_param_copy_chunks(const std::vector<ParamCopyEntry>& entries, size_t first,
                                 size_t last, ParamCopyDirection direction,
                                 std::vector<ParamCopyChunk>& chunks) {
  const auto start = static_cast<int64_t>(chunks.size());
  for (size_t i = first; i < std::min(last, entries.size()); ++i) {
    const ParamCopyEntry& e = entries[i];
    if (e.c < 1 || e.k < 1 || e.rs < 1 || e.stored_c < e.c) {
      throw std::invalid_argument("parameter copy entry " + std::to_string(i) + " has dims [" +
                                  std::to_string(e.k) + ", " + std::to_string(e.c) + ", " +
                                  std::to_string(e.rs) + "] with " + std::to_string(e.stored_c) +
                                  " stored channels");
    }
    const int64_t total =
        direction == ParamCopyDirection::ToLayers ? e.layer_elements() : e.flat_elements();
    for (int64_t b = 0; b < total; b += kParamCopyChunk) {
      ParamCopyChunk c;
      c.entry = static_cast<int32_t>(i);
      c.begin = b;
      c.end = std::min(total, b + kParamCopyChunk);
      chunks.push_back(c);
    }
  }
  return start;
}

void launch_param_copy(const ParamCopyEntry* entries, const ParamCopyChunk* chunks,
                       int64_t chunk_begin, int64_t chunk_end, ParamCopyDirection direction,
                       DType layer_dtype, cudaStream_t stream) {
  const int64_t blocks = chunk_end - chunk_begin;
  if (blocks <= 0) return;
  if (blocks > 0x7FFFFFFF) throw std::invalid_argument("launch_param_copy: too many chunks");
  const ParamCopyChunk* first = chunks + chunk_begin;
  switch (layer_dtype) {
    case DType::F32:
      launch_typed<float>(entries, first, blocks, direction, stream);
      return;
    case DType::F16:
      launch_typed<__half>(entries, first, blocks, direction, stream);
      return;
    case DType::BF16:
      launch_typed<__nv_bfloat16>(entries, first, blocks, direction, stream);
      return;
    case DType::I32:
      break;
  }
  throw std::invalid_argument("launch_param_copy: the layers' side must be F32, F16 or BF16");
}

}  // namespace cnnbench::kernels::cuda
