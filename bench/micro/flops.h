// What each micro-benchmark counts: floating-point operations of a convolution
// pass, bytes a memory-bound kernel moves, and the all-reduce bandwidths of
// nccl-tests. Pure arithmetic on sizes; no device, no I/O.
//
// Conventions:
//  - one multiply-add = 2 FLOPs (as models::Graph::flops_per_image); rates are
//    reported in TFLOP/s = 1e12 FLOP/s;
//  - bytes are counted once per pass a kernel makes over device memory (as the
//    launchers in kernels/cuda/*.cuh document them); GB/s = 1e9 bytes/s, the
//    unit of vendors' memory bandwidth figures and of nccl-tests;
//  - all-reduce: algbw = S / t and busbw = algbw · 2(n − 1)/n for S bytes per
//    rank reduced over n ranks in t seconds (nccl-tests, doc/PERFORMANCE.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/graph.h"

namespace cnnbench::bench::micro {

/// The three convolution passes of a training step.
enum class ConvPass { Fprop, Dgrad, Wgrad };
const char* to_string(ConvPass pass);  ///< "fprop", "dgrad", "wgrad"

/// Multiply-adds of one pass of a convolution from `input` [N, C, H, W] to
/// `output` [N, K, P, Q] with kernel R×S and `groups`:
///   N · K · P · Q · (C / groups) · R · S.
/// fprop computes each output from C/groups·R·S products; dgrad sends every
/// output gradient back through the same C/groups·R·S weights; wgrad sums the
/// same products over N·P·Q for each of the K·C/groups·R·S weights, so the three
/// counts are equal. Products with padding zeros count (cuDNN and oneDNN do
/// them); the bias is not counted.
int64_t conv_macs(const models::Shape& input, const models::ConvAttrs& attrs,
                  const models::Shape& output);

/// FLOPs of one pass: 2 · conv_macs (the same for fprop, dgrad and wgrad).
double conv_pass_flops(const models::Shape& input, const models::ConvAttrs& attrs,
                       const models::Shape& output, ConvPass pass);

/// `flops` done in `seconds`, in TFLOP/s (1e12 FLOP/s); 0 when seconds <= 0.
double tflops_per_second(double flops, double seconds);
/// `bytes` moved in `seconds`, in GB/s (1e9 bytes/s); 0 when seconds <= 0.
double gigabytes_per_second(double bytes, double seconds);

// ---- bytes moved by the memory-bound kernels ---------------------------------
// E = elements of the activation tensor, `size` = bytes per element of its
// storage type. Per-channel vectors (C floats) and per-block partial sums are
// left out: against E they are below 0.1% for every tensor of the zoo.

/// cudaMemcpy device to device of `bytes`: each byte read once and written once.
int64_t copy_bytes(int64_t bytes);

/// batchnorm_forward_training: the statistics pass reads x (E), the apply pass
/// reads x, reads z when the residual add is fused, and writes y:
/// (3 + [add])·E·size.
int64_t batchnorm_forward_bytes(int64_t elements, int64_t size, bool add);

/// batchnorm_backward: the reduce pass reads x and dy, y when the ReLU is
/// fused, and writes dz when the add is fused; the apply pass reads x and then
/// dz (add fused) or dy and y (ReLU only), and writes dx:
/// (2 + [relu] + [add])·E + (3 + (add ? 0 : [relu]))·E bytes, times size.
int64_t batchnorm_backward_bytes(int64_t elements, int64_t size, bool relu, bool add);

/// Pooling forward: input read once (overlapping windows hit the caches), output
/// written, plus one byte of argmax per output for max pooling:
/// (in + out)·size + [max]·out.
int64_t pool_forward_bytes(int64_t in_elements, int64_t out_elements, int64_t size, bool max);

/// Pooling backward: output gradients (and argmax bytes for max pooling) read,
/// input gradients written: (in + out)·size + [max]·out.
int64_t pool_backward_bytes(int64_t in_elements, int64_t out_elements, int64_t size, bool max);

/// softmax_cross_entropy with the gradient: logits read once from memory (the
/// second read hits the caches), dlogits written, int32 labels read and one fp32
/// per row written to scratch: 2·N·classes·size + 8·N.
int64_t softmax_cross_entropy_bytes(int64_t n, int64_t classes, int64_t size);

/// sgd_momentum_update over `count` parameters: gradient read (grad_size bytes
/// each), fp32 master and momentum read and written (16 bytes), the
/// low-precision copy written (lp_size bytes, 0 without one):
/// count·(grad_size + 16 + lp_size).
int64_t sgd_momentum_bytes(int64_t count, int64_t grad_size, int64_t lp_size);

/// cast of `count` elements: count·(src_size + dst_size).
int64_t cast_bytes(int64_t count, int64_t src_size, int64_t dst_size);

// ---- all-reduce (nccl-tests' definitions) ----------------------------------------

/// Algorithm bandwidth in GB/s: the `bytes` each rank contributes over the time.
double allreduce_algbw(int64_t bytes, double seconds);
/// Bus bandwidth in GB/s: algbw · 2(n − 1)/n. An all-reduce over n ranks moves
/// 2(n − 1)/n · S bytes through each rank's link (reduce-scatter plus
/// all-gather), so busbw is comparable with the link's peak whatever n is.
/// 0 for one rank.
double allreduce_busbw(double algbw, int ranks);

/// Powers of two from `min_bytes` to `max_bytes` inclusive (min rounded up and
/// max rounded down to powers of two). Throws std::invalid_argument when
/// min_bytes < 4 (one float) or min_bytes > max_bytes.
std::vector<int64_t> allreduce_sizes(int64_t min_bytes, int64_t max_bytes);

/// "1KiB", "256MiB", "1GiB", or "1000B" when not a whole number of KiB.
std::string format_bytes(int64_t bytes);
/// Parses "1024", "1K", "1KiB", "64M", "1G" (binary multiples, case-insensitive).
/// Throws std::invalid_argument naming the text when it is not a positive size.
int64_t parse_bytes(std::string_view text);

}  // namespace cnnbench::bench::micro
