// Damaged copies of the real Fashion-MNIST files (/usr/share/datasets/fashion-mnist): a flipped
// byte in the compressed stream or in a gzip trailer (CRC-32, length), a file cut short, and
// forged IDX counts and gzip trailers. Each must fail at open with a RuntimeError naming the
// file and what is wrong, and a forged count must not allocate what it claims: the forged cases
// run in a child process whose address space is limited to its current size plus 256 MiB.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/idx_source.h"
#include "data/posix_storage.h"
#include "sanitizers.h"

namespace fs = std::filesystem;

namespace {

const fs::path kFashionRoot = "/usr/share/datasets/fashion-mnist";
const char* const kImages = "t10k-images-idx3-ubyte.gz";
const char* const kLabels = "t10k-labels-idx1-ubyte.gz";

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& raw) {
  uLongf size = compressBound(static_cast<uLong>(raw.size())) + 64;
  std::vector<uint8_t> out(size);
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  zs.next_in = const_cast<uint8_t*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::vector<uint8_t> gunzip_file(const fs::path& p) {
  gzFile f = gzopen(p.string().c_str(), "rb");
  std::vector<uint8_t> out, chunk(1 << 16);
  int n = 0;
  while ((n = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()))) > 0) out.insert(out.end(), chunk.data(), chunk.data() + n);
  gzclose(f);
  return out;
}

void put_be32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

// Current virtual size of this process (VmSize in /proc/self/status), in bytes.
rlim_t current_address_space() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmSize:") {
      rlim_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

// Runs `open` in a forked child limited to its current address space plus `headroom` bytes.
// Returns what it threw: the RuntimeError's text, "bad_alloc", "ok" or "other: <what>".
std::string outcome_with_memory_limit(const std::function<void()>& open, rlim_t headroom) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    const rlimit limit{current_address_space() + headroom, current_address_space() + headroom};
    std::string result;
    if (::setrlimit(RLIMIT_AS, &limit) != 0) {
      result = "setrlimit failed";
    } else {
      try {
        open();
        result = "ok";
      } catch (const ts::RuntimeError& e) {
        result = e.what();
      } catch (const std::bad_alloc&) {
        result = "bad_alloc";
      } catch (const std::exception& e) {
        result = std::string("other: ") + e.what();
      }
    }
    const ssize_t written = ::write(pipefd[1], result.data(), result.size());
    ::_exit(written == static_cast<ssize_t>(result.size()) ? 0 : 1);
  }
  ::close(pipefd[1]);
  std::string text;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died (signal " + std::to_string(WTERMSIG(status)) + ")";
  return text;
}

