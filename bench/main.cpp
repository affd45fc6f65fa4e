#include <iostream>

#include "bench/run.h"

int main(int argc, char** argv) { return cnnbench::bench::run(argc, argv, std::cout, std::cerr); }
