#include "bench/micro/allreduce.h"
#include "bench/micro/allreduce_pattern.h"
#include "kernels/cuda/check.h"

namespace cnnbench::bench::micro {

namespace {

constexpr int kThreads = 256;
/// Enough blocks to fill any current GPU; the kernels stride over the rest.
constexpr int64_t kMaxBlocks = 4096;

/// The 13 possible expected values (allreduce_expected depends on i mod 13 only).
struct Expected {
  float value[13];
};

__global__ void fill_kernel(float* __restrict__ data, int64_t count, int rank) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] = allreduce_value(i, rank);
  }
}

__global__ void count_wrong_kernel(const float* __restrict__ data, int64_t count, Expected expected,
                                   unsigned long long* __restrict__ wrong) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  unsigned long long mine = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    // != is true for NaN, so poisoned (never written) elements count.
    if (!(data[i] == expected.value[i % 13])) ++mine;
  }
  if (mine != 0) atomicAdd(wrong, mine);
}

unsigned int blocks_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

}  // namespace

void fill_allreduce_pattern(float* data, int64_t count, int rank, cudaStream_t stream) {
  if (count <= 0) return;
  fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count, rank);
  CNNBENCH_CHECK_LAUNCH();
}

void count_allreduce_wrong(const float* data, int64_t count, int ranks, unsigned long long* wrong,
                           cudaStream_t stream) {
  if (count <= 0) return;
  Expected expected{};
  for (int k = 0; k < 13; ++k) expected.value[k] = allreduce_expected(k, ranks);
  count_wrong_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count, expected, wrong);
  CNNBENCH_CHECK_LAUNCH();
}

}  // namespace cnnbench::bench::micro
