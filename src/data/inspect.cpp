// `trainscale data inspect` (see convert.h): every record of a records shard is walked and
// checked (frame CRCs, payload, index), every sample of an hdf5 file and every image of a
// jpeg_dir tree read, and every file's SHA-256 computed.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "data/convert.h"
#include "data/hdf5_source.h"
#include "data/jpeg_codec.h"
#include "data/records_format.h"
#include "data/records_source.h"
#include "data/storage.h"

namespace ts {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kAnyLabel = int64_t{1} << 30;  // inspect does not know the data set: any label >= 0

void add(InspectReport& r, const std::string& key, const std::string& value) { r.facts.emplace_back(key, value); }

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RuntimeError("inspect: cannot open " + path);
  Sha256 sha;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    sha.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  return sha.finish_hex();
}

void add_file(InspectReport& r, const std::string& path) {
  add(r, "file " + path, std::to_string(fs::file_size(path)) + " bytes, sha256 " + file_sha256(path));
}

// Label statistics of one split: "labels 0..9 (10 distinct)".
std::string label_text(const std::set<int32_t>& labels) {
  if (labels.empty()) return "no labels";
  return "labels " + std::to_string(*labels.begin()) + ".." + std::to_string(*labels.rbegin()) + " (" +
         std::to_string(labels.size()) + " distinct)";
}

// The distinct "(C,H,W) encoding" of a split: listed when a few, else counted with their ranges
// (an ImageFolder's JPEGs keep their sizes).
std::string shapes_text(const std::set<std::string>& shapes) {
  if (shapes.size() <= 4) return join({shapes.begin(), shapes.end()});
  std::set<std::string> encodings;
  std::set<int64_t> sides[3];
  for (const std::string& s : shapes) {  // "(C,H,W) jpeg"
    long long c = 0, h = 0, w = 0;
    char encoding[16] = {};
    if (std::sscanf(s.c_str(), "(%lld,%lld,%lld) %15s", &c, &h, &w, encoding) != 4) continue;
    sides[0].insert(c), sides[1].insert(h), sides[2].insert(w);
    encodings.insert(encoding);
  }
  auto range = [](const std::set<int64_t>& v) {
    return v.empty() ? std::string("?")
                     : std::to_string(*v.begin()) + (v.size() > 1 ? ".." + std::to_string(*v.rbegin()) : "");
  };
  return std::to_string(shapes.size()) + " sizes (C " + range(sides[0]) + ", H " + range(sides[1]) + ", W " +
         range(sides[2]) + ") " + join({encodings.begin(), encodings.end()}, "+");
}

