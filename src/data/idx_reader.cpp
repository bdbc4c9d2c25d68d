// Reader for MNIST-style IDX files (Fashion-MNIST, MNIST), raw or gzip-compressed.
// zlib's gzread reads both transparently, so one code path handles `.gz` and raw files.
//   images: magic 0x00000803, dims (count, rows, cols), then count*rows*cols bytes
//   labels: magic 0x00000801, dims (count), then count bytes in 0..9
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/dataset.h"

namespace ts {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
constexpr int64_t kClasses = 10;
constexpr const char* kInstallHint =
    "install dataset-fashion-mnist (scripts/setup.sh) or set dataset.root to a directory "
    "holding the IDX files";
constexpr const char* kCorruptHint =
    "the file is damaged or not an IDX file; reinstall the data set (scripts/setup.sh) or set "
    "dataset.root to a directory holding intact IDX files";

// An open gzip (or raw) file that closes itself; every read failure names the file.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : path_(path) {
    file_ = gzopen(path.c_str(), "rb");
    if (!file_)
      throw RuntimeError("data file " + path + ": cannot open it (" + std::strerror(errno) +
                         "); " + kInstallHint);
    gzbuffer(file_, 1 << 20);
  }
  ~GzFile() {
    if (file_) gzclose(file_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads exactly `bytes` bytes or throws naming what was being read.
  void read_exact(void* dst, int64_t bytes, const std::string& what) {
    auto* out = static_cast<unsigned char*>(dst);
    int64_t done = 0;
    while (done < bytes) {
      int64_t chunk = std::min<int64_t>(bytes - done, int64_t{1} << 30);
      int got = gzread(file_, out + done, static_cast<unsigned>(chunk));
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(file_, &errnum);
        throw RuntimeError("data file " + path_ + ": read error while reading " + what + " (" +
                           (msg ? msg : "unknown zlib error") + "); " + kCorruptHint);
      }
      if (got == 0) {
        throw RuntimeError("data file " + path_ + ": truncated: expected " +
                           std::to_string(bytes) + " bytes of " + what + ", found only " +
                           std::to_string(done) + "; " + kCorruptHint);
      }
      done += got;
    }
  }

  uint32_t read_be32(const std::string& what) {
    unsigned char b[4];
    read_exact(b, 4, what);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  }

  // Throws if any bytes follow the payload (a header that understates the size).
  void expect_end() {
    unsigned char extra[1];
    int got = gzread(file_, extra, 1);
    if (got > 0)
      throw RuntimeError("data file " + path_ +
                         ": unexpected bytes after the end of the data its header describes; " +
                         kCorruptHint);
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

// "<root>/<stem>.gz" if present, else "<root>/<stem>"; throws naming both when neither exists.
std::string locate(const std::string& root, const std::string& stem) {
  namespace fs = std::filesystem;
  fs::path gz = fs::path(root) / (stem + ".gz");
  fs::path raw = fs::path(root) / stem;
  std::error_code ec;
  if (fs::is_regular_file(gz, ec)) return gz.string();
  if (fs::is_regular_file(raw, ec)) return raw.string();
  std::string why = fs::is_directory(root, ec) ? "" : " (directory " + root + " does not exist)";
  throw RuntimeError("data file " + gz.string() + " (or " + raw.string() + ") not found" + why +
                     "; " + kInstallHint);
}

// images (count, rows, cols) as uint8.
struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;
};

IdxImages read_images(const std::string& path) {
  GzFile f(path);
  uint32_t magic = f.read_be32("the header magic");
  if (magic != kImagesMagic) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%08x, expected 0x%08x", magic, kImagesMagic);
    throw RuntimeError("data file " + path + ": wrong magic number " + buf +
                       " (an IDX image file, idx3-ubyte); " + kCorruptHint);
  }
  IdxImages img;
  img.count = f.read_be32("the image count");
  img.rows = f.read_be32("the row count");
  img.cols = f.read_be32("the column count");
  if (img.count <= 0 || img.rows <= 0 || img.cols <= 0 || img.rows > 4096 || img.cols > 4096)
    throw RuntimeError("data file " + path + ": implausible dimensions (" +
                       std::to_string(img.count) + " images of " + std::to_string(img.rows) +
                       "x" + std::to_string(img.cols) + "); " + kCorruptHint);
  img.pixels.resize(static_cast<size_t>(img.count * img.rows * img.cols));
  f.read_exact(img.pixels.data(), static_cast<int64_t>(img.pixels.size()), "pixels");
  f.expect_end();
  return img;
}

std::vector<int32_t> read_labels(const std::string& path) {
  GzFile f(path);
  uint32_t magic = f.read_be32("the header magic");
  if (magic != kLabelsMagic) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%08x, expected 0x%08x", magic, kLabelsMagic);
    throw RuntimeError("data file " + path + ": wrong magic number " + buf +
                       " (an IDX label file, idx1-ubyte); " + kCorruptHint);
  }
  int64_t count = f.read_be32("the label count");
  if (count <= 0)
    throw RuntimeError("data file " + path + ": header says it holds no labels; " + kCorruptHint);
  std::vector<uint8_t> raw(static_cast<size_t>(count));
  f.read_exact(raw.data(), count, "labels");
  f.expect_end();
  std::vector<int32_t> labels(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] >= kClasses)
      throw RuntimeError("data file " + path + ": label " + std::to_string(raw[i]) +
                         " at index " + std::to_string(i) + " is out of range 0.." +
                         std::to_string(kClasses - 1) + "; " + kCorruptHint);
    labels[i] = raw[i];
  }
  return labels;
}

}  // namespace

Dataset read_idx_dataset(const std::string& root, Split split, const std::string& name) {
  if (name != "fashion_mnist" && name != "mnist")
    throw ConfigError("dataset.name '" + name + "' is not an IDX data set this build knows; " +
                      "accepted with format idx: fashion_mnist, mnist");
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const std::string images_path = locate(root, prefix + "-images-idx3-ubyte");
  const std::string labels_path = locate(root, prefix + "-labels-idx1-ubyte");

  IdxImages img = read_images(images_path);
  std::vector<int32_t> labels = read_labels(labels_path);
  if (static_cast<int64_t>(labels.size()) != img.count)
    throw RuntimeError("data files " + images_path + " and " + labels_path + " disagree: " +
                       std::to_string(img.count) + " images but " +
                       std::to_string(labels.size()) +
                       " labels; both files must come from the same split of the same data set "
                       "(reinstall it with scripts/setup.sh or fix dataset.root)");

  Dataset d;
  d.name = name;
  d.sample = Shape{1, img.rows, img.cols};
  d.count = img.count;
  d.classes = kClasses;
  d.pixels = std::move(img.pixels);
  d.labels = std::move(labels);
  // Training-set statistics of the published data sets (the test split is normalised with
  // the training statistics, as usual).
  if (name == "fashion_mnist") {
    d.mean = {0.2860f};
    d.stddev = {0.3530f};
  } else if (name == "mnist") {
    d.mean = {0.1307f};
    d.stddev = {0.3081f};
  }
  return d;
}

}  // namespace ts
