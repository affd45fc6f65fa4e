#include "bench/status.h"

#include <string>

namespace cnnbench::bench {

int exit_code_for(const std::exception& error) {
  if (dynamic_cast<const UsageError*>(&error) != nullptr) return kExitUsage;
  if (const auto* collective = dynamic_cast<const CollectiveError*>(&error)) return collective->exit_code();
  return kExitFailure;
}

int print_error(const std::exception& error, std::ostream& out, std::ostream& err, std::string_view where) {
  const int status = exit_code_for(error);
  // One write, so that lines of several threads or ranks do not interleave.
  std::string line = "cnnbench: error: ";
  if (!where.empty()) line.append(where).append(": ");
  line += error.what();
  line += '\n';
  if (status == kExitUsage && where.empty()) line += "see cnnbench --help\n";
  out.flush();
  err << line;
  err.flush();
  return status;
}

}  // namespace cnnbench::bench
