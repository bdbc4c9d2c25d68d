// Replays every file of the fuzz corpora (tests/fuzz/<target>/: the seeds, and every input a
// fuzzer found a bug with) through its target's entry function, in the normal build: an input
// must be accepted or refused with ConfigError/RuntimeError (caught inside the entry); any
// other exception fails here, and a crash or hang fails the test process. scripts/fuzz.sh
// fuzzes the same entries under libFuzzer and the sanitizers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_targets.h"

namespace fs = std::filesystem;

namespace {

const fs::path kCorpusRoot = fs::path(TRAINSCALE_SOURCE_DIR) / "tests" / "fuzz";

std::vector<fs::path> corpus_files(const std::string& target) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kCorpusRoot / target))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

class FuzzCorpus : public ::testing::TestWithParam<ts::fuzz::Target> {};

}  // namespace

TEST_P(FuzzCorpus, EveryInputIsAcceptedOrRefusedCleanly) {
  const ts::fuzz::Target& target = GetParam();
  const std::vector<fs::path> files = corpus_files(target.name);
  ASSERT_FALSE(files.empty()) << "no seed corpus in " << (kCorpusRoot / target.name);
  for (const fs::path& file : files) {
    const std::vector<uint8_t> bytes = read_bytes(file);
    try {
      target.entry(bytes.data(), bytes.size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << file << ": escaped the target " << target.name << ": " << e.what();
    } catch (...) {
      ADD_FAILURE() << file << ": escaped the target " << target.name << ": a non-std exception";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzCorpus, ::testing::ValuesIn(ts::fuzz::targets()),
                         [](const ::testing::TestParamInfo<ts::fuzz::Target>& info) { return std::string(info.param.name); });
