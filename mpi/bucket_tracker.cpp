// Bucket planning and range tracking: pure logic, no transport.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

#include "mpi/gradient_buckets.h"

namespace cnnbench::mpi {
namespace {

std::string range_text(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

}  // namespace

int64_t elements_in_mib(double mib, kernels::DType dtype) {
  if (!std::isfinite(mib) || mib <= 0) {
    throw std::invalid_argument("all-reduce bucket size must be a finite number of MiB > 0, got " +
                                std::to_string(mib));
  }
  constexpr double kBytesPerMiB = 1024.0 * 1024.0;
  const double elements =
      std::floor(mib * kBytesPerMiB / static_cast<double>(kernels::dtype_size(dtype)));
  // 2^62 elements is beyond any buffer; the cap keeps the conversion defined.
  constexpr double kMaxElements = 4.6e18;
  return std::max<int64_t>(1, static_cast<int64_t>(std::min(elements, kMaxElements)));
}

std::vector<Bucket> plan_buckets(int64_t count, kernels::DType dtype, const BucketSizes& sizes) {
  if (count < 0) throw std::invalid_argument("plan_buckets: negative element count");
  const int64_t per_bucket = elements_in_mib(sizes.bucket_mib, dtype);
  const int64_t first = std::min(per_bucket, elements_in_mib(sizes.first_bucket_mib, dtype));
  std::vector<Bucket> buckets;
  for (int64_t offset = 0; offset < count;) {
    const int64_t size = std::min(buckets.empty() ? first : per_bucket, count - offset);
    buckets.push_back({offset, size});
    offset += size;
  }
  return buckets;
}

BucketTracker::BucketTracker(std::vector<Bucket> buckets)
    : buckets_(std::move(buckets)), covered_(buckets_.size(), 0) {
  for (const Bucket& b : buckets_) {
    if (b.offset != total_ || b.count <= 0) {
      throw std::invalid_argument(
          "BucketTracker: buckets must be non-empty and consecutive from 0");
    }
    total_ = b.end();
  }
}

std::vector<int> BucketTracker::add(int64_t offset, int64_t count) {
  if (count == 0) return {};
  if (count < 0 || offset < 0 || offset > total_ - count) {
    throw std::out_of_range("gradient range " + range_text(offset, offset + count) +
                            " is outside the gradient buffer " + range_text(0, total_));
  }
  const int64_t end = offset + count;

  // Overlap with a recorded range: the one starting at or before `offset`, or
  // the first one starting after it.
  auto next = ranges_.upper_bound(offset);
  if (next != ranges_.begin()) {
    const auto prev = std::prev(next);
    if (prev->second > offset) {
      throw std::logic_error("gradient range " + range_text(offset, end) + " overlaps " +
                             range_text(prev->first, prev->second) +
                             ", already reported this step");
    }
  }
  if (next != ranges_.end() && next->first < end) {
    throw std::logic_error("gradient range " + range_text(offset, end) + " overlaps " +
                           range_text(next->first, next->second) + ", already reported this step");
  }

  // Record, merging with adjacent ranges so the map stays small.
  int64_t merged_begin = offset;
  int64_t merged_end = end;
  if (next != ranges_.end() && next->first == end) {
    merged_end = next->second;
    next = ranges_.erase(next);
  }
  if (next != ranges_.begin()) {
    const auto prev = std::prev(next);
    if (prev->second == offset) {
      merged_begin = prev->first;
      ranges_.erase(prev);
    }
  }
  ranges_.emplace(merged_begin, merged_end);

  // Count the covered elements of every bucket the range touches.
  auto it = std::upper_bound(buckets_.begin(), buckets_.end(), offset,
                             [](int64_t value, const Bucket& b) { return value < b.end(); });
  for (; it != buckets_.end() && it->offset < end; ++it) {
    const int64_t overlap = std::min(end, it->end()) - std::max(offset, it->offset);
    covered_[static_cast<size_t>(it - buckets_.begin())] += overlap;
  }

  std::vector<int> released;
  while (released_ < static_cast<int>(buckets_.size()) &&
         covered_[static_cast<size_t>(released_)] ==
             buckets_[static_cast<size_t>(released_)].count) {
    released.push_back(released_);
    ++released_;
  }
  return released;
}

void BucketTracker::reset() {
  std::fill(covered_.begin(), covered_.end(), 0);
  ranges_.clear();
  released_ = 0;
}

}  // namespace cnnbench::mpi
