// Replays a fuzz target's committed seed corpus and a few thousand pseudo-random
// inputs (mutations and splices of the seeds, tokens of the target's libFuzzer
// dictionary, random bytes) through its LLVMFuzzerTestOneInput, so every compiler
// exercises the target in CI. A violated invariant aborts the process, which
// ctest reports as a failure; the target prints the input first.
//
// Built once per target by cnnbench_add_fuzz_target (tests/fuzz/CMakeLists.txt),
// which defines CNNBENCH_FUZZ_CORPUS_DIR, CNNBENCH_FUZZ_DICTIONARY and
// CNNBENCH_FUZZ_RANDOM_INPUTS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

int run_one(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::vector<std::string> read_corpus() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(CNNBENCH_FUZZ_CORPUS_DIR)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());  // the same order everywhere
  std::vector<std::string> corpus;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    corpus.push_back(text.str());
  }
  return corpus;
}

// The quoted values of a libFuzzer dictionary (`name="value"` or `"value"` lines,
// with \\, \" and \xNN escapes).
std::vector<std::string> read_dictionary() {
  std::vector<std::string> tokens;
  std::ifstream in(CNNBENCH_FUZZ_DICTIONARY);
  for (std::string line; std::getline(in, line);) {
    const size_t open = line.find('"');
    const size_t close = line.rfind('"');
    if (line.starts_with("#") || open == std::string::npos || close <= open) continue;
    std::string token;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close) {
        if (line[i + 1] == 'x' && i + 3 < close) {
          token += static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16));
          i += 3;
        } else {
          token += line[++i];
        }
      } else {
        token += line[i];
      }
    }
    tokens.push_back(token);
  }
  return tokens;
}

class Generator {
 public:
  Generator(std::vector<std::string> seeds, std::vector<std::string> tokens)
      : seeds_(std::move(seeds)), tokens_(std::move(tokens)) {
    if (seeds_.empty()) seeds_.push_back("");
    if (tokens_.empty()) tokens_.push_back("0");
  }

  std::string next() {
    switch (pick(4)) {
      case 0: return sentence();
      case 1: return mutate(seed());
      case 2: {
        const std::string& head = seed();
        const std::string& tail = seed();
        return head.substr(0, pick(head.size() + 1)) + tail.substr(pick(tail.size() + 1));
      }
      default: return random_bytes(pick(65));
    }
  }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  const std::string& seed() { return seeds_[pick(seeds_.size())]; }
  const std::string& token() { return tokens_[pick(tokens_.size())]; }

  std::string random_bytes(size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += static_cast<char>(pick(256));
    return out;
  }

  std::string sentence() {
    std::string out;
    const size_t words = 1 + pick(6);
    for (size_t i = 0; i < words; ++i) out += token();
    return out;
  }

  std::string mutate(std::string s) {
    const size_t edits = 1 + pick(4);
    for (size_t e = 0; e < edits; ++e) {
      const size_t at = pick(s.size() + 1);
      switch (pick(5)) {
        case 0: if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1U << pick(8)); break;
        case 1: s.insert(at, token()); break;
        case 2: s.erase(at, pick(8)); break;
        case 3: s.insert(at, s.substr(at, pick(16))); break;
        default: s.insert(at, 1, static_cast<char>(pick(256))); break;
      }
    }
    return s;
  }

  std::mt19937_64 rng_{0x5eedc0ffeeULL};  // fixed: a failure reproduces
  std::vector<std::string> seeds_;
  std::vector<std::string> tokens_;
};

TEST(FuzzReplay, SeedCorpus) {
  const auto corpus = read_corpus();
  ASSERT_FALSE(corpus.empty()) << "no seed files in " << CNNBENCH_FUZZ_CORPUS_DIR;
  for (const auto& input : corpus) EXPECT_EQ(run_one(input), 0);
}

TEST(FuzzReplay, PseudoRandomInputs) {
  Generator generator(read_corpus(), read_dictionary());
  for (int i = 0; i < CNNBENCH_FUZZ_RANDOM_INPUTS; ++i) ASSERT_EQ(run_one(generator.next()), 0) << "input " << i;
}

}  // namespace
