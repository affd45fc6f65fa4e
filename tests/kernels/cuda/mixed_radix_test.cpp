// The parameter-copy kernel's index stepping (kernels/cuda/mixed_radix.h),
// checked on the host against the plain division formula: every start, every
// stride a block may have, the shapes of the zoo's tensors (KRSC and KCRS,
// padded first-layer channels, 1×1 filters, C = 1, biases).
#include "kernels/cuda/mixed_radix.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace cnnbench::kernels::cuda {
namespace {

struct Radices {
  int64_t r0, r1;
};

TEST(MixedRadix, SteppingEqualsDivision) {
  const std::vector<Radices> shapes = {
      {3, 49},  {8, 49},  {4, 49},   // first layer: C = 3 padded to 8 or 4, 7×7 (KRSC)
      {49, 8},                        // the same in KCRS
      {64, 9},  {9, 64},  {256, 1},  {1, 256}, {1, 1}, {1, 9}, {9, 1}, {1000, 1}, {7, 3}};
  for (const Radices r : shapes) {
    const MixedRadix m{r.r0, r.r1};
    const int64_t total = r.r0 * r.r1 * 5;  // five "k"s
    for (const int64_t stride : {int64_t{1}, int64_t{3}, int64_t{64}, int64_t{256}, int64_t{1024}}) {
      const RadixDigits step = m.decode(stride);
      for (int64_t start = 0; start < std::min<int64_t>(stride, total); ++start) {
        RadixDigits d = m.decode(start);
        for (int64_t i = start; i < total; i += stride) {
          ASSERT_EQ(d.lo, i % r.r0) << r.r0 << "x" << r.r1 << " stride " << stride << " i " << i;
          ASSERT_EQ(d.mid, (i / r.r0) % r.r1) << r.r0 << "x" << r.r1 << " i " << i;
          ASSERT_EQ(d.hi, i / (r.r0 * r.r1)) << r.r0 << "x" << r.r1 << " i " << i;
          m.advance(d, step);
        }
      }
    }
  }
}

TEST(MixedRadix, LargeIndicesBeyond32Bits) {
  const MixedRadix m{25088, 4096};  // VGG's first FC layer, as [K, C, RS] = [4096, 25088, 1] reversed
  const int64_t start = (int64_t{1} << 33) + 12345;
  const RadixDigits step = m.decode(256);
  RadixDigits d = m.decode(start);
  for (int64_t i = start; i < start + 100000; i += 256) {
    ASSERT_EQ(d.lo, i % 25088);
    ASSERT_EQ(d.mid, (i / 25088) % 4096);
    ASSERT_EQ(d.hi, i / (int64_t{25088} * 4096));
    m.advance(d, step);
  }
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
