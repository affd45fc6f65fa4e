// NCCL across the GPUs of this process, one thread per GPU (label gpu). With
// one GPU the group of one must still work; tests that need two say so.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mpi/gradient_buckets.h"
#include "mpi/local_group.h"
#include "tests/mpi/nccl_test_util.h"

namespace cnnbench::mpi {
namespace {

using kernels::DType;
using testing::gpu_count;
using testing::to_device;
using testing::to_host;

constexpr std::chrono::seconds kWait{60};

std::vector<int> all_gpus() {
  std::vector<int> devices(static_cast<size_t>(gpu_count()));
  for (size_t i = 0; i < devices.size(); ++i) devices[i] = static_cast<int>(i);
  return devices;
}

/// Runs `body(rank)` on one thread per member (device set), rethrowing the
/// first failure in the calling thread.
void on_every_member(LocalGroup& group, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(group.size()));
  std::vector<std::thread> threads;
  for (int r = 0; r < group.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        CNNBENCH_CHECK_CUDA(cudaSetDevice(group.device(r)));
        body(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        group.leave(r);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

#define REQUIRE_GPUS(n)                                                                         \
  do {                                                                                          \
    if (gpu_count() < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s), found " << gpu_count(); \
  } while (0)

TEST(LocalGroup, SumAndAverageInEveryDtype) {
  REQUIRE_GPUS(1);
  const auto group = make_local_group(all_gpus());
  const int n = group->size();
  on_every_member(*group, [&](int r) {
    Communicator& comm = group->member(r);
    EXPECT_EQ(comm.name(), "nccl");
    EXPECT_EQ(comm.rank(), r);
    EXPECT_EQ(comm.world_size(), n);
    EXPECT_EQ(comm.local_rank(), r);
    kernels::cuda::Stream stream;
    const size_t count = 4099;
    for (const DType dtype : {DType::F32, DType::F16, DType::BF16}) {
      // Sum: element i of rank r holds (r + 1) * (i % 3).
      std::vector<float> values(count);
      for (size_t i = 0; i < count; ++i)
        values[i] = static_cast<float>((r + 1) * static_cast<int>(i % 3));
      auto sum = to_device(values, dtype);
      comm.all_reduce_sum(sum.get(), static_cast<int64_t>(count), dtype, stream.get());
      // Average: rank r holds r + 1 everywhere.
      auto avg = to_device(std::vector<float>(count, static_cast<float>(r + 1)), dtype);
      comm.all_reduce_average(avg.get(), static_cast<int64_t>(count), dtype, stream.get());
      comm.wait(stream.get(), kWait);
      const auto summed = to_host(sum.get(), count, dtype);
      const auto averaged = to_host(avg.get(), count, dtype);
      const float tolerance = dtype == DType::F32 ? 1e-6F : 1e-2F;
      const float ranks_sum = static_cast<float>(n * (n + 1) / 2);
      for (size_t i = 0; i < count; ++i) {
        ASSERT_NEAR(summed[i], ranks_sum * static_cast<float>(i % 3), tolerance * ranks_sum * 2)
            << "sum, element " << i;
        ASSERT_NEAR(averaged[i], static_cast<float>(n + 1) / 2.0F,
                    tolerance * static_cast<float>(n))
            << "average, element " << i;
      }
    }
  });
}

TEST(LocalGroup, HostCollectivesAmongTheThreads) {
  REQUIRE_GPUS(1);
  const auto group = make_local_group(all_gpus());
  on_every_member(*group, [&](int r) {
    Communicator& comm = group->member(r);
    const auto all = comm.all_gather(std::string(static_cast<size_t>(r + 1), 'g'));
    ASSERT_EQ(static_cast<int>(all.size()), group->size());
    for (int p = 0; p < group->size(); ++p) {
      EXPECT_EQ(all[static_cast<size_t>(p)], std::string(static_cast<size_t>(p + 1), 'g'));
    }
    EXPECT_EQ(comm.broadcast(r == 0 ? "id" : "", 0), "id");
    comm.barrier();
  });
}

TEST(LocalGroup, GradientBucketsOnDeviceStreams) {
  REQUIRE_GPUS(1);
  const auto group = make_local_group(all_gpus());
  const int n = group->size();
  on_every_member(*group, [&](int r) {
    Communicator& comm = group->member(r);
    kernels::cuda::Stream compute;
    const int64_t count = 200003;
    auto grads = to_device(
        std::vector<float>(static_cast<size_t>(count), static_cast<float>(r + 1)), DType::F32);
    GradientBuckets buckets(comm, {grads.get(), count, DType::F32}, compute.get(),
                            {.bucket_mib = 0.25, .first_bucket_mib = 0.0625});
    if (n == 1) {
      EXPECT_FALSE(buckets.hook());  // one rank: nothing to reduce
      return;
    }
    const kernels::GradReadyFn hook = buckets.hook();
    ASSERT_TRUE(hook);
    for (int64_t offset = count; offset > 0; offset -= 5000) {  // backward order
      const int64_t begin = std::max<int64_t>(0, offset - 5000);
      hook(begin, offset - begin);
    }
    buckets.wait_all(compute.get());
    comm.wait(compute.get(), kWait);
    EXPECT_EQ(buckets.completed_steps(), 1);
    const auto result = to_host(grads.get(), static_cast<size_t>(count), DType::F32);
    for (size_t i = 0; i < result.size(); ++i) {
      ASSERT_FLOAT_EQ(result[i], static_cast<float>(n + 1) / 2.0F) << "element " << i;
    }
  });
}

TEST(LocalGroup, RejectsBadDeviceLists) {
  REQUIRE_GPUS(1);
  EXPECT_THROW((void)make_local_group({}), std::invalid_argument);
  EXPECT_THROW((void)make_local_group({0, 0}), std::invalid_argument);
  EXPECT_THROW((void)make_local_group({gpu_count()}), std::invalid_argument);
}

TEST(LocalGroup, WatchdogTurnsAMissingPeerIntoAnError) {
  REQUIRE_GPUS(2);
  const auto group = make_local_group({0, 1});
  std::string message;
  on_every_member(*group, [&](int r) {
    if (r != 0) return;  // member 1 never joins the all-reduce
    Communicator& comm = group->member(0);
    kernels::cuda::Stream stream;
    auto data = to_device(std::vector<float>(1024, 1.0F), DType::F32);
    comm.all_reduce_sum(data.get(), 1024, DType::F32, stream.get());
    const auto start = std::chrono::steady_clock::now();
    try {
      comm.wait(stream.get(), std::chrono::seconds(2));
      ADD_FAILURE() << "the all-reduce completed without its peer";
    } catch (const CommunicatorError& e) {
      message = e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  });
  EXPECT_NE(message.find("did not complete within 2.0 s"), std::string::npos) << message;
  EXPECT_NE(message.find("NCCL_P2P_DISABLE"), std::string::npos) << message;
  EXPECT_NE(message.find("aborted"), std::string::npos) << message;
}

}  // namespace
}  // namespace cnnbench::mpi
