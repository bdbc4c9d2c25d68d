// Tests of what prepares and measures the input before and during a run (docs/data.md):
// staging a tree through a Storage (an in-memory one, so any storage stages the same way;
// a read that fails mid-copy leaves nothing under the final name), the page cache dropped and
// checked with mincore, and the counting storage's per-thread read counts.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/counting_storage.h"
#include "data/node_stage.h"
#include "data/page_cache.h"
#include "data/posix_storage.h"
#include "../fuzz/memory_storage.h"

namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ts_staging_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<uint8_t> pattern(size_t n, int seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i * 31 + static_cast<size_t>(seed)) % 251);
  return b;
}

std::vector<uint8_t> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A storage whose reads of one file fail: a mount that goes away in the middle of a copy.
class FailingStorage final : public ts::Storage {
 public:
  explicit FailingStorage(const ts::Storage& inner) : inner_(inner) {}
  std::string name() const override { return "failing"; }
  bool exists(const std::string& p) const override { return inner_.exists(p); }
  std::vector<ts::StorageEntry> list(const std::string& d) const override { return inner_.list(d); }
  std::unique_ptr<ts::RandomAccessFile> open(const std::string& p) const override {
    if (p.find("broken") != std::string::npos) throw ts::RuntimeError("data file " + p + ": Transport endpoint is not connected");
    return inner_.open(p);
  }

 private:
  const ts::Storage& inner_;
};

}  // namespace

TEST(NodeStage, CopiesTheTreeThroughTheStorageAndReusesAMatchingCopy) {
  ts::fuzz::MemoryStorage source;
  source.add("/data/a.bin", pattern(10000, 1));
  source.add("/data/sub/b.bin", pattern(300, 2));
  const fs::path scratch = fresh_dir("copy");
  const ts::StageResult first = ts::stage_tree(source, "/data", scratch.string());
  EXPECT_FALSE(first.reused);
  EXPECT_EQ(first.files, 2);
  EXPECT_EQ(first.bytes, 10300);
  EXPECT_EQ(first.root, ts::staged_root("memory", "/data", scratch.string()));
  EXPECT_EQ(file_bytes(fs::path(first.root) / "a.bin"), pattern(10000, 1));
  EXPECT_EQ(file_bytes(fs::path(first.root) / "sub" / "b.bin"), pattern(300, 2));
  EXPECT_TRUE(ts::stage_tree(source, "/data", scratch.string()).reused);
  source.add("/data/sub/b.bin", pattern(301, 3));  // the source changed: copied again
  const ts::StageResult third = ts::stage_tree(source, "/data", scratch.string());
  EXPECT_FALSE(third.reused);
  EXPECT_EQ(file_bytes(fs::path(third.root) / "sub" / "b.bin"), pattern(301, 3));
  fs::remove_all(scratch);
}

TEST(NodeStage, AFailedCopyLeavesNothingUnderTheFinalName) {
  ts::fuzz::MemoryStorage memory;
  memory.add("/data/a.bin", pattern(100, 1));
  memory.add("/data/broken.bin", pattern(100, 2));
  const FailingStorage source(memory);
  const fs::path scratch = fresh_dir("fail");
  try {
    ts::stage_tree(source, "/data", scratch.string());
    FAIL() << "expected a RuntimeError";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("/data/broken.bin"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(ts::staged_root("failing", "/data", scratch.string())));
  fs::remove_all(scratch);
}

TEST(PageCache, DropEmptiesTheCacheOfTheFilesAndWarmFillsIt) {
  const fs::path dir = fresh_dir("cache");
  const fs::path file = dir / "data.bin";
  {
    const std::vector<uint8_t> bytes = pattern(size_t{4} << 20, 5);
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const int fd = ::open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fsync(fd), 0);  // dirty pages cannot be dropped; written-back ones can
  ::close(fd);
  const ts::PosixStorage storage;
  const std::vector<ts::TreeFile> files = ts::list_tree(storage, dir.string());
  ASSERT_EQ(files.size(), 1u);
  const ts::CacheResult warm = ts::warm_page_cache(storage, files);
  EXPECT_TRUE(warm.ok);
  EXPECT_EQ(warm.bytes, int64_t{4} << 20);
  const int64_t before = ts::resident_pages(file.string());
  const ts::CacheResult drop = ts::drop_page_cache(files);
  ASSERT_TRUE(drop.ok) << drop.note;
  EXPECT_EQ(drop.note.rfind("dropped 1 file", 0), 0u) << drop.note;
  const int64_t after = ts::resident_pages(file.string());
  if (before <= 0 || after < 0) GTEST_SKIP() << "mincore cannot see this file's pages here (resident before: " << before << ")";
  EXPECT_EQ(after, 0) << "pages still resident after POSIX_FADV_DONTNEED (before: " << before << ")";
  fs::remove_all(dir);
}

TEST(PageCache, ADropOfAMissingFileIsReportedNotThrown) {
  const ts::CacheResult r = ts::drop_page_cache({{"/nonexistent/trainscale/file", "file", 1, 0}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.note.find("/nonexistent/trainscale/file"), std::string::npos) << r.note;
}

TEST(CountingStorage, CountsTheBytesOfEachThreadSeparately) {
  auto memory = std::make_unique<ts::fuzz::MemoryStorage>();
  memory->add("/f", pattern(1000, 1));
  const auto storage = ts::make_counting_storage(std::move(memory));
  EXPECT_EQ(storage->name(), "memory");
  const auto file = storage->open("/f");
  std::vector<uint8_t> dst(1000);
  const ts::ReadCounts start = ts::thread_read_counts();
  file->read_at(10, 100, dst.data());
  file->read_at(0, 1000, dst.data());
  EXPECT_THROW(file->read_at(990, 20, dst.data()), ts::RuntimeError);  // a failed read counts nothing
  int64_t other_thread = -1;
  std::thread([&] {
    file->read_at(0, 7, dst.data());
    other_thread = ts::thread_read_counts().bytes;
  }).join();
  const ts::ReadCounts end = ts::thread_read_counts();
  EXPECT_EQ(end.bytes - start.bytes, 1100);
  EXPECT_GE(end.seconds - start.seconds, 0.0);
  EXPECT_EQ(other_thread, 7);
}
