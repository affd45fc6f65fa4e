// The host's name, for error messages that must say where a rank failed.
#pragma once

#include <string>

namespace cnnbench::mpi {

/// gethostname(), or "unknown host" when it fails.
std::string host_name();

/// "rank 3 of 8 on host ip-10-0-1-23": where an error happened.
std::string rank_location(int rank, int world_size);

}  // namespace cnnbench::mpi
