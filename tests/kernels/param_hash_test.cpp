// The replica check's parameter hash (kernels/param_hash.h) on the host: its
// algebra (tensor sums add up to the total, any chunking gives the same sums)
// and what it detects (one flipped bit, a moved value, −0 against +0).
#include "kernels/param_hash.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

namespace cnnbench::kernels {
namespace {

std::vector<models::ParamSlot> layout_of(const std::vector<int64_t>& counts) {
  std::vector<models::ParamSlot> layout;
  int64_t offset = 0;
  for (const int64_t c : counts) {
    models::ParamSlot s;
    s.count = c;
    s.offset = offset;
    s.dims = {c};
    layout.push_back(s);
    offset += c;
  }
  return layout;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0F, 0.05F);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

const std::vector<int64_t> kCounts = {9408, 64, 64, 36864, 1, 0, 70000, 1000};

int64_t total(const std::vector<int64_t>& counts) {
  int64_t t = 0;
  for (const int64_t c : counts) t += c;
  return t;
}

TEST(ParamHash, TensorSumsAddUpToTheTotal) {
  const auto layout = layout_of(kCounts);
  const auto v = random_values(size_t(total(kCounts)), 1);
  const ParamHashes h = hash_parameters_host(v.data(), layout);
  ASSERT_EQ(h.per_tensor.size(), layout.size());
  uint64_t sum = 0;
  for (size_t t = 0; t < layout.size(); ++t) {
    sum += h.tensor_sums[t];
    EXPECT_EQ(h.per_tensor[t], param_hash_finish(h.tensor_sums[t]));
    EXPECT_EQ(h.tensor_sums[t],
              param_hash_sum_host(v.data(), layout[t].offset, layout[t].offset + layout[t].count));
  }
  EXPECT_EQ(h.total, param_hash_finish(sum));
  // The same bytes hash the same, every time.
  EXPECT_EQ(hash_parameters_host(v.data(), layout).total, h.total);
}

TEST(ParamHash, AnyChunkingGivesTheSameTensorSums) {
  const auto layout = layout_of(kCounts);
  const auto v = random_values(size_t(total(kCounts)), 2);
  const ParamHashes want = hash_parameters_host(v.data(), layout);
  for (const int64_t chunk : {int64_t{1}, int64_t{7}, int64_t{4096}, kParamHashChunkElements}) {
    const std::vector<ParamHashChunk> chunks = param_hash_chunks(layout, chunk);
    std::vector<uint64_t> sums;
    int64_t covered = 0;
    for (const ParamHashChunk& c : chunks) {
      const auto& slot = layout[size_t(c.tensor)];
      ASSERT_GE(c.begin, slot.offset);
      ASSERT_LE(c.end, slot.offset + slot.count) << "a chunk crosses a tensor's end";
      ASSERT_LE(c.end - c.begin, chunk);
      ASSERT_EQ(c.begin, covered) << "chunks must tile the buffer in order";
      covered = c.end;
      sums.push_back(param_hash_sum_host(v.data(), c.begin, c.end));
    }
    EXPECT_EQ(covered, total(kCounts));
    const ParamHashes got = param_hashes_from_sums(tensor_sums_from_chunks(chunks, sums, layout.size()));
    EXPECT_EQ(got.total, want.total) << "chunk " << chunk;
    EXPECT_EQ(got.per_tensor, want.per_tensor) << "chunk " << chunk;
  }
}

TEST(ParamHash, OneFlippedBitChangesTheTotalAndOnlyItsTensor) {
  const auto layout = layout_of(kCounts);
  const auto v = random_values(size_t(total(kCounts)), 3);
  const ParamHashes before = hash_parameters_host(v.data(), layout);
  for (const int bit : {0, 1, 22, 23, 30, 31}) {
    for (const size_t t : {size_t{0}, size_t{3}, size_t{6}, size_t{7}}) {
      std::vector<float> w = v;
      const int64_t i = layout[t].offset + layout[t].count / 2;
      w[size_t(i)] = std::bit_cast<float>(std::bit_cast<uint32_t>(w[size_t(i)]) ^ (1U << bit));
      const ParamHashes after = hash_parameters_host(w.data(), layout);
      EXPECT_NE(after.total, before.total) << "bit " << bit << " of tensor " << t;
      for (size_t u = 0; u < layout.size(); ++u) {
        if (u == t) {
          EXPECT_NE(after.per_tensor[u], before.per_tensor[u]);
        } else {
          EXPECT_EQ(after.per_tensor[u], before.per_tensor[u]);
        }
      }
    }
  }
}

TEST(ParamHash, MovedValuesAndSignedZerosDiffer) {
  const auto layout = layout_of({4});
  const std::vector<float> a = {1.0F, 2.0F, 3.0F, 4.0F};
  const std::vector<float> swapped = {2.0F, 1.0F, 3.0F, 4.0F};
  EXPECT_NE(hash_parameters_host(a.data(), layout).total,
            hash_parameters_host(swapped.data(), layout).total);
  const std::vector<float> pos = {0.0F, 0.0F, 0.0F, 0.0F};
  const std::vector<float> neg = {0.0F, -0.0F, 0.0F, 0.0F};
  EXPECT_NE(hash_parameters_host(pos.data(), layout).total,
            hash_parameters_host(neg.data(), layout).total);
}

TEST(ParamHash, ALayoutWithAGapIsRejected) {
  auto layout = layout_of({4, 4});
  layout[1].offset = 5;
  const std::vector<float> v(9, 1.0F);
  EXPECT_THROW((void)hash_parameters_host(v.data(), layout), std::invalid_argument);
  EXPECT_THROW((void)param_hash_chunks(layout), std::invalid_argument);
  EXPECT_THROW((void)param_hash_chunks(layout_of({4}), 0), std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench::kernels
