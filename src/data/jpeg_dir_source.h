// The jpeg_dir format: a folder of JPEG files in torchvision's ImageFolder layout, one
// subfolder per class (classes are the sorted subfolder names, labels their positions):
//   ROOT/train/<class>/*.jpg and ROOT/test/<class>/*.jpg (or ROOT/val/<class>/*.jpg), or
//   ROOT/<class>/*.jpg, of which a fixed fraction of the files is held out as the test split:
//     a file is a test file when a hash of "<class>/<file name>" (FNV-1a, no seed) falls below
//     test_fraction, so the two splits never change between runs, seeds or machines.
// Files are listed through the Storage (sorted by name; files not ending in .jpg/.jpeg, any
// case, are ignored) once at open; read() reads one file through the Storage, decodes it with
// libjpeg-turbo to the model's channels (1: grey, 3: RGB) and transforms it (image_transform.h)
// to the model's (C,H,W). The loader's threads do this per sample.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/image_transform.h"
#include "data/sample_source.h"
#include "data/storage.h"

namespace ts {

struct JpegDirOptions {
  std::string root;                 // the folder (ROOT above)
  Shape sample;                     // the model's input (C,H,W), C = 1 or 3
  Normalisation stats;              // per-channel statistics (0, 1 or C entries)
  ImageTransformKind train_transform = ImageTransformKind::random_crop_flip;
  ImageTransformKind test_transform = ImageTransformKind::centre_crop;
  double test_fraction = 0.1;       // ROOT/<class> layout only: the share held out as test, in (0, 1)
  // The classes in label order, for a data set with its own (Fashion-MNIST's as `data convert`
  // names them); empty: the sorted subfolder names. A subfolder not named here is an error.
  std::vector<std::string> class_names;
};

// Opens one split; the source keeps `storage` for its per-sample reads. Throws ConfigError for
// a sample shape that is not (1|3, H, W) or a test_fraction outside (0, 1), RuntimeError naming
// the folder when it is missing, has no class subfolders, no JPEG files in the split, a test
// class the training split lacks, or (classes from the folders) a class without files in the
// split: the splits must hold the same classes. A file that does not decode fails its read().
std::unique_ptr<SampleSource> open_jpeg_dir_source(std::shared_ptr<const Storage> storage,
                                                   const JpegDirOptions& options, Split split);

// The files of one split in sample order: class by class in label order, each class's files
// sorted by name. What a jpeg_dir source reads, and what `data convert --dataset imagefolder`
// writes as records (so both give sample i the same file). Throws RuntimeError as open does.
struct JpegDirListing {
  std::vector<std::string> classes;  // label order: class_names, or the sorted subfolder names
  std::vector<std::string> paths;    // per sample
  std::vector<int32_t> labels;       // per sample
  std::string where;                 // the folder, for messages
};
JpegDirListing list_jpeg_dir_split(const Storage& storage, const std::string& root, Split split, double test_fraction,
                                   const std::vector<std::string>& class_names);

// Whether ROOT/<class>/<file> belongs to the held-out test split of the flat layout.
bool jpeg_dir_holds_out(const std::string& class_name, const std::string& file_name, double test_fraction);

}  // namespace ts
