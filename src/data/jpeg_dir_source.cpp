// JpegDirSource (see jpeg_dir_source.h): the split's files are listed once at open (class by
// class, sorted), then every read() opens, reads, decodes and transforms one file.
#include "data/jpeg_dir_source.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/error.h"
#include "core/strings.h"

namespace ts {
namespace {

constexpr const char* kLayoutHint =
    "dataset.root must be an ImageFolder tree: ROOT/train/<class>/*.jpg with ROOT/test (or ROOT/val)/<class>/*.jpg, "
    "or ROOT/<class>/*.jpg (dataset.test_fraction of the files held out as the test split)";

bool is_jpeg_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  auto ends = [&](const std::string& s) {
    return lower.size() > s.size() && lower.compare(lower.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".jpg") || ends(".jpeg");
}

bool is_directory(const Storage& storage, const std::string& parent, const std::string& name) {
  for (const StorageEntry& e : storage.list(parent))
    if (e.name == name) return e.directory;
  return false;
}

std::vector<std::string> subfolders(const Storage& storage, const std::string& dir) {
  std::vector<std::string> names;
  for (const StorageEntry& e : storage.list(dir))
    if (e.directory && !e.name.empty() && e.name[0] != '.') names.push_back(e.name);
  return names;
}

// Adds the JPEG files of `dir` (one class) that `keep` accepts.
template <class Keep>
void add_class_files(const Storage& storage, const std::string& dir, int32_t label, Keep keep, JpegDirListing& s) {
  for (const StorageEntry& e : storage.list(dir))
    if (!e.directory && is_jpeg_name(e.name) && keep(e.name)) {
      s.paths.push_back(join_storage_path(dir, e.name));
      s.labels.push_back(label);
    }
}

// Classes taken from the folders must each hold files in `s`'s split: a class folder left empty
// in train/ (or missing from test/) would train on one class fewer than it evaluates (or the
// reverse) without a word, the labels still counting it. Data sets with named classes
// (class_names) may lack some in a split. `hint` says what the split's files are.
void require_every_class(const JpegDirListing& s, const std::string& dir, const std::string& hint) {
  std::vector<int64_t> files(s.classes.size(), 0);
  for (int32_t label : s.labels) ++files[static_cast<size_t>(label)];
  for (size_t c = 0; c < s.classes.size(); ++c)
    if (files[c] == 0)
      throw RuntimeError("jpeg_dir " + join_storage_path(dir, s.classes[c]) + ": class '" + s.classes[c] + "' (label " +
                         std::to_string(c) + " of " + std::to_string(s.classes.size()) + ") has no " + hint +
                         ", so the splits do not hold the same classes; add its images, or remove the class folder "
                         "from every split");
}

// ROOT/{train,test|val}/<class>/*.jpg: classes from the training folder, for both splits.
JpegDirListing split_layout_files(const Storage& storage, const std::string& root, Split split,
                              const std::vector<std::string>& class_names) {
  JpegDirListing s;
  const std::string train_dir = join_storage_path(root, "train");
  s.classes = class_names.empty() ? subfolders(storage, train_dir) : class_names;
  if (s.classes.empty())
    throw RuntimeError("jpeg_dir " + train_dir + ": no class subfolders; " + kLayoutHint);
  std::string dir = train_dir;
  if (split == Split::test) {
    const char* name = is_directory(storage, root, "test") ? "test" : is_directory(storage, root, "val") ? "val" : "";
    if (!*name)
      throw RuntimeError("jpeg_dir " + root + ": has train/ but neither test/ nor val/; " + kLayoutHint);
    dir = join_storage_path(root, name);
  }
  s.where = dir;
  for (const std::string& c : subfolders(storage, dir)) {
    const auto at = std::find(s.classes.begin(), s.classes.end(), c);
    if (at == s.classes.end())
      throw RuntimeError("jpeg_dir " + join_storage_path(dir, c) + ": class '" + c + "' is not a class of " +
                         (class_names.empty() ? train_dir + " (the training split defines the classes)"
                                              : "the data set (" + std::to_string(class_names.size()) + " named classes)") +
                         "; remove the folder or fix dataset.root");
    add_class_files(storage, join_storage_path(dir, c), static_cast<int32_t>(at - s.classes.begin()),
                    [](const std::string&) { return true; }, s);
  }
  if (class_names.empty()) require_every_class(s, dir, ".jpg/.jpeg files here");
  return s;
}

// ROOT/<class>/*.jpg: a fixed share of each class's files is the test split.
JpegDirListing flat_layout_files(const Storage& storage, const std::string& root, Split split, double test_fraction,
                             const std::vector<std::string>& class_names) {
  JpegDirListing s;
  s.where = root + (split == Split::train ? " (training files)" : " (held-out test files)");
  s.classes = subfolders(storage, root);
  if (s.classes.empty()) throw RuntimeError("jpeg_dir " + root + ": no class subfolders; " + kLayoutHint);
  for (const std::string& c : s.classes)
    if (!class_names.empty() && std::find(class_names.begin(), class_names.end(), c) == class_names.end())
      throw RuntimeError("jpeg_dir " + join_storage_path(root, c) + ": class '" + c + "' is not a class of the data set (" +
                         std::to_string(class_names.size()) + " named classes); remove the folder or fix dataset.root");
  const std::vector<std::string> present = s.classes;
  if (!class_names.empty()) s.classes = class_names;
  for (const std::string& name : present) {
    const size_t c = static_cast<size_t>(std::find(s.classes.begin(), s.classes.end(), name) - s.classes.begin());
    add_class_files(storage, join_storage_path(root, name), static_cast<int32_t>(c),
                    [&](const std::string& file) {
                      return jpeg_dir_holds_out(name, file, test_fraction) == (split == Split::test);
                    },
                    s);
  }
  // The held-out share of a small class may be empty; its training files may not.
  if (class_names.empty() && split == Split::train)
    require_every_class(s, root, "training files (.jpg/.jpeg files not held out as the test split)");
  return s;
}

// The whole file, once its size and its first bytes say it can be a JPEG: a 3 GB file named
// .jpg (sparse, or a disk image) would otherwise be read whole into memory before the decoder
// looked at it.
std::vector<uint8_t> read_jpeg_file(const RandomAccessFile& file) {
  const int64_t size = file.size();
  const std::string what = "JPEG " + file.path() + " (" + std::to_string(size) + " bytes)";
  if (size > kMaxJpegFileBytes)
    throw RuntimeError(what + ": larger than any image the decoder accepts (the bound is " +
                       std::to_string(kMaxJpegFileBytes) + " bytes, 4 per pixel of " + std::to_string(kMaxJpegPixels) +
                       " pixels); remove the file from the data set or replace it with the image");
  std::vector<uint8_t> bytes(static_cast<size_t>(std::min<int64_t>(size, 3)));
  file.read_at(0, static_cast<int64_t>(bytes.size()), bytes.data());
  if (size < 3 || bytes[0] != 0xFF || bytes[1] != 0xD8 || bytes[2] != 0xFF)
    throw RuntimeError(what + ": not a JPEG (it does not start with the bytes FF D8 FF); remove the file from the "
                       "data set or replace it with the image");
  bytes.resize(static_cast<size_t>(size));
  file.read_at(3, size - 3, bytes.data() + 3);
  return bytes;
}

class JpegDirSource final : public SampleSource {
 public:
  JpegDirSource(std::shared_ptr<const Storage> storage, JpegDirListing files, const Shape& sample,
                ImageTransform transform)
      : storage_(std::move(storage)),
        files_(std::move(files)),
        spec_{sample, static_cast<int64_t>(files_.classes.size()), 0},
        transform_(std::move(transform)) {}

