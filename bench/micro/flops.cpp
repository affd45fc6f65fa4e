#include "bench/micro/flops.h"

#include <cctype>
#include <limits>
#include <stdexcept>

namespace cnnbench::bench::micro {

const char* to_string(ConvPass pass) {
  switch (pass) {
    case ConvPass::Fprop: return "fprop";
    case ConvPass::Dgrad: return "dgrad";
    case ConvPass::Wgrad: return "wgrad";
  }
  return "?";
}

int64_t conv_macs(const models::Shape& input, const models::ConvAttrs& attrs,
                  const models::Shape& output) {
  const int64_t groups = attrs.groups > 0 ? attrs.groups : 1;
  return int64_t{output.n} * output.c * output.h * output.w * (input.c / groups) *
         attrs.kernel_h * attrs.kernel_w;
}

double conv_pass_flops(const models::Shape& input, const models::ConvAttrs& attrs,
                       const models::Shape& output, ConvPass /*pass*/) {
  return 2.0 * static_cast<double>(conv_macs(input, attrs, output));
}

double tflops_per_second(double flops, double seconds) {
  return seconds > 0 ? flops / seconds / 1e12 : 0.0;
}

double gigabytes_per_second(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 : 0.0;
}

int64_t copy_bytes(int64_t bytes) { return 2 * bytes; }

int64_t batchnorm_forward_bytes(int64_t elements, int64_t size, bool add) {
  return (3 + (add ? 1 : 0)) * elements * size;
}

int64_t batchnorm_backward_bytes(int64_t elements, int64_t size, bool relu, bool add) {
  const int64_t reduce = 2 + (relu ? 1 : 0) + (add ? 1 : 0);
  const int64_t apply = 3 + (add ? 0 : (relu ? 1 : 0));
  return (reduce + apply) * elements * size;
}

int64_t pool_forward_bytes(int64_t in_elements, int64_t out_elements, int64_t size, bool max) {
  return (in_elements + out_elements) * size + (max ? out_elements : 0);
}

int64_t pool_backward_bytes(int64_t in_elements, int64_t out_elements, int64_t size, bool max) {
  return (in_elements + out_elements) * size + (max ? out_elements : 0);
}

int64_t softmax_cross_entropy_bytes(int64_t n, int64_t classes, int64_t size) {
  return 2 * n * classes * size + 8 * n;
}

int64_t sgd_momentum_bytes(int64_t count, int64_t grad_size, int64_t lp_size) {
  return count * (grad_size + 16 + lp_size);
}

int64_t cast_bytes(int64_t count, int64_t src_size, int64_t dst_size) {
  return count * (src_size + dst_size);
}

double allreduce_algbw(int64_t bytes, double seconds) {
  return gigabytes_per_second(static_cast<double>(bytes), seconds);
}

double allreduce_busbw(double algbw, int ranks) {
  if (ranks <= 1) return 0.0;
  return algbw * 2.0 * (ranks - 1) / ranks;
}

std::vector<int64_t> allreduce_sizes(int64_t min_bytes, int64_t max_bytes) {
  if (min_bytes < 4) {
    throw std::invalid_argument("all-reduce sizes: the smallest size must be at least 4 bytes (one "
                                "float); got " + std::to_string(min_bytes));
  }
  if (min_bytes > max_bytes) {
    throw std::invalid_argument("all-reduce sizes: the smallest size (" + format_bytes(min_bytes) +
                                ") is larger than the largest (" + format_bytes(max_bytes) + ")");
  }
  int64_t size = 4;
  while (size < min_bytes) size *= 2;
  std::vector<int64_t> sizes;
  for (; size <= max_bytes; size *= 2) {
    sizes.push_back(size);
    if (size > std::numeric_limits<int64_t>::max() / 2) break;
  }
  return sizes;
}

std::string format_bytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  int64_t value = bytes;
  while (unit < 4 && value != 0 && value % 1024 == 0) {
    value /= 1024;
    ++unit;
  }
  return std::to_string(value) + kUnits[unit];
}

int64_t parse_bytes(std::string_view text) {
  const std::string original(text);
  auto fail = [&]() -> int64_t {
    throw std::invalid_argument("'" + original +
                                "' is not a size in bytes (expected a positive number with an "
                                "optional K, M or G suffix, e.g. 1K, 64M, 1G)");
  };
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) {
    ++digits;
  }
  if (digits == 0 || digits > 15) return fail();
  int64_t value = std::stoll(std::string(text.substr(0, digits)));
  std::string suffix(text.substr(digits));
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (suffix.empty() || suffix == "b") {
    shift = 0;
  } else if (suffix == "k" || suffix == "kib" || suffix == "kb") {
    shift = 10;
  } else if (suffix == "m" || suffix == "mib" || suffix == "mb") {
    shift = 20;
  } else if (suffix == "g" || suffix == "gib" || suffix == "gb") {
    shift = 30;
  } else {
    return fail();
  }
  if (value <= 0 || value > (std::numeric_limits<int64_t>::max() >> shift)) return fail();
  return value << shift;
}

}  // namespace cnnbench::bench::micro