class DamagedFashionMnist : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kFashionRoot / kImages) || !fs::exists(kFashionRoot / kLabels))
      GTEST_SKIP() << "Fashion-MNIST .gz files not installed at " << kFashionRoot
                   << " (scripts/setup.sh installs the Debian package dataset-fashion-mnist)";
    dir_ = fs::temp_directory_path() / ("ts_damaged_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(kFashionRoot / kImages, dir_ / kImages);
    fs::copy_file(kFashionRoot / kLabels, dir_ / kLabels);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void open() const { ts::open_idx_source(storage_, dir_.string(), ts::Split::test, "fashion_mnist", {}); }

  // Expects a RuntimeError at open naming `file` and containing `what`.
  void expect_error(const std::string& file, const std::string& what) const {
    try {
      open();
      FAIL() << "expected an error naming " << file;
    } catch (const ts::RuntimeError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find((dir_ / file).string()), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  }

  // Expects the same, from a child that may allocate at most 256 MiB more than it holds now.
  void expect_error_within_memory(const std::string& file, const std::string& what) const {
    if (ts::testing_support::kUnderSanitizer) GTEST_SKIP() << ts::testing_support::kUnderSanitizerReason;
    const std::string msg = outcome_with_memory_limit([this] { open(); }, rlim_t{256} << 20);
    EXPECT_NE(msg.find((dir_ / file).string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }

  void flip(const std::string& file, size_t from_end_or_offset, bool from_end, uint8_t mask) const {
    auto b = read_bytes(dir_ / file);
    const size_t at = from_end ? b.size() - from_end_or_offset : from_end_or_offset;
    b[at] ^= mask;
    write_bytes(dir_ / file, b);
  }

  fs::path dir_;
  ts::PosixStorage storage_;
};

}  // namespace

TEST_F(DamagedFashionMnist, IntactCopyOpens) { EXPECT_NO_THROW(open()); }

TEST_F(DamagedFashionMnist, FlippedByteInTheCompressedStream) {
  flip(kImages, fs::file_size(dir_ / kImages) / 2, false, 0x10);
  expect_error(kImages, "corrupt compressed data");
}

TEST_F(DamagedFashionMnist, FlippedCrc) {
  flip(kLabels, 8, true, 0x01);  // the trailer: CRC-32 (4 bytes), then the length (4 bytes)
  expect_error(kLabels, "incorrect data check");
}

TEST_F(DamagedFashionMnist, FlippedLengthInTheTrailer) {
  flip(kLabels, 2, true, 0x40);
  expect_error(kLabels, "incorrect length check");
}

TEST_F(DamagedFashionMnist, CutShort) {
  fs::resize_file(dir_ / kImages, fs::file_size(dir_ / kImages) - 1000);
  expect_error(kImages, "truncated");
  fs::copy_file(kFashionRoot / kImages, dir_ / kImages, fs::copy_options::overwrite_existing);
  fs::resize_file(dir_ / kLabels, 12);  // inside the gzip header
  expect_error(kLabels, "truncated");
}

TEST_F(DamagedFashionMnist, GarbageAfterTheStream) {
  auto b = read_bytes(dir_ / kLabels);
  b.insert(b.end(), {0, 0, 0, 0, 0, 0, 0, 0});
  write_bytes(dir_ / kLabels, b);
  expect_error(kLabels, "corrupt compressed data");
}

TEST_F(DamagedFashionMnist, CountOneMoreOrLessThanTheData) {
  auto raw = gunzip_file(dir_ / kImages);
  put_be32(raw, 4, 10001);  // the image count
  write_bytes(dir_ / kImages, gzip_bytes(raw));
  expect_error(kImages, "truncated: the header describes 10001 images");
  put_be32(raw, 4, 9999);
  write_bytes(dir_ / kImages, gzip_bytes(raw));
  expect_error(kImages, "unexpected bytes");
}

// A forged count fails from the header, before anything is inflated or allocated.
TEST_F(DamagedFashionMnist, AbsurdCountAllocatesNothing) {
  auto raw = gunzip_file(dir_ / kImages);
  put_be32(raw, 4, 0xFFFFFFF0u);
  write_bytes(dir_ / kImages, gzip_bytes(raw));
  expect_error_within_memory(kImages, "more than its");
  auto labels = gunzip_file(dir_ / kLabels);
  put_be32(labels, 4, 0xFFFFFFF0u);
  fs::copy_file(kFashionRoot / kImages, dir_ / kImages, fs::copy_options::overwrite_existing);
  write_bytes(dir_ / kLabels, gzip_bytes(labels));
  expect_error_within_memory(kLabels, "more than its");
}

// A gzip trailer claiming 4 GiB once reserved that much before inflating (std::bad_alloc under
// a memory limit); now the reservation is capped and zlib's length check reports the damage.
TEST_F(DamagedFashionMnist, ForgedTrailerLengthAllocatesNothing) {
  auto b = read_bytes(dir_ / kImages);
  for (size_t i = b.size() - 4; i < b.size(); ++i) b[i] = 0xFF;
  write_bytes(dir_ / kImages, b);
  expect_error_within_memory(kImages, "incorrect length check");
}

// A header whose count matches a gzip bomb's claim: inflating stops one byte past the size the
// header describes, so the data that is not there is never held.
TEST_F(DamagedFashionMnist, MoreInflatedBytesThanTheHeaderSays) {
  std::vector<uint8_t> raw = gunzip_file(dir_ / kLabels);
  raw.resize(raw.size() + (size_t{4} << 20), 0);  // 4 MiB of zeros after the labels: ~4 KiB compressed
  write_bytes(dir_ / kLabels, gzip_bytes(raw));
  expect_error(kLabels, "unexpected bytes: it inflates to more than the 10008 bytes expected");
}
