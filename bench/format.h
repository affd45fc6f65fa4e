// printf-style formatting into a std::string (GCC 12 has no std::format).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace cnnbench::bench {

template <typename... Args>
std::string fmt(const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  std::string s(static_cast<size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, format, args...);
  return s;
}

}  // namespace cnnbench::bench
