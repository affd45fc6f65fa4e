// FLOP and byte counts of the micro-benchmarks against hand-computed cases,
// the nccl-tests bandwidth formulas, the all-reduce sizes and the rotation rule.
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "bench/micro/allreduce.h"
#include "bench/micro/flops.h"
#include "bench/micro/timing.h"
#include "models/graph.h"

namespace cnnbench::bench::micro {
namespace {

models::ConvAttrs conv(int k, int kernel, int stride, int pad, int groups = 1) {
  models::ConvAttrs a;
  a.out_channels = k;
  a.kernel_h = a.kernel_w = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.groups = groups;
  return a;
}

/// The output shape the graph IR infers for one conv on `in`: the hand-written
/// outputs below are checked against it, so the cases are real geometries.
models::Shape inferred_output(const models::Shape& in, const models::ConvAttrs& a) {
  models::Graph g("one_conv", in.c);
  g.add_conv(g.input(), a, "conv");
  g.infer_shapes(in.n, in.h, in.w);
  return g.nodes().back().output;
}

TEST(MicroConvFlops, ThreeByThreeSamePadding) {
  // x [2, 4, 5, 5], 8 filters 3×3, stride 1, pad 1 -> y [2, 8, 5, 5].
  // Each of the 2·8·5·5 = 400 outputs takes 4·3·3 = 36 multiply-adds: 14400
  // MACs, 28800 FLOPs.
  const models::Shape in{2, 4, 5, 5};
  const models::Shape out{2, 8, 5, 5};
  const auto a = conv(8, 3, 1, 1);
  ASSERT_EQ(inferred_output(in, a), out);
  EXPECT_EQ(conv_macs(in, a, out), 14400);
  EXPECT_DOUBLE_EQ(conv_pass_flops(in, a, out, ConvPass::Fprop), 28800.0);
}

TEST(MicroConvFlops, OneByOneStrided) {
  // x [1, 16, 8, 8], 32 filters 1×1, stride 2 -> y [1, 32, 4, 4] (a ResNet
  // downsample): 32·4·4 = 512 outputs × 16 MACs = 8192 MACs, 16384 FLOPs.
  const models::Shape in{1, 16, 8, 8};
  const models::Shape out{1, 32, 4, 4};
  const auto a = conv(32, 1, 2, 0);
  ASSERT_EQ(inferred_output(in, a), out);
  EXPECT_EQ(conv_macs(in, a, out), 8192);
  EXPECT_DOUBLE_EQ(conv_pass_flops(in, a, out, ConvPass::Fprop), 16384.0);
}

TEST(MicroConvFlops, GroupedAndDepthwise) {
  // x [1, 8, 6, 6], 16 filters 3×3, pad 1, 4 groups: each output sees C/g = 2
  // channels: 16·6·6 = 576 outputs × 2·9 = 18 MACs = 10368 MACs.
  const models::Shape in{1, 8, 6, 6};
  const models::Shape out{1, 16, 6, 6};
  const auto grouped = conv(16, 3, 1, 1, 4);
  ASSERT_EQ(inferred_output(in, grouped), out);
  EXPECT_EQ(conv_macs(in, grouped, out), 10368);
  EXPECT_DOUBLE_EQ(conv_pass_flops(in, grouped, out, ConvPass::Wgrad), 20736.0);

  // Depthwise (groups = C = K = 8): 8·36 outputs × 9 MACs = 2592 MACs.
  const models::Shape dw_out{1, 8, 6, 6};
  const auto depthwise = conv(8, 3, 1, 1, 8);
  ASSERT_EQ(inferred_output(in, depthwise), dw_out);
  EXPECT_EQ(conv_macs(in, depthwise, dw_out), 2592);
}

TEST(MicroConvFlops, FpropDgradWgradAreEqual) {
  const models::Shape in{4, 64, 56, 56};
  const auto a = conv(64, 3, 2, 1);
  const models::Shape out = inferred_output(in, a);
  const double fprop = conv_pass_flops(in, a, out, ConvPass::Fprop);
  EXPECT_DOUBLE_EQ(conv_pass_flops(in, a, out, ConvPass::Dgrad), fprop);
  EXPECT_DOUBLE_EQ(conv_pass_flops(in, a, out, ConvPass::Wgrad), fprop);
  // 4·64·28·28 outputs × 64·9 MACs × 2.
  EXPECT_DOUBLE_EQ(fprop, 2.0 * 4 * 64 * 28 * 28 * 64 * 9);
}

TEST(MicroRates, TflopsAndGigabytes) {
  EXPECT_DOUBLE_EQ(tflops_per_second(2e12, 0.5), 4.0);
  EXPECT_DOUBLE_EQ(gigabytes_per_second(3e9, 1.5), 2.0);
  EXPECT_EQ(tflops_per_second(1e12, 0.0), 0.0);
}

TEST(MicroKernelBytes, HandComputed) {
  // 1 GiB copy: read once, written once.
  EXPECT_EQ(copy_bytes(int64_t{1} << 30), int64_t{2} << 30);
  // BN forward of E = 1000 fp16 elements: x read twice, y written (3·E·2 =
  // 6000); with the fused add, z read too (8000).
  EXPECT_EQ(batchnorm_forward_bytes(1000, 2, false), 6000);
  EXPECT_EQ(batchnorm_forward_bytes(1000, 2, true), 8000);
  // BN backward, fp32, E = 100: ReLU only: reduce x, dy, y (3E) + apply x, dy,
  // y, dx (4E) = 7E = 2800 bytes; ReLU + add: reduce x, dy, y, dz (4E) + apply
  // x, dz, dx (3E) = 2800; plain: reduce x, dy (2E) + apply x, dy, dx (3E) = 2000.
  EXPECT_EQ(batchnorm_backward_bytes(100, 4, true, false), 2800);
  EXPECT_EQ(batchnorm_backward_bytes(100, 4, true, true), 2800);
  EXPECT_EQ(batchnorm_backward_bytes(100, 4, false, false), 2000);
  // Max pool 3×3, stride 2, pad 1 on [1, 1, 4, 4] -> [1, 1, 2, 2], fp16: (16 + 4)·2 + 4 argmax bytes.
  EXPECT_EQ(pool_forward_bytes(16, 4, 2, true), 44);
  EXPECT_EQ(pool_backward_bytes(16, 4, 2, false), 40);
  // Loss on [256, 1000] bf16: 2·256·1000·2 + 8·256.
  EXPECT_EQ(softmax_cross_entropy_bytes(256, 1000, 2), 1026048);
  // SGD over 10 parameters: fp32 grads, no copy: 10·(4 + 16); fp16 grads and copy: 10·(2 + 16 + 2).
  EXPECT_EQ(sgd_momentum_bytes(10, 4, 0), 200);
  EXPECT_EQ(sgd_momentum_bytes(10, 2, 2), 200);
  EXPECT_EQ(cast_bytes(10, 4, 2), 60);
}

TEST(MicroAllReduce, NcclTestsFormulas) {
  // 1e9 bytes in 10 ms: algbw 100 GB/s.
  const double algbw = allreduce_algbw(1000000000, 0.01);
  EXPECT_DOUBLE_EQ(algbw, 100.0);
  // busbw = algbw · 2(n − 1)/n.
  EXPECT_DOUBLE_EQ(allreduce_busbw(algbw, 8), 175.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw(algbw, 2), 100.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw(algbw, 4), 150.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw(algbw, 1), 0.0);
}

TEST(MicroAllReduce, SizesArePowersOfTwo) {
  const auto sizes = allreduce_sizes(1024, int64_t{1} << 30);
  ASSERT_EQ(sizes.size(), 21U);  // 2^10 .. 2^30
  EXPECT_EQ(sizes.front(), 1024);
  EXPECT_EQ(sizes.back(), int64_t{1} << 30);
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], 2 * sizes[i - 1]);
  // Bounds that are not powers of two: min rounded up, max down.
  EXPECT_EQ(allreduce_sizes(1000, 5000), (std::vector<int64_t>{1024, 2048, 4096}));
  EXPECT_THROW((void)allreduce_sizes(2, 1024), std::invalid_argument);
  EXPECT_THROW((void)allreduce_sizes(4096, 1024), std::invalid_argument);
}

