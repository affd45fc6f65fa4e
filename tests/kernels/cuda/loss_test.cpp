// kernels/cuda/loss.cu against an fp64 CPU reference of softmax cross-entropy
// (torch.nn.CrossEntropyLoss, reduction='mean') and its loss-scaled gradient.
#include "kernels/cuda/loss.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/kernels/cuda/cuda_test_util.h"

namespace cnnbench::kernels::cuda {
namespace {

using test_util::as_double;
using test_util::expect_bitwise_equal;
using test_util::expect_close;
using test_util::kRtol;
using test_util::max_abs;
using test_util::poisoned;
using test_util::Rng;
using test_util::to_device;
using test_util::to_host;

struct Reference {
  double loss;
  std::vector<double> dlogits;
};

/// Log-sum-exp with the max shifted out, in fp64; labels outside [0, classes)
/// give a NaN row loss and no one-hot term, as the kernel documents.
Reference reference(const std::vector<double>& x, const std::vector<int32_t>& labels, int n,
                    int classes, double scale) {
  Reference r{0.0, std::vector<double>(x.size())};
  for (int i = 0; i < n; ++i) {
    const double* row = x.data() + static_cast<size_t>(i) * classes;
    double mx = -INFINITY;
    for (int k = 0; k < classes; ++k) mx = std::max(mx, row[k]);
    double s = 0.0;
    for (int k = 0; k < classes; ++k) s += std::exp(row[k] - mx);
    const bool valid = labels[i] >= 0 && labels[i] < classes;
    r.loss += valid ? mx + std::log(s) - row[labels[i]] : NAN;
    for (int k = 0; k < classes; ++k)
      r.dlogits[static_cast<size_t>(i) * classes + k] =
          (std::exp(row[k] - mx) / s - (k == labels[i] ? 1.0 : 0.0)) * scale / n;
  }
  r.loss /= n;
  return r;
}

template <typename T>
class LossTest : public ::testing::Test {};
TYPED_TEST_SUITE(LossTest, test_util::StorageTypes, test_util::StorageTypeNames);

struct LossCase {
  int n, classes;
};

TYPED_TEST(LossTest, MatchesReference) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  // ImageNet's 1000 classes at small and ResNet batch sizes; odd class counts
  // not multiples of the block (1001, 37, 10); a single row.
  for (const LossCase lc : {LossCase{1, 10}, LossCase{7, 1000}, LossCase{256, 1000},
                            LossCase{3, 1001}, LossCase{5, 37}}) {
    for (const bool scaled : {false, true}) {
      SCOPED_TRACE("n=" + std::to_string(lc.n) + " classes=" + std::to_string(lc.classes) +
                   (scaled ? " loss scale 1024" : ""));
      const auto count = static_cast<size_t>(lc.n) * lc.classes;
      const std::vector<T> logits = test_util::random_normal<T>(count, rng, 0.0F, 2.0F);
      std::vector<int32_t> labels(static_cast<size_t>(lc.n));
      for (auto& l : labels) l = rng.uniform_int(0, lc.classes - 1);
      const float scale = scaled ? 1024.0F : 1.0F;

      const DeviceBuffer d_logits = to_device(logits), d_labels = to_device(labels);
      const DeviceBuffer d_scale = to_device(std::vector<float>{scale});
      const DeviceBuffer d_loss = poisoned<float>(1), d_dlogits = poisoned<T>(count);
      const DeviceBuffer d_scratch = poisoned<unsigned char>(
          static_cast<size_t>(softmax_cross_entropy_scratch_bytes(lc.n)));
      const Stream stream;
      softmax_cross_entropy<T>(d_logits.as<T>(), d_labels.as<int32_t>(), d_loss.as<float>(),
                               d_dlogits.as<T>(), scaled ? d_scale.as<float>() : nullptr,
                               d_scratch.get(), d_scratch.bytes(), lc.n, lc.classes, stream.get());
      stream.synchronize();
      const Reference ref = reference(as_double(logits), labels, lc.n, lc.classes, scale);
      // The loss is fp32 whatever T is (same inputs): exp/log to a few ulp and
      // sums of up to 1001 terms in [0, 1] keep it well within 1e-5 relative.
      expect_close(to_host<float>(d_loss, 1), {ref.loss}, 1e-5, 0.0, "loss");
      // Each gradient is a probability (error relative to itself) minus the
      // one-hot 1 (error relative to 1·scale/N, the tensor's largest value).
      expect_close(to_host<T>(d_dlogits, count), ref.dlogits, kRtol<T>,
                   kRtol<T> * max_abs(ref.dlogits), "dlogits");

      // Forward only (no gradient), in place (dlogits over logits), and
      // bitwise repeatable.
      const DeviceBuffer d_loss2 = poisoned<float>(1);
      softmax_cross_entropy<T>(d_logits.as<T>(), d_labels.as<int32_t>(), d_loss2.as<float>(),
                               nullptr, nullptr, d_scratch.get(), d_scratch.bytes(), lc.n,
                               lc.classes, stream.get());
      const DeviceBuffer d_inplace = to_device(logits), d_loss3 = poisoned<float>(1);
      softmax_cross_entropy<T>(d_inplace.as<T>(), d_labels.as<int32_t>(), d_loss3.as<float>(),
                               d_inplace.as<T>(), scaled ? d_scale.as<float>() : nullptr,
                               d_scratch.get(), d_scratch.bytes(), lc.n, lc.classes, stream.get());
      stream.synchronize();
      expect_bitwise_equal(to_host<float>(d_loss2, 1), to_host<float>(d_loss, 1), "loss, forward only");
      expect_bitwise_equal(to_host<float>(d_loss3, 1), to_host<float>(d_loss, 1), "loss, in place");
      expect_bitwise_equal(to_host<T>(d_inplace, count), to_host<T>(d_dlogits, count), "dlogits, in place");
    }
  }
}

TYPED_TEST(LossTest, LabelOutOfRangeGivesNaN) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  const int n = 4, classes = 10;
  const std::vector<T> logits = test_util::random_normal<T>(static_cast<size_t>(n) * classes, rng);
  const std::vector<int32_t> labels = {3, classes, 0, 9};  // row 1 is out of range
  const DeviceBuffer d_logits = to_device(logits), d_labels = to_device(labels);
  const DeviceBuffer d_loss = poisoned<float>(1), d_dlogits = poisoned<T>(logits.size());
  const DeviceBuffer d_scratch(softmax_cross_entropy_scratch_bytes(n), "scratch");
  const Stream stream;
  softmax_cross_entropy<T>(d_logits.as<T>(), d_labels.as<int32_t>(), d_loss.as<float>(),
                           d_dlogits.as<T>(), nullptr, d_scratch.get(), d_scratch.bytes(), n,
                           classes, stream.get());
  stream.synchronize();
  EXPECT_TRUE(std::isnan(to_host<float>(d_loss, 1)[0]));
  // The other rows' gradients are still right, and the bad row has no one-hot term.
  const Reference ref = reference(as_double(logits), labels, n, classes, 1.0);
  expect_close(to_host<T>(d_dlogits, logits.size()), ref.dlogits, kRtol<T>,
               kRtol<T> * max_abs(ref.dlogits), "dlogits");
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
