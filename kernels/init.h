// Parameter initialisation and synthetic data, on the host, shared by both
// backends so that the CPU and the GPU start from the same weights and train on
// the same batch for the same seed.
//
// Random numbers are counter-based: element i of a stream is a pure function of
// (key, i), so results depend neither on the order nor on the threads that fill
// them, and a device kernel can reproduce them. The generator is SplitMix64
// (Steele, Lea, Flood: "Fast splittable pseudorandom number generators",
// OOPSLA 2014), whose i-th output from state `key` is mix(key + (i + 1)·γ).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "models/graph.h"

namespace cnnbench::kernels {

/// SplitMix64's golden-ratio increment γ.
inline constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ULL;

/// SplitMix64's output function (Stafford's "Mix13" variant of MurmurHash3's finaliser).
inline constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

/// 64 random bits: output `index` of the SplitMix64 stream started at `key`.
inline constexpr uint64_t random_bits(uint64_t key, uint64_t index) {
  return splitmix64_mix(key + (index + 1) * kSplitMixGamma);
}

/// The key of sub-stream `stream` of `key` (e.g. one per parameter slot).
inline constexpr uint64_t derive_key(uint64_t key, uint64_t stream) {
  return splitmix64_mix(key ^ splitmix64_mix(stream + kSplitMixGamma));
}

/// Uniform float in [0, 1) from the top 24 bits of random_bits(key, index).
inline float random_uniform(uint64_t key, uint64_t index) {
  return static_cast<float>(random_bits(key, index) >> 40U) * 0x1.0p-24F;
}

/// Sub-stream ids of synthetic data and dropout masks under the run's seed.
inline constexpr uint64_t kImageStream = 0x696d61676573ULL;      // "images"
inline constexpr uint64_t kLabelStream = 0x6c6162656c73ULL;      // "labels"
inline constexpr uint64_t kDropoutStream = 0x64726f706f7574ULL;  // "dropout"

/// Standard normal number `index` of the stream `key`, by Box–Muller on the pair
/// of uniforms (2⌊index/2⌋, 2⌊index/2⌋ + 1): even indices take the cosine, odd
/// ones the sine, so consecutive elements are independent.
double random_normal(uint64_t key, uint64_t index);

/// Fills the flat parameter buffer `flat` (Graph::param_layout order, sum of the
/// slots' counts elements) according to each slot's models::Init:
///   Zeros, Ones;
///   KaimingNormalFanOut: N(0, 2 / fan_out) (torch.nn.init.kaiming_normal_,
///     mode='fan_out', nonlinearity='relu');
///   DefaultUniform / DefaultBiasUniform: U(−1/√fan_in, 1/√fan_in) (PyTorch's
///     kaiming_uniform_(a=√5) for weights, and its bias rule);
///   Normal: N(0, std²);
///   TruncatedNormal: N(0, std²) conditioned on [−2, 2] (torch.nn.init.trunc_normal_
///     with a = −2, b = 2, absolute bounds), by rejection.
/// Slot k draws from derive_key(seed, k), element i from index i (rejection
/// attempt r of TruncatedNormal from derive_key(derive_key(seed, k), r)).
/// Throws std::invalid_argument for a slot whose fan is ≤ 0 where its kind needs one.
void init_parameters(const std::vector<models::ParamSlot>& layout, uint64_t seed, float* flat);

/// A synthetic batch: images [n, c, h, w] ~ N(0, 1) in `format` and labels
/// uniform in [0, num_classes). Logical element (b, ch, y, x) is
/// random_normal(derive_key(seed, kImageStream), ((b·c + ch)·h + y)·w + x)
/// whatever the layout, so NHWC and NCHW hold the same images; label b is
/// ((random_bits(derive_key(seed, kLabelStream), b) >> 32) · num_classes) >> 32.
/// Throws std::invalid_argument for non-positive sizes or num_classes.
void synthetic_batch(uint64_t seed, int n, int c, int h, int w, DataFormat format, int num_classes,
                     float* images, int32_t* labels);

}  // namespace cnnbench::kernels
