// Fuzz target: the command-line parser (bench::parse_flags). The input is split
// at newlines into arguments after argv[0]. Every input must either parse into a
// Config whose values lie in their documented ranges, or throw UsageError with a
// message; any other exception, a crash or an out-of-range value aborts, so
// libFuzzer and the replay test (tests/fuzz/fuzz_replay_test.cpp) both report the
// input.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "bench/cli/flags.h"

namespace {

[[noreturn]] void fail(std::string_view what, std::string_view input) {
  std::fprintf(stderr, "flags fuzz invariant failed: %.*s\ninput (%zu bytes):",
               static_cast<int>(what.size()), what.data(), input.size());
  for (unsigned char ch : input) std::fprintf(stderr, " %02x", ch);
  std::fprintf(stderr, "\n");
  std::abort();
}

void check_ranges(const cnnbench::bench::Config& c, std::string_view input) {
  using cnnbench::bench::kMaxBatchSize;
  using cnnbench::bench::kMaxImageSize;
  if (c.batch_size && (*c.batch_size < 1 || *c.batch_size > kMaxBatchSize)) fail("batch_size out of range", input);
  if (c.num_batches && *c.num_batches < 1) fail("num_batches < 1", input);
  if (c.num_warmup_batches && *c.num_warmup_batches < 0) fail("num_warmup_batches < 0", input);
  if (c.display_every < 1) fail("display_every < 1", input);
  if (c.image_size && (*c.image_size < 1 || *c.image_size > kMaxImageSize))
    fail("image_size out of range", input);
  if (c.num_classes < 2) fail("num_classes < 2", input);
  if (!(std::isfinite(c.optimizer.learning_rate) && c.optimizer.learning_rate > 0))
    fail("learning_rate not positive and finite", input);
  if (!(c.optimizer.momentum >= 0 && c.optimizer.momentum < 1)) fail("momentum outside [0, 1)", input);
  if (!(std::isfinite(c.optimizer.weight_decay) && c.optimizer.weight_decay >= 0))
    fail("weight_decay negative or not finite", input);
  if (c.duration_s && !(std::isfinite(*c.duration_s) && *c.duration_s > 0))
    fail("duration not positive and finite", input);
  if (c.duration_s && c.num_batches) fail("--duration accepted together with --num_batches", input);
  if (c.num_gpus < 0) fail("num_gpus < 0", input);
  if (c.num_threads < 0) fail("num_threads < 0", input);
  if (c.model.empty()) fail("empty model accepted", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // At most 64 arguments keeps each run fast; the parser's cost is per argument.
  std::vector<std::string> args{"cnnbench"};
  size_t start = 0;
  while (start <= input.size() && args.size() < 65) {
    const size_t end = input.find('\n', start);
    const size_t stop = end == std::string_view::npos ? input.size() : end;
    args.emplace_back(input.substr(start, stop - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    const auto result = cnnbench::bench::parse_flags(static_cast<int>(argv.size()), argv.data());
    if (result.action == cnnbench::bench::FlagsAction::Run) check_ranges(result.config, input);
    if (result.action != cnnbench::bench::FlagsAction::Run && result.text.empty())
      fail("help or version without text", input);
  } catch (const cnnbench::bench::UsageError& e) {
    if (std::string_view(e.what()).empty()) fail("UsageError without a message", input);
  } catch (const std::exception& e) {
    fail(std::string("unexpected exception: ") + e.what(), input);
  } catch (...) {
    fail("unexpected non-standard exception", input);
  }
  return 0;
}
