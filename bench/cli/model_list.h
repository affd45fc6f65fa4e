// --list_models: the zoo with its parameter counts, forward GFLOPs per image and
// default image sizes, as a table or as JSON.
#pragma once

#include <ostream>

#include "bench/cli/config.h"

namespace cnnbench::bench {

/// Writes the zoo to `out`: a table (one model a line, with a closing note on
/// what the figures count) or a JSON document {"models": [...]}. Builds every
/// model at its default image size and 1000 classes.
void print_model_list(ListFormat format, std::ostream& out);

}  // namespace cnnbench::bench
