// Reader for the CIFAR-10 binary batches: data_batch_{1..5}.bin (train) and test_batch.bin
// (test). Each record is 1 label byte (0..9) followed by 3072 pixel bytes, channel-major
// (3x32x32: all red, then green, then blue), which is exactly the loader's CHW layout.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/dataset.h"

namespace ts {
namespace {

constexpr int64_t kImageBytes = 3 * 32 * 32;
constexpr int64_t kRecordBytes = 1 + kImageBytes;
constexpr int64_t kClasses = 10;
constexpr const char* kInstallHint =
    "download the CIFAR-10 binary version (cifar-10-binary.tar.gz) and set dataset.root to the "
    "directory holding data_batch_1.bin .. data_batch_5.bin and test_batch.bin";

// The directory that holds the batches: `root` itself, or the tarball's
// `cifar-10-batches-bin/` inside it.
std::filesystem::path batch_dir(const std::string& root, const std::string& first_file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path nested = fs::path(root) / "cifar-10-batches-bin";
  if (!fs::exists(fs::path(root) / first_file, ec) && fs::exists(nested / first_file, ec))
    return nested;
  return fs::path(root);
}

// Appends the records of one batch file to `d`.
void read_batch(const std::string& path, Dataset& d) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    throw RuntimeError("data file " + path + " cannot be opened (" + std::strerror(errno) +
                       "); " + kInstallHint);
  const int64_t size = static_cast<int64_t>(in.tellg());
  if (size <= 0 || size % kRecordBytes != 0)
    throw RuntimeError("data file " + path + ": size " + std::to_string(size) +
                       " bytes is not a positive multiple of the CIFAR-10 record size " +
                       std::to_string(kRecordBytes) +
                       " (1 label byte + 3072 pixel bytes); the file is truncated or not a "
                       "CIFAR-10 binary batch; " + kInstallHint);
  const int64_t records = size / kRecordBytes;
  std::vector<uint8_t> raw(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(raw.data()), size))
    throw RuntimeError("data file " + path + ": read error after " +
                       std::to_string(in.gcount()) + " of " + std::to_string(size) + " bytes");

  const size_t first = d.labels.size();
  d.labels.resize(first + static_cast<size_t>(records));
  d.pixels.resize((first + static_cast<size_t>(records)) * kImageBytes);
  for (int64_t r = 0; r < records; ++r) {
    const uint8_t* rec = raw.data() + r * kRecordBytes;
    if (rec[0] >= kClasses)
      throw RuntimeError("data file " + path + ": label " + std::to_string(rec[0]) +
                         " of record " + std::to_string(r) + " (byte offset " +
                         std::to_string(r * kRecordBytes) + ") is out of range 0..9; the file "
                         "is not a CIFAR-10 batch (CIFAR-100 has 2 label bytes); " +
                         kInstallHint);
    d.labels[first + static_cast<size_t>(r)] = rec[0];
    std::memcpy(d.pixels.data() + (first + static_cast<size_t>(r)) * kImageBytes, rec + 1,
                kImageBytes);
  }
  d.count += records;
}

}  // namespace

Dataset read_cifar10_dataset(const std::string& root, Split split) {
  std::vector<std::string> files;
  if (split == Split::train) {
    for (int i = 1; i <= 5; ++i) files.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    files.push_back("test_batch.bin");
  }
  const std::filesystem::path dir = batch_dir(root, files.front());

  Dataset d;
  d.name = "cifar10";
  d.sample = Shape{3, 32, 32};
  d.classes = kClasses;
  for (const auto& f : files) {
    const std::string path = (dir / f).string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw RuntimeError("data file " + path + " not found" +
                         (std::filesystem::is_directory(root, ec)
                              ? std::string()
                              : " (directory " + root + " does not exist)") +
                         "; " + kInstallHint);
    read_batch(path, d);
  }
  // Per-channel training-set statistics (R, G, B).
  d.mean = {0.4914f, 0.4822f, 0.4465f};
  d.stddev = {0.2470f, 0.2435f, 0.2616f};
  return d;
}

}  // namespace ts
