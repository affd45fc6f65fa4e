// The two text helpers that parsing environment values and device lists needs:
// trimming and lower-casing, without locale (the "C" character classes).
// Header-only, so that the device-list parser stays one source file for its
// fuzz target.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace cnnbench::bench {

/// `s` without leading and trailing white space (std::isspace).
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

/// `s` in lower case (std::tolower, byte by byte).
inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace cnnbench::bench
