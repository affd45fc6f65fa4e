// CNNBENCH_HOST_DEVICE marks small functions that both the CUDA kernels and
// host code (and their CPU tests, built by the host compiler) call.
#pragma once

#if defined(__CUDACC__)
#define CNNBENCH_HOST_DEVICE __host__ __device__
#else
#define CNNBENCH_HOST_DEVICE
#endif
