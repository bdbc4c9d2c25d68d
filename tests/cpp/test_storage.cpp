// Tests for the storage layer: PosixStorage reads exact byte ranges from files written here,
// from several threads at once; every error names the path (and the OS error where there is
// one); the registry accepts local, nfs and blob and refuses other names.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/posix_storage.h"
#include "data/storage.h"

namespace fs = std::filesystem;

namespace {

class Storage : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ts_storage_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A file of `n` bytes whose byte i is (i * 13 + 5) % 256.
  std::string write_pattern(const std::string& name, int64_t n) {
    std::vector<char> b(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) b[static_cast<size_t>(i)] = static_cast<char>((i * 13 + 5) % 256);
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
    return path;
  }

  fs::path dir_;
  ts::PosixStorage storage_;
};

uint8_t pattern(int64_t i) { return static_cast<uint8_t>((i * 13 + 5) % 256); }

// The message of the RuntimeError thrown by `f`, or a test failure.
template <typename F>
std::string runtime_error_of(F f) {
  try {
    f();
  } catch (const ts::RuntimeError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a RuntimeError";
  return "";
}

}  // namespace

TEST_F(Storage, ReadsExactRanges) {
  const std::string path = write_pattern("data.bin", 10000);
  auto f = storage_.open(path);
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->size(), 10000);
  for (int64_t offset : {int64_t{0}, int64_t{1}, int64_t{4095}, int64_t{9990}}) {
    std::vector<uint8_t> got(10);
    f->read_at(offset, 10, got.data());
    for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], pattern(offset + i)) << "offset " << offset;
  }
  std::vector<uint8_t> all(10000);
  f->read_at(0, 10000, all.data());
  for (int64_t i = 0; i < 10000; ++i) ASSERT_EQ(all[static_cast<size_t>(i)], pattern(i));
  f->read_at(10000, 0, nullptr);  // an empty read at the end is fine
}

TEST_F(Storage, ConcurrentReadsShareOneFile) {
  auto f = storage_.open(write_pattern("data.bin", 1 << 16));
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<uint8_t> b(97);
      for (int64_t k = 0; k < 500; ++k) {
        const int64_t offset = (k * 7919 + t * 131) % ((1 << 16) - 97);
        f->read_at(offset, 97, b.data());
        for (int64_t i = 0; i < 97; ++i) wrong[static_cast<size_t>(t)] += b[static_cast<size_t>(i)] != pattern(offset + i);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, (std::vector<int>{0, 0, 0, 0}));
}

TEST_F(Storage, ExistsForFilesAndDirectories) {
  const std::string path = write_pattern("data.bin", 3);
  EXPECT_TRUE(storage_.exists(path));
  EXPECT_TRUE(storage_.exists(dir_.string()));
  EXPECT_FALSE(storage_.exists((dir_ / "absent.bin").string()));
}

TEST_F(Storage, MissingFileNamesPathAndOsError) {
  const std::string path = (dir_ / "absent.bin").string();
  const std::string msg = runtime_error_of([&] { storage_.open(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
}

TEST_F(Storage, DirectoryIsNotAFile) {
  const std::string msg = runtime_error_of([&] { storage_.open(dir_.string()); });
  EXPECT_NE(msg.find(dir_.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("directory"), std::string::npos) << msg;
}

// Every file that is not a regular one is named for what it is, never by a stale errno
// ("cannot read it as a file (Success)").
TEST_F(Storage, SpecialFilesAreNamedForWhatTheyAre) {
  const std::string fifo = (dir_ / "pipe.jpg").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {dir_.string(), "it is a directory"}, {fifo, "it is a FIFO"}, {"/dev/null", "it is a device"}}) {
    const std::string msg = runtime_error_of([&] { storage_.open(path); });
    EXPECT_NE(msg.find("data file " + path + ": cannot read it as a file (" + kind), std::string::npos) << msg;
    EXPECT_EQ(msg.find("Success"), std::string::npos) << msg;
  }
}

TEST_F(Storage, ReadPastTheEndNamesPathAndRange) {
  const std::string path = write_pattern("data.bin", 100);
  auto f = storage_.open(path);
  std::vector<uint8_t> b(20);
  const std::string msg = runtime_error_of([&] { f->read_at(90, 20, b.data()); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("[90, 110)"), std::string::npos) << msg;
  EXPECT_NE(runtime_error_of([&] { f->read_at(-1, 1, b.data()); }).find(path), std::string::npos);
}

TEST_F(Storage, FileThatShrankAfterOpening) {
  const std::string path = write_pattern("data.bin", 100);
  auto f = storage_.open(path);
  fs::resize_file(path, 50);
  std::vector<uint8_t> b(20);
  const std::string msg = runtime_error_of([&] { f->read_at(60, 20, b.data()); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("shrank"), std::string::npos) << msg;
}

TEST_F(Storage, ListsEntriesSortedWithKinds) {
  write_pattern("b.bin", 7);
  write_pattern("a.bin", 3);
  fs::create_directories(dir_ / "class_0");
  const auto entries = storage_.list(dir_.string());
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "a.bin");
  EXPECT_FALSE(entries[0].directory);
  EXPECT_EQ(entries[0].size, 3);
  EXPECT_EQ(entries[1].name, "b.bin");
  EXPECT_EQ(entries[1].size, 7);
  EXPECT_EQ(entries[2].name, "class_0");
  EXPECT_TRUE(entries[2].directory);
  const std::string absent = (dir_ / "absent").string();
  const std::string msg = runtime_error_of([&] { storage_.list(absent); });
  EXPECT_NE(msg.find(absent), std::string::npos) << msg;
}

TEST(StorageRegistry, NamesAndRefusal) {
  EXPECT_EQ(ts::storage_names(), (std::vector<std::string>{"local", "nfs", "blob"}));
  EXPECT_EQ(ts::make_storage({"local", ""})->name(), "local");
  EXPECT_EQ(ts::make_storage({"nfs", ""})->name(), "nfs");
  EXPECT_EQ(ts::make_storage({"blob", "http://127.0.0.1:9"})->name(), "blob");
  try {
    ts::make_storage({"lustre", ""});
    FAIL() << "expected a ConfigError";
  } catch (const ts::ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'lustre'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("accepted: local ("), std::string::npos) << msg;
    EXPECT_NE(msg.find("blob ("), std::string::npos) << msg;
  }
}

TEST(StorageRegistry, JoinsPaths) {
  EXPECT_EQ(ts::join_storage_path("/data", "a.bin"), "/data/a.bin");
  EXPECT_EQ(ts::join_storage_path("/data/", "a.bin"), "/data/a.bin");
  EXPECT_EQ(ts::join_storage_path("", "a.bin"), "a.bin");
}
