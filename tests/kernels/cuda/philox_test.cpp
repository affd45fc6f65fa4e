// kernels/cuda/philox.h on the host: Random123's known answers for
// Philox4x32-10 and the ranges of the uniform mappings. Needs no GPU.
#include "kernels/cuda/philox.h"

#include <gtest/gtest.h>

namespace cnnbench::kernels::cuda {
namespace {

struct KnownAnswer {
  uint32_t counter[4];
  uint32_t key[2];
  uint32_t expected[4];
};

TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  // Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter, key, result.
  const KnownAnswer answers[] = {
      {{0x00000000U, 0x00000000U, 0x00000000U, 0x00000000U}, {0x00000000U, 0x00000000U},
       {0x6627e8d5U, 0xe169c58dU, 0xbc57ac4cU, 0x9b00dbd8U}},
      {{0xffffffffU, 0xffffffffU, 0xffffffffU, 0xffffffffU}, {0xffffffffU, 0xffffffffU},
       {0x408f276dU, 0x41c83b0eU, 0xa20bc7c6U, 0x6d5451fdU}},
      {{0x243f6a88U, 0x85a308d3U, 0x13198a2eU, 0x03707344U}, {0xa4093822U, 0x299f31d0U},
       {0xd16cfe09U, 0x94fdccebU, 0x5001e420U, 0x24126ea1U}},
  };
  for (const auto& a : answers) {
    const Philox4 r = philox4x32_10(a.counter[0], a.counter[1], a.counter[2], a.counter[3], a.key[0], a.key[1]);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(r.v[i], a.expected[i]) << "word " << i;
  }
}

TEST(PhiloxTest, UniformMappingsStayInRange) {
  EXPECT_EQ(philox_uniform(0U), 0.0F);
  EXPECT_LT(philox_uniform(0xFFFFFFFFU), 1.0F);
  EXPECT_EQ(philox_uniform(0x80000000U), 0.5F);
  EXPECT_GT(philox_uniform_open(0U), 0.0F);
  EXPECT_LT(philox_uniform_open(0xFFFFFFFFU), 1.0F);
  // Exact: the two extremes are (0.5 and 2^23 − 0.5) · 2^-23.
  EXPECT_EQ(philox_uniform_open(0U), 0x1p-24F);
  EXPECT_EQ(philox_uniform_open(0xFFFFFFFFU), 1.0F - 0x1p-24F);
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
