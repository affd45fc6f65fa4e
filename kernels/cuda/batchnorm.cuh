// BatchNorm2d for the CUDA backend, fused with the residual add and the ReLU
// that follow it in ResNet blocks:
//
//   y = relu( gamma·(x − mean)·invstd + beta [+ z] )
//
// Training forward (batch statistics), inference forward (running statistics)
// and backward. Semantics are torch.nn.BatchNorm2d's (see models::BatchNormAttrs):
// biased batch variance for normalising, unbiased into running_var, and
// running = (1 − momentum)·running + momentum·batch_stat.
//
// Storage type T ∈ {float, __half, __nv_bfloat16} for x, z, y, dy, dx, dz; fp32
// arithmetic inside; gamma, beta, statistics and parameter gradients are fp32
// (PyTorch's autocast keeps BatchNorm parameters in fp32 as well).
//
// Statistics: a one-pass Welford reduction per thread, merged across threads and
// blocks with Chan et al.'s pairwise update ("Updating formulae and a pairwise
// algorithm for computing sample variances", 1979) — numerically sound for large
// N·H·W and for data whose mean is large against its spread. All reductions run
// in a fixed order (per-block partials in scratch, then a finalize kernel), so
// results are bitwise reproducible run to run; no atomics.
//
// Layouts: NHWC (rows of C contiguous channels; threads across channels with
// 16-byte accesses when C is a multiple of 16/sizeof(T) and the pointers are
// 16-byte aligned, otherwise one element per access) and NCHW (one element per
// access).
//
// Stream use: every launcher enqueues on `stream` only and never synchronises;
// all launches are CUDA-graph capturable. Launchers allocate nothing: the
// training launchers take a scratch buffer of batchnorm_scratch_bytes(shape).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/backend.h"
#include "models/graph.h"

namespace cnnbench::kernels::cuda {

/// Bytes of scratch that batchnorm_forward_training and batchnorm_backward need
/// for a tensor of logical dims `shape` in either layout: per-block partial
/// statistics (at most 1024 blocks along N·H·W, 2·C + 1 floats each) and
/// 3·C floats of per-channel coefficients. Independent of T. Scratch may be
/// shared by all BatchNorm layers that run one after another on one stream.
int64_t batchnorm_scratch_bytes(const models::Shape& shape);

/// Training-mode forward. Computes the per-channel batch mean and biased
/// variance over N·H·W, writes save_mean and save_invstd = 1/sqrt(var + eps),
/// updates the running statistics, then y = relu?(gamma·(x − mean)·invstd + beta
/// [+ z]).
///
/// Requires N·H·W > 1 (as PyTorch: the unbiased variance needs two values), and
/// scratch_bytes >= batchnorm_scratch_bytes(shape). y may alias x or z (each
/// element is read before it is written, by the same thread). running_mean and
/// running_var may be nullptr (not tracked). Throws std::invalid_argument on a
/// violated precondition.
///
/// Kernels: statistics, finalize, apply (three launches). Bytes moved, in units
/// of E = N·C·H·W·sizeof(T): statistics read x (E); apply reads x and z (if
/// given) and writes y ((2 + [z])·E); plus about 8·C·min(1024, N·H·W/128) bytes
/// of partials.
template <typename T>
void batchnorm_forward_training(const T* x,             // (N, H, W, C) NHWC or (N, C, H, W) NCHW
                                const T* z,             // same as x, or nullptr: residual added before the ReLU
                                T* y,                   // same as x
                                const float* gamma,     // (C)
                                const float* beta,      // (C)
                                float* running_mean,    // (C), updated in place, or nullptr
                                float* running_var,     // (C), updated in place, or nullptr
                                float* save_mean,       // (C), out: batch mean
                                float* save_invstd,     // (C), out: 1/sqrt(biased var + eps)
                                void* scratch,          // scratch_bytes of device memory
                                int64_t scratch_bytes,  //
                                const models::Shape& shape, DataFormat format,
                                const models::BatchNormAttrs& attrs, bool relu,
                                cudaStream_t stream);

/// Inference forward with the running statistics:
/// y = relu?(gamma·(x − running_mean)/sqrt(running_var + eps) + beta [+ z]).
/// One launch, no scratch. y may alias x or z.
/// Bytes moved: (1 + [z] + 1)·N·C·H·W·sizeof(T).
template <typename T>
void batchnorm_forward_inference(const T* x,                 // (N, H, W, C) NHWC or (N, C, H, W) NCHW
                                 const T* z,                 // same as x, or nullptr
                                 T* y,                       // same as x
                                 const float* gamma,         // (C)
                                 const float* beta,          // (C)
                                 const float* running_mean,  // (C)
                                 const float* running_var,   // (C)
                                 const models::Shape& shape, DataFormat format,
                                 const models::BatchNormAttrs& attrs, bool relu,
                                 cudaStream_t stream);

/// Backward of batchnorm_forward_training.
///
/// The ReLU derivative is taken from the forward output y: dy_eff = dy where
/// y > 0, else 0 (torch's threshold_backward on the ReLU's output; y > 0 exactly
/// where the pre-ReLU value was > 0). y is the tensor the next layer consumes
/// anyway, so no mask is stored. With relu == false, y may be nullptr.
///
/// Writes, with M = N·H·W and x̂ = (x − save_mean)·save_invstd:
///   dz     = dy_eff                       (when dz != nullptr: the add was fused;
///                                          this is the skip connection's gradient)
///   dbeta  = Σ dy_eff                     (C), overwritten
///   dgamma = Σ dy_eff·x̂                   (C), overwritten
///   dx     = gamma·invstd·(dy_eff − dbeta/M − x̂·dgamma/M)
/// (the standard batch-norm gradient, e.g. Ioffe & Szegedy 2015, §3).
///
/// Aliasing: dz may alias dy or y; dx may alias dy, x or y; dz must not alias x or dx.
/// Requires scratch_bytes >= batchnorm_scratch_bytes(shape).
///
/// Kernels: reduce (also writes dz), finalize, apply (three launches). Bytes
/// moved, in units of E = N·C·H·W·sizeof(T): reduce reads x, dy and y (if relu)
/// and writes dz (if given): (2 + [relu] + [dz])·E; apply reads x and either dz,
/// or dy and y (if relu), and writes dx: (3 + (dz ? 0 : [relu]))·E; plus about
/// 8·C·min(1024, N·H·W/128) bytes of partials.
template <typename T>
void batchnorm_backward(const T* x,                // (N, H, W, C) NHWC or (N, C, H, W) NCHW: forward input
                        const T* y,                // same as x: forward output (for the ReLU mask), or nullptr if !relu
                        const T* dy,               // same as x
                        T* dx,                     // same as x
                        T* dz,                     // same as x, or nullptr when no add was fused
                        const float* gamma,        // (C)
                        const float* save_mean,    // (C) from the forward
                        const float* save_invstd,  // (C) from the forward
                        float* dgamma,             // (C), out
                        float* dbeta,              // (C), out
                        void* scratch,             // scratch_bytes of device memory
                        int64_t scratch_bytes,     //
                        const models::Shape& shape, DataFormat format, bool relu,
                        cudaStream_t stream);

}  // namespace cnnbench::kernels::cuda