  const SampleSpec& spec() const override { return spec_; }
  int64_t count() const override { return static_cast<int64_t>(files_.paths.size()); }
  std::string describe() const override {
    return "jpeg_dir " + files_.where + ", " + std::to_string(count()) + " JPEGs in " +
           std::to_string(spec_.classes) + " classes -> " + spec_.sample.str() + " (" +
           image_transform_name(transform_.kind()) + ")";
  }

  void read(int64_t index, float* image, int32_t* label, float* targets) const override {
    read_augmented(index, 0, image, label, targets);
  }

  void read_augmented(int64_t index, uint64_t augment_seed, float* image, int32_t* label, float*) const override {
    const std::string& path = files_.paths[static_cast<size_t>(index)];
    const std::vector<uint8_t> bytes = read_jpeg_file(*storage_->open(path));
    const Image8 decoded = decode_jpeg(bytes.data(), bytes.size(), static_cast<int>(spec_.sample[0]), path);
    transform_.apply(decoded, augment_seed, image);
    *label = files_.labels[static_cast<size_t>(index)];
  }

 private:
  std::shared_ptr<const Storage> storage_;
  JpegDirListing files_;
  SampleSpec spec_;
  ImageTransform transform_;
};

void check_options(const JpegDirOptions& o) {
  const Shape& s = o.sample;
  if (s.rank() != 3 || (s[0] != 1 && s[0] != 3) || s[1] < 1 || s[2] < 1 || s[1] > 8192 || s[2] > 8192)
    throw ConfigError("dataset.format jpeg_dir: the model's input " + s.str() +
                      " is not an image (1 or 3 channels, C,H,W); choose a model that takes images");
  if (!(o.test_fraction > 0.0 && o.test_fraction < 1.0))
    throw ConfigError("dataset.test_fraction " + std::to_string(o.test_fraction) +
                      " is outside (0, 1); it is the share of ROOT/<class>/*.jpg files held out as the test split");
}

}  // namespace

bool jpeg_dir_holds_out(const std::string& class_name, const std::string& file_name, double test_fraction) {
  uint64_t h = fnv1a64(class_name + "/" + file_name);
  h ^= h >> 33;  // a finaliser, so that similar names spread over [0, 2^64)
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return static_cast<double>(h >> 11) * 0x1.0p-53 < test_fraction;
}

JpegDirListing list_jpeg_dir_split(const Storage& storage, const std::string& root, Split split, double test_fraction,
                                   const std::vector<std::string>& class_names) {
  if (!storage.exists(root))
    throw RuntimeError("jpeg_dir " + root + ": no such directory on storage '" + storage.name() + "'; " + kLayoutHint);
  JpegDirListing files = is_directory(storage, root, "train")
                             ? split_layout_files(storage, root, split, class_names)
                             : flat_layout_files(storage, root, split, test_fraction, class_names);
  if (files.paths.empty())
    throw RuntimeError("jpeg_dir " + files.where + ": no .jpg/.jpeg files in its class subfolders; " + kLayoutHint);
  return files;
}

std::unique_ptr<SampleSource> open_jpeg_dir_source(std::shared_ptr<const Storage> storage,
                                                   const JpegDirOptions& options, Split split) {
  check_options(options);
  JpegDirListing files = list_jpeg_dir_split(*storage, options.root, split, options.test_fraction, options.class_names);
  ImageTransform transform(split == Split::train ? options.train_transform : options.test_transform,
                           static_cast<int>(options.sample[1]), static_cast<int>(options.sample[2]), options.stats);
  return std::make_unique<JpegDirSource>(std::move(storage), std::move(files), options.sample, std::move(transform));
}

}  // namespace ts
