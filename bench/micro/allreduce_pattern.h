// Device side of the all-reduce check (allreduce_pattern.cu, CUDA builds):
// writes allreduce_value into an input buffer and counts the elements of a
// result that differ from allreduce_expected, on the device, so that a 1 GiB
// result is never copied to the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace cnnbench::bench::micro {

/// data[i] = allreduce_value(i, rank) for i in [0, count).
void fill_allreduce_pattern(float* data,  // (count)
                            int64_t count, int rank, cudaStream_t stream);

/// *wrong += the number of i in [0, count) with data[i] != allreduce_expected(i,
/// ranks) (NaN counts as wrong). `wrong` is device memory.
void count_allreduce_wrong(const float* data,  // (count)
                           int64_t count, int ranks,
                           unsigned long long* wrong,  // (1) device counter
                           cudaStream_t stream);

}  // namespace cnnbench::bench::micro