// Walks one shard frame by frame (each frame and payload checked, JPEGs decoded) and compares
// its index, if any, with the offsets found. Returns the records; adds shapes and labels.
int64_t walk_shard(const std::string& path, std::set<int32_t>& labels, std::set<std::string>& shapes) {
  auto storage = make_storage({"local", ""});
  auto f = storage->open(path);
  const std::vector<int64_t> offsets = scan_record_offsets(*f);  // the frame headers: truncation named
  std::vector<uint8_t> frame, pixels;
  for (size_t k = 0; k < offsets.size(); ++k) {
    const std::string where = record_where(path, static_cast<int64_t>(k));
    frame.resize(static_cast<size_t>((k + 1 < offsets.size() ? offsets[k + 1] : f->size()) - offsets[k]));
    f->read_at(offsets[k], static_cast<int64_t>(frame.size()), frame.data());
    check_frame(frame.data(), static_cast<int64_t>(frame.size()), where);
    const int64_t length = static_cast<int64_t>(frame.size()) - kFrameOverhead;
    const PayloadInfo info = peek_sample_payload(frame.data() + kFrameHeader, length, where);
    pixels.resize(static_cast<size_t>(info.chw.numel()));
    int32_t label = 0;
    decode_sample_payload(frame.data() + kFrameHeader, length, info.chw, pixels.data(), &label, where);
    labels.insert(label);
    shapes.insert(info.chw.str() + (info.encoding == PayloadEncoding::jpeg ? " jpeg" : " raw"));
  }
  const std::string index = record_index_path(path);
  if (fs::exists(index)) {
    std::ifstream in(index, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<int64_t> indexed = parse_record_index(bytes, index);
    if (indexed != offsets) {
      size_t k = 0;
      while (k < indexed.size() && k < offsets.size() && indexed[k] == offsets[k]) ++k;
      throw RuntimeError("record index " + index + " disagrees with its shard " + path + " at record " + std::to_string(k) +
                         " (index: " + std::to_string(indexed.size()) + " records, shard: " + std::to_string(offsets.size()) +
                         "); convert the data set again, or delete the .idx file");
    }
  }
  return static_cast<int64_t>(offsets.size());
}

void inspect_records(InspectReport& r, const std::vector<std::string>& shards) {
  add(r, "format", "records");
  std::map<std::string, std::vector<std::string>> by_split;  // "train" -> its shards
  for (const std::string& s : shards) by_split[fs::path(s).filename().string().substr(0, fs::path(s).filename().string().find('-'))].push_back(s);
  for (const auto& [split, paths] : by_split) {
    std::set<int32_t> labels;
    std::set<std::string> shapes;
    int64_t samples = 0;
    for (const std::string& p : paths) samples += walk_shard(p, labels, shapes);
    const std::string shape_text = shapes_text(shapes);
    add(r, "split " + split, std::to_string(samples) + " samples in " + std::to_string(paths.size()) + " shards, shape " +
                                 shape_text + ", " + label_text(labels));
    for (const std::string& p : paths) {
      add_file(r, p);
      if (fs::exists(record_index_path(p))) add_file(r, record_index_path(p));
    }
  }
  const fs::path class_file = fs::path(shards.front()).parent_path() / kRecordsClassFile;
  if (fs::exists(class_file)) {  // records of an ImageFolder
    const auto storage = make_storage({"local", ""});
    const std::vector<std::string> names = read_records_class_names(*storage, class_file.parent_path().string());
    const std::vector<std::string> shown(names.begin(), names.size() > 10 ? names.begin() + 10 : names.end());
    add(r, "classes", std::to_string(names.size()) + " (" + join(shown) + (names.size() > 10 ? ", ..." : "") + ")");
    add_file(r, class_file.string());
  }
}

// Every chunk of every file is read (HDF5 verifies each one's Fletcher-32 checksum as it reads
// it, and read_pixels names the dataset, samples and chunk of one that fails). Files without
// checksums are named, so that "ok" never means "not checked". Returns those files.
std::vector<std::string> inspect_hdf5(InspectReport& r, const std::vector<std::string>& files) {
  add(r, "format", "hdf5");
  std::vector<std::string> unchecked;
  for (const std::string& path : files) {
    const bool checksummed = hdf5_file_has_checksums(path);
    if (!checksummed) unchecked.push_back(path);
    auto source = open_hdf5_file(path, fs::path(path).stem().string(), kAnyLabel, {});
    std::vector<uint8_t> pixels(static_cast<size_t>(source->spec().sample.numel()));
    std::set<int32_t> labels;
    for (int64_t i = 0; i < source->count(); ++i) {
      int32_t label = 0;
      source->read_pixels(i, pixels.data(), &label);
      labels.insert(label);
    }
    add(r, "split " + fs::path(path).stem().string(), source->describe() + ", " + label_text(labels));
    add(r, "checksums " + path, checksummed ? "Fletcher-32 on every chunk of /images and /labels, all verified"
                                            : "none: a changed byte inside the data cannot be found");
    add_file(r, path);
  }
  return unchecked;
}

// ROOT/<split>/<class>/*.jpg: images per split and class, each decoded.
void inspect_jpeg_dir(InspectReport& r, const std::string& root) {
  add(r, "format", "jpeg_dir");
  std::vector<fs::path> splits;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory()) splits.push_back(e.path());
  std::sort(splits.begin(), splits.end());
  for (const fs::path& split : splits) {
    Sha256 digest;  // over (relative name, bytes) of every image in name order
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(split))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::set<std::string> class_dirs;
    for (const fs::path& f : files) {
      std::ifstream in(f, std::ios::binary);
      const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      decode_jpeg(bytes.data(), bytes.size(), 3, f.string());
      digest.update(fs::relative(f, root).string());
      digest.update(bytes.data(), bytes.size());
      class_dirs.insert(f.parent_path().string());
    }
    add(r, "split " + split.filename().string(), std::to_string(files.size()) + " images in " + std::to_string(class_dirs.size()) +
                                                     " class folders, sha256 of (name, bytes) in name order " +
                                                     digest.finish_hex());
  }
}

InspectReport inspect_path(const std::string& path) {
  InspectReport r;
  add(r, "path", path);
  if (!fs::exists(path)) throw RuntimeError("inspect: " + path + " does not exist");
  if (!fs::is_regular_file(path) && !fs::is_directory(path))  // a device or FIFO: never read or listed
    throw ConfigError("inspect: " + path + " is neither a data file nor a directory (a device, FIFO or socket); give a "
                      "records shard, an hdf5 file or a data set's directory");
  std::vector<std::string> shards, h5;
  if (fs::is_regular_file(path)) {
    (fs::path(path).extension() == ".h5" ? h5 : shards).push_back(path);
  } else {
    for (const auto& e : fs::directory_iterator(path)) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file()) continue;
      int shard = 0, count = 0;
      if (parse_record_shard_name(name, "train", &shard, &count) || parse_record_shard_name(name, "test", &shard, &count))
        shards.push_back(e.path().string());
      if (name == "train.h5" || name == "test.h5") h5.push_back(e.path().string());
    }
    std::sort(shards.begin(), shards.end());
    std::sort(h5.begin(), h5.end());
  }
  std::vector<std::string> unchecked;
  if (!shards.empty()) inspect_records(r, shards);
  else if (!h5.empty()) unchecked = inspect_hdf5(r, h5);
  else if (fs::is_directory(path) && fs::is_directory(fs::path(path) / "train")) inspect_jpeg_dir(r, path);
  else
    throw ConfigError("inspect: " + path + " is not a records directory or shard (train-NNNNN-of-MMMMM.rec), an hdf5 "
                      "file or directory (train.h5, test.h5) nor a jpeg_dir tree (train/<class>/*.jpg)");
  if (!unchecked.empty()) {
    add(r, "status", "no checksums: every record read, but " + join(unchecked) + " " + (unchecked.size() > 1 ? "have" : "has") +
                         " none to check them against (written before trainscale added them, or elsewhere); convert "
                         "the data set again with `trainscale data convert --format hdf5` to add them");
  } else {
    add(r, "status", "ok: every record read and checked");
  }
  return r;
}

}  // namespace

InspectReport inspect_data(const std::string& path) {
  try {
    return inspect_path(path);
  } catch (const fs::filesystem_error& e) {  // a directory or file that cannot be listed or read
    throw RuntimeError("data inspect: cannot read " + e.path1().string() + " (" + e.code().message() + ")");
  }
}

}  // namespace ts
