#include <iostream>

#include "bench/cli/program.h"
#include "bench/run/signals.h"
#include "bench/status.h"

int main(int argc, char** argv) {
  // First, so that a SIGTERM (docker stop, ECS StopTask) or Ctrl-C during set-up
  // already ends in a summary rather than a killed process.
  cnnbench::bench::StopSignals signals;
  const int status = cnnbench::bench::run_program(argc, argv, std::cout, std::cerr, &signals.stop_flag());
  return cnnbench::bench::exit_status_for(status, signals.exit_code());
}
