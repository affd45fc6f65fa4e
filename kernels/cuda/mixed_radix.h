// A flat index as three mixed-radix digits (lo, mid, hi) with radices
// (r0, r1, unbounded): index = (hi·r1 + mid)·r0 + lo. A GPU thread that walks
// a tensor with a stride decodes its first index once and then adds the
// stride's digits with carries — additions and compares instead of a 64-bit
// division and modulo per element (which cost tens of instructions each).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace cnnbench::kernels::cuda {

struct RadixDigits {
  int64_t lo = 0;
  int64_t mid = 0;
  int64_t hi = 0;
};

struct MixedRadix {
  int64_t r0 = 1;  ///< radix of lo (≥ 1)
  int64_t r1 = 1;  ///< radix of mid (≥ 1)

  CNNBENCH_HOST_DEVICE RadixDigits decode(int64_t index) const {
    RadixDigits d;
    d.lo = index % r0;
    const int64_t rest = index / r0;
    d.mid = rest % r1;
    d.hi = rest / r1;
    return d;
  }

  /// d += step, both in this radix (step from decode()): each digit of step
  /// is below its radix, so one conditional subtraction per digit suffices.
  CNNBENCH_HOST_DEVICE void advance(RadixDigits& d, const RadixDigits& step) const {
    d.lo += step.lo;
    int64_t carry = d.lo >= r0 ? 1 : 0;
    d.lo -= carry * r0;
    d.mid += step.mid + carry;
    carry = d.mid >= r1 ? 1 : 0;
    d.mid -= carry * r1;
    d.hi += step.hi + carry;
  }
};

}  // namespace cnnbench::kernels::cuda
