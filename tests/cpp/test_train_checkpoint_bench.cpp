// The POSIX checkpoint store of `trainscale bench checkpoint` (data/checkpoint_store.h) and the
// checkpoint size of a model (train/checkpoint_bench.h); object storage is tested against moto's
// S3 server in tests/python/test_bench_checkpoint.py.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/checkpoint_store.h"
#include "train/checkpoint_bench.h"

namespace fs = std::filesystem;
using namespace ts;

TEST(CheckpointStore, PosixWritesReadsBackAndRemoves) {
  const fs::path root = fs::temp_directory_path() / ("ts_ckpt_store_" + std::to_string(::getpid())) / "deep";
  auto store = make_checkpoint_store("local", root.string(), "");
  EXPECT_TRUE(fs::is_directory(root));  // created
  std::vector<char> bytes(3 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 3);
  store->write("k", bytes.data(), static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(fs::file_size(root / "k"), bytes.size());
  std::vector<char> back(bytes.size());
  store->read_from_storage("k", back.data(), static_cast<int64_t>(back.size()));
  EXPECT_EQ(back, bytes);
  std::vector<char> longer(bytes.size() + 1);
  try {
    store->read_from_storage("k", longer.data(), static_cast<int64_t>(longer.size()));
    FAIL() << "a read past the file's end must fail";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find((root / "k").string()), std::string::npos) << e.what();
  }
  store->remove("k");
  EXPECT_FALSE(fs::exists(root / "k"));
  EXPECT_THROW(store->read_from_storage("k", back.data(), 1), RuntimeError);
  fs::remove_all(root.parent_path());
}

TEST(CheckpointStore, RootsOfTheWrongKindAreConfigErrors) {
  EXPECT_THROW(make_checkpoint_store("local", "s3://bucket/prefix", ""), ConfigError);
  EXPECT_THROW(make_checkpoint_store("blob", "/tmp/x", ""), ConfigError);
  EXPECT_THROW(make_checkpoint_store("tape", "/tmp/x", ""), ConfigError);
}

TEST(CheckpointBench, SizeIsWeightsMomentumAndState) {
  int64_t params = 0, state = 0;
  const int64_t bytes = checkpoint_bytes_of("resnet50", &params, &state);
  EXPECT_EQ(params, 25'557'032);  // torchvision's resnet50
  EXPECT_EQ(state, 53'120);       // BN running means and variances
  EXPECT_EQ(bytes, 4 * (2 * params + state));
  EXPECT_THROW(checkpoint_bytes_of("no_such_model"), ConfigError);
}
