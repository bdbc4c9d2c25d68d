// IdxSource (see idx_source.h): headers parsed and checked once at open (a .gz file's header
// before the file is inflated), then every read() fetches one image and one label byte from the
// files through the storage.
#include "data/idx_source.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/error.h"
#include "data/gzip_file.h"

namespace ts {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
constexpr int64_t kImagesHeader = 16;  // magic + 3 dims, big-endian uint32 each
constexpr int64_t kLabelsHeader = 8;   // magic + 1 dim
constexpr int64_t kClasses = 10;
constexpr const char* kInstallHint =
    "install dataset-fashion-mnist (scripts/setup.sh) or set dataset.root to a directory "
    "holding the IDX files";
constexpr const char* kCorruptHint =
    "the file is damaged or not an IDX file; reinstall the data set (scripts/setup.sh) or set "
    "dataset.root to a directory holding intact IDX files";

RuntimeError corrupt(const std::string& path, const std::string& what) {
  return RuntimeError("data file " + path + ": " + what + "; " + kCorruptHint);
}

// "<root>/<stem>.gz" if present, else "<root>/<stem>"; throws naming both when neither exists.
std::string locate(const Storage& storage, const std::string& root, const std::string& stem) {
  const std::string gz = join_storage_path(root, stem + ".gz");
  const std::string raw = join_storage_path(root, stem);
  if (storage.exists(gz)) return gz;
  if (storage.exists(raw)) return raw;
  const std::string why = storage.exists(root) ? "" : " (directory " + root + " does not exist)";
  throw RuntimeError("data file " + gz + " (or " + raw + ") not found" + why + "; " + kInstallHint);
}

// The first `bytes` bytes of the file (of its inflated bytes for a .gz file), fewer if it is
// shorter: enough for the header, without inflating the rest.
std::vector<uint8_t> file_head(const RandomAccessFile& f, int64_t bytes) {
  if (is_gzip_path(f.path())) return read_gzip_head(f, bytes);
  std::vector<uint8_t> head(static_cast<size_t>(std::min(bytes, f.size())));
  f.read_at(0, static_cast<int64_t>(head.size()), head.data());
  return head;
}

// Big-endian uint32 words [0, n) of the file's header; `kind` names the expected file kind.
std::vector<int64_t> read_header(const RandomAccessFile& f, int n, uint32_t magic, const char* kind) {
  const std::vector<uint8_t> b = file_head(f, 4 * n);
  if (static_cast<int64_t>(b.size()) < 4 * n)
    throw corrupt(f.path(), "truncated: " + std::to_string(b.size()) + " bytes" +
                                (is_gzip_path(f.path()) ? " inflated" : "") + ", shorter than the " +
                                std::to_string(4 * n) + "-byte header of an IDX " + kind);
  std::vector<int64_t> words(static_cast<size_t>(n));
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = int64_t{b[4 * i]} << 24 | int64_t{b[4 * i + 1]} << 16 | int64_t{b[4 * i + 2]} << 8 | b[4 * i + 3];
  if (words[0] != magic) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%08x, expected 0x%08x", static_cast<unsigned>(words[0]), magic);
    throw corrupt(f.path(), std::string("wrong magic number ") + buf + " (an IDX " + kind + ")");
  }
  return words;
}

// The bytes the source reads, which must be exactly header + payload: the raw file as it is, or
// a .gz file inflated into memory once its header has said how many bytes to expect. A header
// claiming more than the compressed size can hold fails before anything is inflated, and
// inflating stops past the expected size, so a damaged count never allocates more than the
// data that is really there.
std::unique_ptr<RandomAccessFile> file_contents(std::unique_ptr<RandomAccessFile> f, int64_t header, int64_t payload,
                                                const std::string& what) {
  const int64_t expected = header + payload;
  if (is_gzip_path(f->path())) {
    const int64_t most = gzip_max_inflated_bytes(f->size());
    if (expected > most)
      throw corrupt(f->path(), "truncated: the header describes " + what + " (" + std::to_string(expected) +
                                   " bytes with the header), more than its " + std::to_string(f->size()) +
                                   " compressed bytes can inflate to (at most " + std::to_string(most) + ")");
    f = inflate_gzip(*f, expected);
  }
  if (f->size() < expected)
    throw corrupt(f->path(), "truncated: the header describes " + what + " (" + std::to_string(expected) +
                                 " bytes with the header), the file holds only " + std::to_string(f->size()));
  if (f->size() > expected)
    throw corrupt(f->path(), "unexpected bytes after the end of the data its header describes (" + what + ", " +
                                 std::to_string(expected) + " bytes; the file holds " + std::to_string(f->size()) + ")");
  return f;
}

