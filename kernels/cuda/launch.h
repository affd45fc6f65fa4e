// Host-side helpers shared by the launchers of our own kernels (not a public
// interface): precondition checks, alignment tests and launch shapes.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace cnnbench::kernels::cuda::detail {

/// Threads per block of the memory-bound kernels: 8 warps, enough for full
/// occupancy at up to 8 resident blocks per multiprocessor.
inline constexpr int kBlockThreads = 256;

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Throws std::invalid_argument("<launcher>: <what>") unless `ok`.
inline void require(bool ok, const char* launcher, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(launcher) + ": " + what);
}

/// True when `p` allows 16-byte vector accesses (nullptr counts as aligned: an
/// absent optional operand imposes nothing).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// Launch shape for work laid out as `rows` rows of `vecs` vectors each (a row
/// of an NHWC tensor is one pixel's channels): threadIdx.x walks the vectors of
/// a row (coalesced), threadIdx.y and blockIdx.y walk rows, blockIdx.x splits a
/// row wider than 32 vectors into near-equal parts so no warp idles on a short
/// remainder. Each thread then visits about `rows_per_thread` rows, with
/// blockIdx.y capped at `max_grid_y` (and at CUDA's limit of 65535).
struct RowGrid {
  dim3 block;
  dim3 grid;
};

inline RowGrid row_grid(int64_t rows, int64_t vecs, int64_t rows_per_thread, int64_t max_grid_y) {
  const int64_t gx = ceil_div(vecs, 32);
  const int64_t cx = ceil_div(vecs, gx);  // <= 32
  const int64_t ry = kBlockThreads / cx;  // >= 8
  const int64_t gy =
      std::clamp<int64_t>(ceil_div(rows, ry * rows_per_thread), 1, std::min<int64_t>(max_grid_y, 65535));
  return {dim3(static_cast<unsigned>(cx), static_cast<unsigned>(ry)),
          dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy))};
}

/// One-dimensional grid of kBlockThreads-thread blocks covering `items` threads.
inline dim3 grid_1d(int64_t items) {
  return dim3(static_cast<unsigned>(std::max<int64_t>(1, ceil_div(items, kBlockThreads))));
}

}  // namespace cnnbench::kernels::cuda::detail
