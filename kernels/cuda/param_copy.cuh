// Copies between the flat fp32 parameter and gradient buffers (models::Graph::
// param_layout order, PyTorch's tensor layouts) and the tensors the CUDA layers
// read and write (storage type, layer layout, 256-byte aligned). Used by the
// CUDA executable only:
//
//   to the layers:  after every optimizer step, the fp32 master weights are
//                   rounded to the storage type and written in the layers'
//                   layouts (conv filters KRSC for NHWC runs, with zero
//                   channels where the first layer's input is padded);
//   to the flat buffer: after a layer's weight gradient is computed in its own
//                   type and layout, it is converted to fp32 in PyTorch's
//                   layout at its place in the flat gradient buffer (padding
//                   channels dropped).
//
// Each tensor is described by its logical dims [K, C, RS] (PyTorch's order: a
// conv filter [K, C/groups, R·S], anything else [count, 1, 1]), the channels it
// has on the layer's side (stored_c ≥ C) and the layer's order of C and RS:
//   KCRS: stored index ((k·stored_c + c)·RS + rs)
//   KRSC: stored index ((k·RS + rs)·stored_c + c)
// The flat side is always ((k·C + c)·RS + rs).
//
// Work is cut into chunks of kParamCopyChunk elements, one thread block each,
// so that one launch covers many tensors of very different sizes (a whole
// network's weights after the optimizer, or one layer's weight and bias after
// its backward). Tables are built on the host and uploaded once, at set-up;
// launches read them from device memory and are CUDA-graph capturable.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace cnnbench::kernels::cuda {

/// Elements per thread block of a copy launch.
inline constexpr int64_t kParamCopyChunk = 4096;

/// One tensor to copy. Pointers are device addresses fixed at set-up.
struct ParamCopyEntry {
  const void* src =
      nullptr;          ///< to the layers: fp32 master; to the flat buffer: the layer's tensor
  void* dst = nullptr;  ///< to the layers: the layer's tensor; to the flat buffer: fp32 gradient
  int64_t k = 1;        ///< logical [K, C, RS]
  int64_t c = 1;
  int64_t rs = 1;
  int64_t stored_c = 1;  ///< channels on the layer's side (≥ c; extra ones are zero)
  int32_t krsc = 0;      ///< 1: the layer's side is KRSC, 0: KCRS
  int32_t pad_ = 0;
  /// Elements a launch iterates over: the layer's side (to the layers, so that
  /// padding channels are written) or the flat side (to the flat buffer).
  [[nodiscard]] int64_t layer_elements() const { return k * stored_c * rs; }
  [[nodiscard]] int64_t flat_elements() const { return k * c * rs; }
};

/// A chunk of one entry: elements [begin, end) of the iteration space.
struct ParamCopyChunk {
  int32_t entry = 0;
  int32_t pad_ = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

enum class ParamCopyDirection { ToLayers, ToFlat };

/// Appends the chunks of `entries[first, last)` to `chunks` for a copy in
/// `direction` (chunk.entry indexes `entries`); returns the index of the first
/// chunk appended. Throws std::invalid_argument for an entry with bad dims.
int64_t append_param_copy_chunks(const std::vector<ParamCopyEntry>& entries, size_t first,
                                 size_t last, ParamCopyDirection direction,
                                 std::vector<ParamCopyChunk>& chunks);

/// Runs chunks [chunk_begin, chunk_end) of the device tables `entries` and
/// `chunks` (uploaded copies of the host vectors) on `stream`. `layer_dtype` is
/// the type of the layers' side (F32, F16 or BF16); the flat side is fp32.
/// Rounding to fp16/bf16 is to nearest even. Allocates nothing; one launch (none
/// when the range is empty). Throws std::invalid_argument for a bad dtype.
void launch_param_copy(const ParamCopyEntry* entries, const ParamCopyChunk* chunks,
                       int64_t chunk_begin, int64_t chunk_end, ParamCopyDirection direction,
                       DType layer_dtype, cudaStream_t stream);

}  // namespace cnnbench::kernels::cuda
