// Stand-alone ReLU and ReLU6 for the CUDA backend, where they are not fused
// into a BatchNorm (see batchnorm.cuh): relu = max(x, 0), relu6 = min(max(x, 0), 6)
// (models::ActivationAttrs), as torch.relu / torch.nn.ReLU6; NaN propagates.
//
// Storage type T ∈ {float, __half, __nv_bfloat16}, fp32 arithmetic. Tensors are
// flat (`count` elements), so the layout does not matter. 16-byte accesses when
// the pointers are 16-byte aligned. In place (y == x, dx == dy) is allowed.
// Launchers enqueue one kernel on `stream`, allocate nothing and never
// synchronise (CUDA-graph capturable).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "models/graph.h"

namespace cnnbench::kernels::cuda {

/// y = relu(x) or relu6(x). Bytes moved: 2·count·sizeof(T).
template <typename T>
void activation_forward(const T* x,  // (count), any layout
                        T* y,        // (count); may alias x
                        int64_t count, models::ActivationAttrs::Kind kind, cudaStream_t stream);

/// dx = dy where the forward output y is inside the linear range, else 0:
/// relu: y > 0 (torch's threshold_backward on the output); relu6: 0 < y < 6
/// (torch's hardtanh_backward; identical to testing the input). Taking y rather
/// than x lets the forward run in place. Bytes moved: 3·count·sizeof(T).
template <typename T>
void activation_backward(const T* y,   // (count): forward output
                         const T* dy,  // (count)
                         T* dx,        // (count); may alias dy or y
                         int64_t count, models::ActivationAttrs::Kind kind, cudaStream_t stream);

}  // namespace cnnbench::kernels::cuda
