#include "kernels/reference_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "kernels/init.h"

namespace cnnbench::kernels {
namespace {

constexpr int kMaxSkippedSteps = 16;

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

double l2(const std::vector<float>& v, int64_t offset, int64_t count) {
  double s = 0;
  for (int64_t i = offset; i < offset + count; ++i) s += double(v[size_t(i)]) * v[size_t(i)];
  return std::sqrt(s);
}

bool all_finite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

}  // namespace

double reference_tolerance(Precision precision) {
  switch (precision) {
    case Precision::Fp32: return 1e-3;
    case Precision::Tf32: return 2e-2;
    case Precision::Fp16: return 3e-2;
    case Precision::Bf16: return 1e-1;
  }
  return 1e-3;
}

bool StepCheck::passed() const {
  if (!(loss_rel_error <= tolerance)) return false;
  return std::all_of(tensors.begin(), tensors.end(), [&](const TensorCheck& t) {
    return t.finite && t.rel_error <= tolerance;
  });
}

std::string StepCheck::summary() const {
  char loss_text[96];
  std::snprintf(loss_text, sizeof loss_text, "loss %.5f vs %.5f", loss, reference_loss);
  std::string s = std::string(to_string(precision)) + ": ";
  const TensorCheck* w = worst >= 0 ? &tensors[size_t(worst)] : nullptr;
  if (passed()) {
    s += "passed (" + std::string(loss_text);
    if (w != nullptr) s += ", worst " + w->name + " " + sci(w->rel_error) + " <= " + sci(tolerance);
    s += ")";
  } else if (!(loss_rel_error <= tolerance)) {
    s += "FAILED: " + std::string(loss_text) + ", relative error " + sci(loss_rel_error) +
         " > tolerance " + sci(tolerance);
  } else if (w != nullptr && !w->finite) {
    s += "FAILED: the gradient of " + w->name + " has non-finite elements (" + loss_text + ")";
  } else if (w != nullptr) {
    s += "FAILED: the gradient of " + w->name + " (" + std::to_string(w->count) +
         " elements) has relative error " + sci(w->rel_error) + " > tolerance " + sci(tolerance) +
         " (" + loss_text + ")";
  }
  if (skipped_steps > 0) {
    s += "; " + std::to_string(skipped_steps) + " overflowing step(s) skipped first, loss scale " +
         sci(loss_scale);
  }
  return s;
}

StepCheck compare_training_step(Executable& test, Executable& reference,
                                const models::Graph& graph, Precision test_precision,
                                int batch, int image_size, DataFormat format, uint64_t data_seed) {
  models::Graph shaped = graph;
  shaped.infer_shapes(batch, image_size, image_size);
  const std::vector<models::ParamSlot> layout = shaped.param_layout();
  const int64_t params = shaped.param_count();
  if (test.parameters().count != params || reference.parameters().count != params) {
    throw std::invalid_argument("compare_training_step: the executables hold " +
                                std::to_string(test.parameters().count) + " and " +
                                std::to_string(reference.parameters().count) +
                                " parameters, the graph " + std::to_string(params));
  }
  const int channels = std::get<models::InputAttrs>(shaped.node(0).attrs).channels;
  const int classes = shaped.num_classes();
  std::vector<float> images(size_t(batch) * size_t(channels) * size_t(image_size) * size_t(image_size));
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  synthetic_batch(data_seed, batch, channels, image_size, image_size, format, classes,
                  images.data(), labels.data());

  StepCheck check;
  check.precision = test_precision;
  check.tolerance = reference_tolerance(test_precision);

  const Batch ref_batch = reference.upload_batch(images.data(), labels.data());
  reference.train_step(ref_batch, {});
  check.reference_loss = reference.loss();
  std::vector<float> want(static_cast<size_t>(params));
  reference.read_gradients(0, params, want.data());

  const Batch test_batch = test.upload_batch(images.data(), labels.data());
  std::vector<float> got(static_cast<size_t>(params));
  for (;;) {
    check.loss_scale = test.loss_scale();  // the scale this step uses
    test.train_step(test_batch, {});
    check.loss = test.loss();
    test.read_gradients(0, params, got.data());
    const bool overflow = test_precision == Precision::Fp16 && !all_finite(got);
    if (!overflow || check.skipped_steps == kMaxSkippedSteps) break;
    ++check.skipped_steps;  // the scaler skipped it and halved the scale
  }
  if (check.loss_scale != 1.0F) {
    for (float& g : got) g /= check.loss_scale;
  }

  check.loss_rel_error = std::abs(check.loss - check.reference_loss) /
                         std::max(std::abs(check.reference_loss), 1e-12);
  const double floor = 1e-7 * l2(want, 0, params);
  double worst_error = -1;
  for (size_t t = 0; t < layout.size(); ++t) {
    const models::ParamSlot& slot = layout[t];
    TensorCheck tc;
    tc.name = models::param_name(shaped, slot);
    tc.count = slot.count;
    double diff = 0;
    for (int64_t i = slot.offset; i < slot.offset + slot.count; ++i) {
      const double g = got[size_t(i)];
      if (!std::isfinite(g)) tc.finite = false;
      const double d = g - want[size_t(i)];
      diff += d * d;
    }
    const double scale = std::max(l2(want, slot.offset, slot.count), floor);
    tc.rel_error = scale > 0 ? std::sqrt(diff) / scale : (diff == 0 ? 0.0 : INFINITY);
    if (!tc.finite || std::isnan(tc.rel_error)) tc.rel_error = INFINITY;
    if (tc.rel_error > worst_error) {
      worst_error = tc.rel_error;
      check.worst = static_cast<int>(t);
    }
    check.tensors.push_back(std::move(tc));
  }
  return check;
}

}  // namespace cnnbench::kernels
