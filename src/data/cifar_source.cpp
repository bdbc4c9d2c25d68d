// Cifar10Source (see cifar_source.h): the batch files stay on storage; sample i is record
// i - first[f] of the file f that holds it.
#include "data/cifar_source.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace ts {
namespace {

constexpr int64_t kImageBytes = 3 * 32 * 32;
constexpr int64_t kRecordBytes = 1 + kImageBytes;
constexpr int64_t kClasses = 10;
constexpr int64_t kRecordsPerCheck = 341;  // ~1 MiB per read while the labels are checked at open
constexpr const char* kInstallHint =
    "download the CIFAR-10 binary version (cifar-10-binary.tar.gz) and set dataset.root to the "
    "directory holding data_batch_1.bin .. data_batch_5.bin and test_batch.bin";

RuntimeError bad_label(const std::string& path, int label, int64_t record) {
  return RuntimeError("data file " + path + ": label " + std::to_string(label) + " of record " +
                      std::to_string(record) + " (byte offset " + std::to_string(record * kRecordBytes) +
                      ") is out of range 0..9; the file is not a CIFAR-10 batch (CIFAR-100 has 2 "
                      "label bytes); " + kInstallHint);
}

// Opens one batch file and checks its size and every label.
std::unique_ptr<RandomAccessFile> open_batch(const Storage& storage, const std::string& root,
                                             const std::string& path) {
  if (!storage.exists(path))
    throw RuntimeError("data file " + path + " not found" +
                       (storage.exists(root) ? std::string() : " (directory " + root + " does not exist)") +
                       "; " + kInstallHint);
  auto file = storage.open(path);
  const int64_t size = file->size();
  if (size <= 0 || size % kRecordBytes != 0)
    throw RuntimeError("data file " + path + ": size " + std::to_string(size) +
                       " bytes is not a positive multiple of the CIFAR-10 record size " +
                       std::to_string(kRecordBytes) +
                       " (1 label byte + 3072 pixel bytes); the file is truncated or not a "
                       "CIFAR-10 binary batch; " + kInstallHint);
  const int64_t records = size / kRecordBytes;
  std::vector<uint8_t> chunk(static_cast<size_t>(kRecordsPerCheck * kRecordBytes));
  for (int64_t first = 0; first < records; first += kRecordsPerCheck) {
    const int64_t n = std::min(kRecordsPerCheck, records - first);
    file->read_at(first * kRecordBytes, n * kRecordBytes, chunk.data());
    for (int64_t r = 0; r < n; ++r)
      if (chunk[static_cast<size_t>(r * kRecordBytes)] >= kClasses)
        throw bad_label(path, chunk[static_cast<size_t>(r * kRecordBytes)], first + r);
  }
  return file;
}

class Cifar10Source final : public SampleSource {
 public:
  Cifar10Source(std::vector<std::unique_ptr<RandomAccessFile>> files, const Normalisation& stats)
      : files_(std::move(files)), spec_{Shape{3, 32, 32}, kClasses, 0}, normaliser_(stats, 3, 32 * 32) {
    for (const auto& f : files_) {
      first_.push_back(count_);
      count_ += f->size() / kRecordBytes;
    }
  }

  const SampleSpec& spec() const override { return spec_; }
  int64_t count() const override { return count_; }
  std::string describe() const override {
    return "cifar_bin " + files_.front()->path() + (files_.size() > 1 ? " (+" + std::to_string(files_.size() - 1) + " files)" : "") +
           ", " + std::to_string(count_) + " samples of " + spec_.sample.str();
  }

  void read(int64_t index, float* image, int32_t* label, float*) const override {
    std::vector<uint8_t> pixels(static_cast<size_t>(kImageBytes));  // (3, 32, 32)
    read_pixels(index, pixels.data(), label);
    normaliser_.apply(pixels.data(), image);
  }

  void read_pixels(int64_t index, uint8_t* pixels, int32_t* label) const override {
    // The last file whose first sample is <= index holds it.
    const size_t f = static_cast<size_t>(std::upper_bound(first_.begin(), first_.end(), index) - first_.begin()) - 1;
    const int64_t record = index - first_[f];
    std::vector<uint8_t> bytes(static_cast<size_t>(kRecordBytes));  // label, then (3, 32, 32)
    files_[f]->read_at(record * kRecordBytes, kRecordBytes, bytes.data());
    if (bytes[0] >= kClasses) throw bad_label(files_[f]->path(), bytes[0], record);  // changed since open
    *label = bytes[0];
    std::copy(bytes.begin() + 1, bytes.end(), pixels);
  }

 private:
  std::vector<std::unique_ptr<RandomAccessFile>> files_;
  std::vector<int64_t> first_;  // first sample index of each file
  int64_t count_ = 0;
  SampleSpec spec_;
  PixelNormaliser normaliser_;
};

}  // namespace

std::unique_ptr<SampleSource> open_cifar10_source(const Storage& storage, const std::string& root, Split split,
                                                  const Normalisation& stats) {
  std::vector<std::string> names;
  if (split == Split::train)
    for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  else
    names.push_back("test_batch.bin");
  // The batches sit in `root` itself or in the tarball's cifar-10-batches-bin/ inside it.
  std::string dir = root;
  const std::string nested = join_storage_path(root, "cifar-10-batches-bin");
  if (!storage.exists(join_storage_path(root, names.front())) &&
      storage.exists(join_storage_path(nested, names.front())))
    dir = nested;
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  for (const auto& name : names) files.push_back(open_batch(storage, root, join_storage_path(dir, name)));
  return std::make_unique<Cifar10Source>(std::move(files), stats);
}

}  // namespace ts
