// The RAII layer over cuDNN's backend API on a device: the graph → heuristics
// → plan → execute lifecycle, engine-choice round trips, the strict-fp32
// filter, autotuning, and the library version check. (Descriptors and their
// error messages need no GPU: conv_fc_host_test.cpp.)
// GPU tests: each skips with the reason when no CUDA device is usable.
#include "kernels/cuda/cudnn_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <iostream>
#include <string>
#include <vector>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"

namespace cnnbench::kernels::cuda {
namespace {

#define CNNBENCH_SKIP_WITHOUT_GPU()                                       \
  do {                                                                    \
    if (const auto why = cuda_unavailable_reason()) GTEST_SKIP() << *why; \
  } while (0)

class CudnnGraphTest : public ::testing::Test {
 protected:
  void SetUp() override { CNNBENCH_SKIP_WITHOUT_GPU(); }
};

TensorSpec spec(const char* name, int64_t uid, std::vector<int64_t> dims, DataFormat format,
                cudnnDataType_t type = CUDNN_DATA_HALF) {
  const TensorLayout l = packed_layout({dims[0], dims[1], dims[2], dims[3]}, format);
  TensorSpec s;
  s.name = name;
  s.uid = uid;
  s.data_type = type;
  s.dims = std::move(dims);
  s.strides = {l.strides.begin(), l.strides.end()};
  s.byte_alignment = 16;
  return s;
}

// A one-op fprop graph x [2,16,8,8] * w [32,16,3,3] pad 1 → y [2,32,8,8], NHWC.
std::shared_ptr<const OperationGraph> small_conv_graph(cudnnHandle_t handle, cudnnDataType_t type) {
  const std::string ctx = "small conv";
  BackendDescriptor x = make_tensor(spec("x", 1, {2, 16, 8, 8}, DataFormat::NHWC, type), ctx);
  BackendDescriptor w = make_tensor(spec("w", 2, {32, 16, 3, 3}, DataFormat::NHWC, type), ctx);
  BackendDescriptor y = make_tensor(spec("y", 3, {2, 32, 8, 8}, DataFormat::NHWC, type), ctx);
  ConvolutionSpec cs;
  cs.pre_paddings = {1, 1};
  cs.post_paddings = {1, 1};
  cs.strides = {1, 1};
  cs.dilations = {1, 1};
  BackendDescriptor conv = make_convolution(cs, ctx);
  BackendDescriptor op = make_conv_forward(x, w, y, conv, 1.0F, 0.0F, ctx);
  std::vector<BackendDescriptor> keep;
  keep.push_back(std::move(x));
  keep.push_back(std::move(w));
  keep.push_back(std::move(y));
  keep.push_back(std::move(conv));
  std::vector<BackendDescriptor> ops;
  ops.push_back(std::move(op));
  return std::make_shared<const OperationGraph>(handle, std::move(keep), std::move(ops), ctx);
}

TEST_F(CudnnGraphTest, LifecycleFromHeuristicsToExecution) {
  DeviceContext ctx(0);
  auto graph = small_conv_graph(ctx.cudnn.get(), CUDNN_DATA_HALF);
  EXPECT_GT(graph->engine_global_count(), 0);

  std::vector<BackendDescriptor> configs = heuristic_engine_configs(*graph, CUDNN_HEUR_MODE_A);
  ASSERT_FALSE(configs.empty()) << "heuristics mode A proposed nothing for "
                                << graph->description();
  const EngineConfigInfo info = describe_engine_config(configs.front());
  EXPECT_GE(info.choice.global_index, 0);
  EXPECT_LT(info.choice.global_index, graph->engine_global_count());

  // An engine config rebuilt from (global index, knobs) describes the same choice.
  BackendDescriptor rebuilt = make_engine_config(*graph, info.choice);
  EXPECT_EQ(describe_engine_config(rebuilt).choice, info.choice);

  PlanSearchOptions opts;
  opts.max_plans = 3;
  opts.cudnn_version = ctx.cudnn_version;
  std::vector<ExecutionPlan> plans = find_plans(ctx.cudnn.get(), graph, opts);
  ASSERT_FALSE(plans.empty());
  EXPECT_LE(plans.size(), 3U);

  int64_t ws = 0;
  for (const auto& p : plans) ws = std::max(ws, p.workspace_bytes());
  ctx.reserve_workspace(ws);
  DeviceBuffer x(2 * 16 * 8 * 8 * 2, "x"), w(32 * 16 * 3 * 3 * 2, "w"), y(2 * 32 * 8 * 8 * 2, "y");
  CNNBENCH_CHECK_CUDA(cudaMemset(x.get(), 0, static_cast<size_t>(x.bytes())));
  CNNBENCH_CHECK_CUDA(cudaMemset(w.get(), 0, static_cast<size_t>(w.bytes())));
  CNNBENCH_CHECK_CUDA(cudaMemset(y.get(), 0xFF, static_cast<size_t>(y.bytes())));
  const std::array<int64_t, 3> uids{1, 2, 3};
  const std::array<void*, 3> ptrs{x.get(), w.get(), y.get()};
  const VariantPack pack(uids, ptrs, ctx.workspace_ptr(), "small conv");
  plans.front().execute(ctx.cudnn.get(), pack);
  ctx.stream.synchronize();
  std::vector<uint16_t> host(static_cast<size_t>(y.bytes() / 2));
  CNNBENCH_CHECK_CUDA(
      cudaMemcpy(host.data(), y.get(), static_cast<size_t>(y.bytes()), cudaMemcpyDeviceToHost));
  for (uint16_t h : host) ASSERT_EQ(h, 0) << "0 * 0 should give +0 everywhere (y started as NaN)";

  // Autotuning picks one of the plans.
  std::vector<float> times;
  const size_t best = autotune_plans(ctx.cudnn.get(), ctx.stream.get(), plans, uids, ptrs,
                                     ctx.workspace_ptr(), 2, &times);
  ASSERT_LT(best, plans.size());
  ASSERT_EQ(times.size(), plans.size());
  EXPECT_GE(times[best], 0.0F);
  for (float t : times) {
    if (t >= 0.0F) {
      EXPECT_LE(times[best], t);
    }
  }
}

TEST_F(CudnnGraphTest, StrictFp32FilterDropsTensorCoreEngines) {
  DeviceContext ctx(0);
  auto graph = small_conv_graph(ctx.cudnn.get(), CUDNN_DATA_FLOAT);
  ConvConfig strict;
  strict.precision = Precision::Fp32;
  PlanSearchOptions opts;
  opts.filter = strict.engine_filter();
  opts.max_plans = 16;
  opts.cudnn_version = ctx.cudnn_version;
  const std::vector<ExecutionPlan> plans = find_plans(ctx.cudnn.get(), graph, opts);
  ASSERT_FALSE(plans.empty());
  for (const auto& p : plans) {
    EXPECT_FALSE(p.engine().has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) << p.engine().to_string();
    EXPECT_FALSE(p.engine().has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))
        << p.engine().to_string();
  }
}

TEST_F(CudnnGraphTest, AutotuneRefusesDuringCapture) {
  DeviceContext ctx(0);
  auto graph = small_conv_graph(ctx.cudnn.get(), CUDNN_DATA_HALF);
  PlanSearchOptions opts;
  opts.cudnn_version = ctx.cudnn_version;
  const std::vector<ExecutionPlan> plans = find_plans(ctx.cudnn.get(), graph, opts);
  cudaGraph_t captured = nullptr;
  CNNBENCH_CHECK_CUDA(cudaStreamBeginCapture(ctx.stream.get(), cudaStreamCaptureModeThreadLocal));
  const std::array<int64_t, 3> uids{1, 2, 3};
  const std::array<void*, 3> ptrs{nullptr, nullptr, nullptr};
  EXPECT_THROW((void)autotune_plans(ctx.cudnn.get(), ctx.stream.get(), plans, uids, ptrs, nullptr,
                                    1, nullptr),
               BackendError);
  CNNBENCH_CHECK_CUDA(cudaStreamEndCapture(ctx.stream.get(), &captured));
  if (captured != nullptr) CNNBENCH_CHECK_CUDA(cudaGraphDestroy(captured));
}

TEST_F(CudnnGraphTest, LibraryVersions) {
  const DnnLibraryVersions v = dnn_library_versions();
  EXPECT_EQ(v.cudnn_runtime / 10000, 9);
  EXPECT_EQ(v.cudnn_compiled, CUDNN_VERSION);
  EXPECT_GT(v.cublaslt_runtime, 0);
  // Report rather than fail: an older runtime is supported with gated features.
  if (!v.cudnn_runtime_at_least_compiled()) {
    std::cout << "note: cuDNN runtime " << format_library_version(v.cudnn_runtime)
              << " is older than the headers " << format_library_version(v.cudnn_compiled) << "\n";
  }
  DeviceContext ctx(0);
  EXPECT_EQ(ctx.cudnn_version, v.cudnn_runtime);
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