struct IdxFiles {
  std::unique_ptr<RandomAccessFile> images, labels;
  int64_t count = 0, rows = 0, cols = 0;  // images of rows x cols
};

// Checks both files' headers, sizes and labels (every label once, 1 byte per sample, so a bad
// file fails before training starts); returns the files' contents and the images' layout.
IdxFiles check_idx_files(std::unique_ptr<RandomAccessFile> images, std::unique_ptr<RandomAccessFile> labels) {
  const auto dims = read_header(*images, 4, kImagesMagic, "image file, idx3-ubyte");
  const int64_t count = dims[1], rows = dims[2], cols = dims[3];
  const std::string images_what =
      std::to_string(count) + " images of " + std::to_string(rows) + "x" + std::to_string(cols);
  if (count <= 0 || rows <= 0 || cols <= 0 || rows > 4096 || cols > 4096)
    throw corrupt(images->path(), "implausible dimensions (" + images_what + ")");
  images = file_contents(std::move(images), kImagesHeader, count * rows * cols, images_what);
  const int64_t label_count = read_header(*labels, 2, kLabelsMagic, "label file, idx1-ubyte")[1];
  if (label_count <= 0) throw corrupt(labels->path(), "header says it holds no labels");
  labels = file_contents(std::move(labels), kLabelsHeader, label_count, std::to_string(label_count) + " labels");
  if (label_count != count)
    throw RuntimeError("data files " + images->path() + " and " + labels->path() + " disagree: " +
                       std::to_string(count) + " images but " + std::to_string(label_count) +
                       " labels; both files must come from the same split of the same data set "
                       "(reinstall it with scripts/setup.sh or fix dataset.root)");
  std::vector<uint8_t> all(static_cast<size_t>(count));
  labels->read_at(kLabelsHeader, count, all.data());
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i] >= kClasses)
      throw corrupt(labels->path(), "label " + std::to_string(all[i]) + " at index " + std::to_string(i) +
                                        " is out of range 0.." + std::to_string(kClasses - 1));
  return {std::move(images), std::move(labels), count, rows, cols};
}

class IdxSource final : public SampleSource {
 public:
  IdxSource(IdxFiles files, const std::string& name, const Normalisation& stats)
      : images_(std::move(files.images)),
        labels_(std::move(files.labels)),
        name_(name),
        spec_{Shape{1, files.rows, files.cols}, kClasses, 0},
        count_(files.count),
        plane_(files.rows * files.cols),
        normaliser_(stats, 1, plane_) {}

  const SampleSpec& spec() const override { return spec_; }
  int64_t count() const override { return count_; }
  std::string describe() const override {
    return "idx " + name_ + " " + images_->path() + (is_gzip_path(images_->path()) ? " (inflated at open)" : "") +
           ", " + std::to_string(count_) + " samples of " + spec_.sample.str();
  }

  void read(int64_t index, float* image, int32_t* label, float*) const override {
    std::vector<uint8_t> pixels(static_cast<size_t>(plane_));  // (1, rows, cols)
    read_pixels(index, pixels.data(), label);
    normaliser_.apply(pixels.data(), image);
  }

  void read_pixels(int64_t index, uint8_t* pixels, int32_t* label) const override {
    images_->read_at(kImagesHeader + index * plane_, plane_, pixels);
    uint8_t l = 0;
    labels_->read_at(kLabelsHeader + index, 1, &l);
    if (l >= kClasses)  // checked at open: the file changed since
      throw corrupt(labels_->path(), "label " + std::to_string(l) + " at index " + std::to_string(index) +
                                         " is out of range 0..9");
    *label = l;
  }

 private:
  std::unique_ptr<RandomAccessFile> images_, labels_;
  std::string name_;
  SampleSpec spec_;
  int64_t count_, plane_;
  PixelNormaliser normaliser_;
};

}  // namespace

std::unique_ptr<SampleSource> open_idx_source(const Storage& storage, const std::string& root, Split split,
                                              const std::string& name, const Normalisation& stats) {
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const std::string images_path = locate(storage, root, prefix + "-images-idx3-ubyte");
  const std::string labels_path = locate(storage, root, prefix + "-labels-idx1-ubyte");
  return std::make_unique<IdxSource>(check_idx_files(storage.open(images_path), storage.open(labels_path)), name,
                                     stats);
}

}  // namespace ts
