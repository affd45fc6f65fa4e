// Softmax cross-entropy for the CUDA backend, as torch.nn.CrossEntropyLoss
// (reduction='mean') on logits [N, classes] and int32 labels
// (models::SoftmaxCrossEntropyAttrs):
//
//   lse_i   = max_k x_ik + log Σ_k exp(x_ik − max_k x_ik)      (log-sum-exp per row)
//   loss    = (1/N) Σ_i (lse_i − x_i,label_i)
//   dlogits = (softmax(x_i) − one_hot(label_i)) · loss_scale / N
//
// Logits and dlogits are row-major [N, classes] in storage type T ∈ {float,
// __half, __nv_bfloat16} (the output of the last fully connected layer, so the
// activation layout does not matter); arithmetic is fp32. The loss is reduced
// in a fixed order (per-row values in scratch, then one block), so it is
// bitwise reproducible. loss_scale is read from device memory (the dynamic loss
// scaler's state, see optimizer.cuh), so a captured CUDA graph follows its
// changes without host synchronisation. A label outside [0, classes) makes that
// row's loss NaN (PyTorch raises an error instead).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cnnbench::kernels::cuda {

/// Bytes of scratch softmax_cross_entropy needs: one fp32 per row.
int64_t softmax_cross_entropy_scratch_bytes(int n);

/// Mean softmax cross-entropy of the batch into *loss (device, fp32, unscaled)
/// and, when dlogits != nullptr, its gradient scaled by *loss_scale (1 when
/// loss_scale is nullptr). dlogits may alias logits. Two launches on `stream`;
/// no allocation, no synchronisation. Throws std::invalid_argument for n or
/// classes < 1, null required pointers or too little scratch.
/// Bytes moved: logits read twice (the second time mostly from L1/L2),
/// dlogits written once: ≈ (1 + [dlogits])·N·classes·sizeof(T) + 8·N.
template <typename T>
void softmax_cross_entropy(const T* logits,          // (N, classes) row-major
                           const int32_t* labels,    // (N), in [0, classes)
                           float* loss,              // (1), out: mean loss
                           T* dlogits,               // (N, classes) row-major, or nullptr
                           const float* loss_scale,  // (1) device, or nullptr for 1
                           void* scratch,            // scratch_bytes of device memory
                           int64_t scratch_bytes,    //
                           int n, int classes, cudaStream_t stream);

}  // namespace cnnbench::kernels::cuda