TEST(MicroAllReduce, ExpectedSumsAreExact) {
  // Rank r holds (i + 3r) mod 13; with 2 ranks element 0 sums 0 + 3 and
  // element 12 sums 12 + (15 mod 13 = 2).
  EXPECT_EQ(allreduce_value(5, 1), 8.0F);
  EXPECT_EQ(allreduce_expected(0, 2), 3.0F);
  EXPECT_EQ(allreduce_expected(12, 2), 14.0F);
  for (int64_t i = 0; i < 40; ++i) {
    float sum = 0;
    for (int r = 0; r < 8; ++r) sum += allreduce_value(i, r);
    EXPECT_EQ(allreduce_expected(i, 8), sum);
    EXPECT_EQ(allreduce_expected(i, 8), allreduce_expected(i % 13, 8));
  }
}

TEST(MicroSizes, FormatAndParse) {
  EXPECT_EQ(format_bytes(1024), "1KiB");
  EXPECT_EQ(format_bytes(int64_t{256} << 20), "256MiB");
  EXPECT_EQ(format_bytes(int64_t{1} << 30), "1GiB");
  EXPECT_EQ(format_bytes(1000), "1000B");
  EXPECT_EQ(parse_bytes("4096"), 4096);
  EXPECT_EQ(parse_bytes("1K"), 1024);
  EXPECT_EQ(parse_bytes("64M"), int64_t{64} << 20);
  EXPECT_EQ(parse_bytes("1GiB"), int64_t{1} << 30);
  EXPECT_THROW((void)parse_bytes("0"), std::invalid_argument);
  EXPECT_THROW((void)parse_bytes("1T"), std::invalid_argument);
  EXPECT_THROW((void)parse_bytes("-1K"), std::invalid_argument);
  EXPECT_THROW((void)parse_bytes(""), std::invalid_argument);
}

TEST(MicroRotation, EnoughSetsToLeaveTheCache) {
  const int64_t l2 = 50'000'000;  // H100/H200
  // The sets must add up to 3·L2 = 150 MB: ceil(150 / 100) = 2 sets of 100 MB.
  EXPECT_EQ(rotation_sets(100'000'000, l2, 16), 2);
  // A 400 MB set is already 8× the L2.
  EXPECT_EQ(rotation_sets(400'000'000, l2, 16), 1);
  // A 1 MB set would need 150 sets: capped.
  EXPECT_EQ(rotation_sets(1'000'000, l2, 16), 16);
  EXPECT_EQ(rotation_sets(1'000'000, l2, 1), 1);
  EXPECT_EQ(rotation_sets(0, l2, 16), 1);
}

}  // namespace
}  // namespace cnnbench::bench::micro
