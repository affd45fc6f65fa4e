// The replica check among three in-process workers (threads exchanging host
// values as the in-process GPU group does), each with its own CPU executable
// of one small network: identical replicas report one hash; one flipped bit
// (the test-only fault injector) is found on the right worker, in the right
// tensor, with the size of the difference.
#include "bench/run/replica_check.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/backend.h"
#include "kernels/error.h"
#include "mpi/thread_exchange.h"

namespace cnnbench::bench {
namespace {

using models::Graph;
using models::NodeId;

/// One worker of a ThreadExchange, as a Communicator (host collectives only).
class ThreadWorker final : public mpi::Communicator {
 public:
  ThreadWorker(mpi::ThreadExchange& ex, int rank, int size) : ex_(ex), rank_(rank), size_(size) {}
  [[nodiscard]] std::string name() const override { return "threads"; }
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int world_size() const override { return size_; }
  [[nodiscard]] int local_rank() const override { return rank_; }
  [[nodiscard]] int local_size() const override { return size_; }
  void all_reduce_sum(void*, int64_t, kernels::DType, void*) override {
    throw std::logic_error("not used");
  }
  std::vector<std::string> all_gather(const std::string& v) override { return ex_.all_gather(rank_, v); }
  void barrier() override { ex_.barrier(rank_); }
  [[noreturn]] void abort(int) override { throw std::logic_error("abort"); }

 private:
  mpi::ThreadExchange& ex_;
  int rank_, size_;
};

Graph small_net() {
  models::ConvAttrs c;
  c.out_channels = 8;
  c.kernel_h = c.kernel_w = 3;
  c.pad_h = c.pad_w = 1;
  Graph g("small_net", 3);
  const NodeId r = g.add_relu(g.add_batchnorm(g.add_conv(g.input(), c, "conv1"), {}, "bn1"), "relu1");
  const NodeId gp = g.add_global_avg_pool(r, "pool");
  g.add_softmax_cross_entropy(g.add_fc(g.add_flatten(gp, "flatten"), {.out_features = 5}, "fc"), "loss");
  g.infer_shapes(2, 8, 8);
  return g;
}

/// Runs check_replicas on `workers` threads; `before` may alter worker r's executable.
std::vector<ReplicaCheck> run_check(int workers,
                                    const std::function<void(int, kernels::Executable&)>& before) {
  const Graph g = small_net();
  kernels::CompileOptions o;
  o.batch = 2;
  o.image_h = o.image_w = 8;
  o.seed = 5;
  std::vector<std::unique_ptr<kernels::Executable>> exes;
  for (int r = 0; r < workers; ++r) exes.push_back(kernels::make_cpu_backend()->compile(g, o));
  mpi::ThreadExchange ex(workers);
  std::vector<ReplicaCheck> out(static_cast<size_t>(workers));
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r) {
    threads.emplace_back([&, r] {
      ThreadWorker comm(ex, r, workers);
      kernels::Executable& e = *exes[size_t(r)];
      e.train_step(e.synthetic_batch(1), {});
      if (before) before(r, e);
      const ReplicaIdentity me{.rank = r, .host = "host-a", .ordinal = r,
                               .uuid = "GPU-" + std::to_string(r)};
      out[size_t(r)] = check_replicas(comm, e, g, me, 1);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST(ReplicaCheck, IdenticalReplicasAgreeOnOneHash) {
  const auto checks = run_check(3, {});
  for (const ReplicaCheck& c : checks) {
    EXPECT_TRUE(c.identical());
    EXPECT_EQ(c.replicas, 3);
    EXPECT_EQ(c.hash, checks[0].hash);
  }
  const auto lines = checks[0].lines("GPU");
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0], "replicas: identical across 3 GPUs (parameter hash " + hex64(checks[0].hash) +
                          ", after step 1)");
}

TEST(ReplicaCheck, AFlippedBitIsFoundOnItsWorkerAndTensor) {
  const Graph g = small_net();
  const auto layout = g.param_layout();  // fc.weight first (backward order)
  const int64_t element = layout[2].offset + 3;
  const std::string tensor = models::param_name(g, layout[2]);
  const FlipBit flip{.rank = 1, .element = element, .bit = 22};
  const auto checks = run_check(3, [&](int r, kernels::Executable& e) { apply_fault_flip_bit(flip, r, e); });
  for (const ReplicaCheck& c : checks) {
    ASSERT_EQ(c.mismatches.size(), 1U);
    const ReplicaMismatch& m = c.mismatches[0];
    EXPECT_EQ(m.replica.rank, 1);
    EXPECT_EQ(m.replica.uuid, "GPU-1");
    EXPECT_EQ(m.first_tensor, tensor);
    EXPECT_EQ(m.differing_elements, 1);
    EXPECT_GT(m.max_abs_diff, 0.0);
    EXPECT_EQ(c.hash, checks[0].hash);  // the majority's
  }
  const auto lines = checks[0].lines("GPU");
  ASSERT_GE(lines.size(), 2U);
  EXPECT_NE(lines[0].find("MISMATCH"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("rank 1 (host-a, CUDA 1, GPU-1)"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(tensor), std::string::npos) << lines[1];
}

TEST(ReplicaCheck, OneWorkerIsTriviallyIdentical) {
  const auto checks = run_check(1, {});
  EXPECT_TRUE(checks[0].identical());
  EXPECT_EQ(checks[0].replicas, 1);
}

TEST(FaultFlipBit, ParsesAndRejects) {
  EXPECT_FALSE(parse_fault_flip_bit(""));
  const auto f = parse_fault_flip_bit("1:1000:30");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rank, 1);
  EXPECT_EQ(f->element, 1000);
  EXPECT_EQ(f->bit, 30);
  for (const char* bad : {"1:2", "a:1:2", "1:2:32", "1:-1:3", "1:2:3:4", ":1:2"}) {
    try {
      (void)parse_fault_flip_bit(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(kFaultFlipBitVariable), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace cnnbench::bench
