// Data-set conversion (see convert.h): the source's splits are read sample by sample through
// read_pixels and handed to the format's writer.
#include "data/convert.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "data/datasets.h"
#include "data/hdf5_writer.h"
#include "data/jpeg_codec.h"
#include "data/jpeg_dir_source.h"
#include "data/records_source.h"
#include "data/records_writer.h"
#include "data/storage.h"

namespace ts {
namespace {

constexpr int kDefaultJpegQuality = 90;

// "00042.jpg" padded to the digits of `count`, so that names sort in sample order.
std::string jpeg_name(int64_t index, int64_t count) {
  const size_t digits = std::max<size_t>(5, std::to_string(count).size());
  std::string name = std::to_string(index);
  if (name.size() < digits) name.insert(0, digits - name.size(), '0');
  return name + ".jpg";
}

// ROOT/<split>/<class_name>/<index>.jpg, one JPEG of (H,W,C) per sample. The tree is written as
// <split>.partial and renamed when complete (one rename instead of an fsync per image).
void write_jpeg_dir_split(const std::string& final_dir, const SampleSource& source, int64_t count,
                          const std::vector<std::string>& class_names, int quality) {
  const Shape chw = source.spec().sample;
  if (chw[0] != 1 && chw[0] != 3)
    throw ConfigError("--format jpeg_dir needs 1- or 3-channel images, the data set has " + chw.str());
  const std::string dir = final_dir + ".partial";
  std::filesystem::remove_all(dir);
  for (const std::string& name : class_names) std::filesystem::create_directories(dir + "/" + name);
  std::vector<uint8_t> pixels(static_cast<size_t>(chw.numel()));
  for (int64_t i = 0; i < count; ++i) {
    int32_t label = 0;
    source.read_pixels(i, pixels.data(), &label);
    const std::vector<uint8_t> jpeg = encode_jpeg(image_from_planes(pixels.data(), chw[0], chw[1], chw[2]), quality);
    if (label < 0 || label >= static_cast<int32_t>(class_names.size()))
      throw RuntimeError(source.describe() + ": label " + std::to_string(label) + " of sample " + std::to_string(i) +
                         " has no class name");
    write_whole_file(dir + "/" + class_names[static_cast<size_t>(label)] + "/" + jpeg_name(i, count),
                     std::string_view(reinterpret_cast<const char*>(jpeg.data()), jpeg.size()));
  }
  std::filesystem::remove_all(final_dir);
  std::filesystem::rename(dir, final_dir);
}

void check_options(const ConvertOptions& o) {
  const std::vector<std::string> formats = {"records", "hdf5", "jpeg_dir"};
  if (std::find(formats.begin(), formats.end(), o.format) == formats.end())
    throw ConfigError("--format '" + o.format + "' is not one convert writes; accepted: records, hdf5, jpeg_dir");
  if (o.from.empty() || o.out.empty()) throw ConfigError("--from DIR and --out DIR are required");
  if (!(o.test_fraction > 0.0 && o.test_fraction < 1.0))
    throw ConfigError("--test-fraction " + std::to_string(o.test_fraction) + " is outside (0, 1); it is the share of "
                      "ROOT/<class>/*.jpg files held out as the test split, as dataset.test_fraction");
  if (o.dataset == "imagefolder") {
    if (o.format != "records")
      throw ConfigError("--dataset imagefolder converts to --format records only (its JPEG files kept byte for byte; "
                        "images of many sizes have no hdf5 array, and the folder already is a jpeg_dir)");
    if (o.jpeg_quality != 0 || (!o.from_format.empty() && o.from_format != "jpeg_dir"))
      throw ConfigError("--dataset imagefolder reads a jpeg_dir tree and keeps each JPEG file as it is: leave "
                        "--jpeg-quality and --from-format out");
    return;
  }
  if (dataset_class_names(o.dataset).empty())
    throw ConfigError("--dataset " + o.dataset + " is generated, not stored: there is nothing to convert; "
                      "accepted: fashion_mnist, mnist, cifar10, imagefolder");
  if (o.jpeg_quality < 0 || o.jpeg_quality > 100) throw ConfigError("--jpeg-quality must be in [1, 100]");
  if (o.limit < 0) throw ConfigError("--limit must be >= 0 (0: every sample)");
}

// An ImageFolder tree as records: each split's files in the jpeg_dir source's sample order,
// each JPEG kept byte for byte in its payload, and the class names in classes.txt.
std::vector<ConvertedSplit> convert_image_folder(const ConvertOptions& o) {
  const auto storage = make_storage({"local", ""});
  std::filesystem::create_directories(o.out);
  std::vector<ConvertedSplit> done;
  std::vector<std::string> classes;
  for (Split split : {Split::train, Split::test}) {
    const JpegDirListing files = list_jpeg_dir_split(*storage, o.from, split, o.test_fraction, classes);
    if (classes.empty()) classes = files.classes;  // the training split's classes label both splits
    const int64_t count = static_cast<int64_t>(files.paths.size());
    ConvertedSplit c{split_file_stem(split), o.limit > 0 ? std::min(o.limit, count) : count, {}};
    c.files = write_record_payloads(o.out, split, c.samples, o.shards, [&](int64_t i) {
      const std::string& path = files.paths[static_cast<size_t>(i)];
      const std::string bytes = read_text_file(path);
      return encode_jpeg_file_payload(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                      files.labels[static_cast<size_t>(i)], path);
    });
    done.push_back(c);
  }
  std::string names;
  for (const std::string& name : classes) names += name + "\n";
  const std::string class_file = join_storage_path(o.out, kRecordsClassFile);
  write_file_atomically(class_file, names);
  done.back().files.push_back(class_file);
  return done;
}

std::vector<ConvertedSplit> convert_splits(const ConvertOptions& o) {
  DataOptions data;
  data.name = o.dataset;
  data.format = o.from_format;
  data.root = o.from;
  std::filesystem::create_directories(o.out);
  const std::vector<std::string> class_names = dataset_class_names(o.dataset);
  const int quality = o.jpeg_quality > 0 ? o.jpeg_quality : kDefaultJpegQuality;
  std::vector<ConvertedSplit> done;
  for (Split split : {Split::train, Split::test}) {
    const auto source = open_split(data, split);
    ConvertedSplit c{split_file_stem(split), o.limit > 0 ? std::min(o.limit, source->count()) : source->count(), {}};
    if (o.format == "records") {
      const PayloadEncoding encoding = o.jpeg_quality > 0 ? PayloadEncoding::jpeg : PayloadEncoding::raw;
      c.files = write_records_split(o.out, split, *source, c.samples,
                                    {.shards = o.shards, .encoding = encoding, .jpeg_quality = quality});
    } else if (o.format == "hdf5") {
      c.files.push_back(join_storage_path(o.out, c.split + ".h5"));
      write_hdf5_split(c.files.back(), *source, c.samples, {.compression = o.compression});
    } else {
      c.files.push_back(join_storage_path(o.out, c.split));
      write_jpeg_dir_split(c.files.back(), *source, c.samples, class_names, quality);
    }
    done.push_back(c);
  }
  return done;
}

}  // namespace

std::vector<ConvertedSplit> convert_dataset(const ConvertOptions& o) {
  check_options(o);
  try {
    return o.dataset == "imagefolder" ? convert_image_folder(o) : convert_splits(o);
  } catch (const std::filesystem::filesystem_error& e) {  // a directory that cannot be made or renamed
    throw RuntimeError(std::string("data convert: ") + e.what() + " (--out " + o.out + ")");
  }
}

}  // namespace ts
