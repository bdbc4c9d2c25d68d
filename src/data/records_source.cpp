// RecordsSource (see records_source.h): the shards stay on storage; the source holds each
// shard's record offsets (8 bytes per sample) and reads one frame per sample.
#include "data/records_source.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/strings.h"
#include "data/image_transform.h"
#include "data/records_format.h"

namespace ts {
namespace {

constexpr int64_t kMaxFrameBytes = int64_t{1} << 30;  // 1 GiB; payloads are at most 256 MiB of pixels

struct Shard {
  std::unique_ptr<RandomAccessFile> file;
  std::vector<int64_t> offsets;  // of each record's frame
  bool indexed = false;
};

// An index must end where the shard ends: the last frame's header read at its offset.
void check_index_against_shard(const Shard& s) {
  const int64_t last = s.offsets.back(), record = static_cast<int64_t>(s.offsets.size()) - 1;
  const std::string where = record_where(s.file->path(), record);
  const std::string hint = " (index " + record_index_path(s.file->path()) + "); the index disagrees with its shard: "
                           "convert the data set again, or delete the .idx files to read the shards without them";
  if (last >= s.file->size())  // the shard was cut short (a copy that stopped, a full disk)
    throw RuntimeError(where + ": the index puts it at offset " + std::to_string(last) + ", but the shard ends at byte " +
                       std::to_string(s.file->size()) + ": the shard is truncated (or the index is another shard's)" + hint);
  if (s.file->size() - last < kFrameOverhead)
    throw RuntimeError(where + ": the index puts it at offset " + std::to_string(last) + ", " +
                       std::to_string(s.file->size() - last) + " bytes before the end of the shard" + hint);
  uint8_t header[kFrameHeader];
  s.file->read_at(last, kFrameHeader, header);
  const int64_t length = frame_payload_length(header, where);
  if (last + length + kFrameOverhead != s.file->size())
    throw RuntimeError(where + ": the last frame ends at byte " + std::to_string(last + length + kFrameOverhead) +
                       ", the shard at " + std::to_string(s.file->size()) + hint);
}

Shard open_shard(const Storage& storage, const std::string& path) {
  Shard s;
  s.file = storage.open(path);
  const std::string index = record_index_path(path);
  if (!storage.exists(index)) {
    s.offsets = scan_record_offsets(*s.file);
    return s;
  }
  auto f = storage.open(index);
  // A shard of N bytes holds at most N / kFrameOverhead records, 8 index bytes each: a larger
  // index is another file (refused before it is read into memory).
  const int64_t most = 16 + 8 * (s.file->size() / kFrameOverhead);
  if (f->size() > most)
    throw RuntimeError("records index " + index + " (" + std::to_string(f->size()) + " bytes): larger than an index of " +
                       path + " can be (the bound is " + std::to_string(most) + " bytes: 16 + 8 per record of at least " +
                       std::to_string(kFrameOverhead) +
                       " bytes); delete it to read the shard without it, or convert the data set again");
  std::vector<uint8_t> bytes(static_cast<size_t>(f->size()));
  f->read_at(0, f->size(), bytes.data());
  s.offsets = parse_record_index(bytes, index);
  s.indexed = true;
  check_index_against_shard(s);
  return s;
}

// The shards of `split` in `root`, opened in shard order; throws unless they are shards 0..M-1 of M.
std::vector<Shard> open_shards(const Storage& storage, const std::string& root, const std::string& split) {
  if (!storage.exists(root))
    throw RuntimeError("records: directory " + root + " does not exist; set dataset.root to the output of "
                       "`trainscale data convert --format records`");
  std::vector<std::string> names;
  int expected = -1;
  for (const StorageEntry& e : storage.list(root)) {
    int shard = 0, shards = 0;
    if (e.directory || !parse_record_shard_name(e.name, split, &shard, &shards)) continue;
    if (expected >= 0 && shards != expected)
      throw RuntimeError("records: directory " + root + " mixes shard sets (" + e.name + " is one of " +
                         std::to_string(shards) + ", another shard one of " + std::to_string(expected) +
                         "); remove the stale shards or convert into an empty directory");
    expected = shards;
    if (shard != static_cast<int>(names.size()))
      throw RuntimeError("records: directory " + root + ": shard " + record_shard_name(split, static_cast<int>(names.size()), shards) +
                         " is missing (found " + e.name + "); convert the data set again");
    names.push_back(join_storage_path(root, e.name));
  }
  if (names.empty())
    throw RuntimeError("records: directory " + root + " holds no shard of the " + split + " split (" +
                       record_shard_name(split, 0, 1) + " ...); make them with `trainscale data convert --format records`");
  if (static_cast<int>(names.size()) != expected)
    throw RuntimeError("records: directory " + root + " holds " + std::to_string(names.size()) + " of the " +
                       std::to_string(expected) + " shards of the " + split + " split; convert the data set again");
  std::vector<Shard> shards;
  for (const std::string& path : names) shards.push_back(open_shard(storage, path));
  return shards;
}

// Records of one stored shape (the default), or of images of any size transformed to the
// model's input (`transform` set: records of an ImageFolder).
class RecordsSource final : public SampleSource {
 public:
  RecordsSource(std::vector<Shard> shards, const std::string& name, int64_t classes, const Normalisation& stats,
                int64_t shuffle_buffer, std::unique_ptr<ImageTransform> transform = nullptr, const Shape& sample = {})
      : shards_(std::move(shards)), name_(name), shuffle_buffer_(shuffle_buffer), transform_(std::move(transform)) {
    for (const Shard& s : shards_) {
      first_.push_back(count_);
      count_ += static_cast<int64_t>(s.offsets.size());
    }
    if (transform_) {
      spec_ = {sample, classes, 0};
      return;
    }
    // The first record says the sample shape; every read checks its own against it.
    const std::vector<uint8_t> frame = read_frame(0, 0);
    spec_ = {peek_sample_payload(frame.data() + kFrameHeader, static_cast<int64_t>(frame.size()) - kFrameOverhead,
                                 record_where(shards_[0].file->path(), 0)).chw,
             classes, 0};
    normaliser_ = std::make_unique<PixelNormaliser>(stats, spec_.sample[0], spec_.sample[1] * spec_.sample[2]);
  }

  const SampleSpec& spec() const override { return spec_; }
  int64_t count() const override { return count_; }
  bool prefers_sequential() const override { return true; }
  std::string describe() const override {
    const bool indexed = std::all_of(shards_.begin(), shards_.end(), [](const Shard& s) { return s.indexed; });
    return "records " + name_ + " " + shards_.front().file->path() + " (" + std::to_string(shards_.size()) +
           " shards, " + (indexed ? "indexed" : "offsets found by a header walk") +
           (shuffle_buffer_ > 0 ? ", shuffle buffer of " + std::to_string(shuffle_buffer_) + " samples" : "") + "), " +
           std::to_string(count_) + " samples of " +
           (transform_ ? "images -> " + spec_.sample.str() + " (" + image_transform_name(transform_->kind()) + ")"
                       : spec_.sample.str());
  }

  bool shuffled_order(uint64_t seed, int64_t epoch, std::vector<int64_t>& order) const override {
    if (shuffle_buffer_ <= 0) return false;
    std::vector<int64_t> sizes;
    for (const Shard& s : shards_) sizes.push_back(static_cast<int64_t>(s.offsets.size()));
    order = shuffle_buffer_order(sizes, shuffle_buffer_, seed, epoch);
    return true;
  }

  void read(int64_t index, float* image, int32_t* label, float* targets) const override {
    if (transform_) return read_augmented(index, 0, image, label, targets);
    std::vector<uint8_t> pixels(static_cast<size_t>(spec_.sample.numel()));
    read_pixels(index, pixels.data(), label);
    normaliser_->apply(pixels.data(), image);
  }

  // Images: decoded at their own size and transformed as jpeg_dir does (the same augmentation
  // from the same seed, so records of an ImageFolder train as the folder itself does).
  void read_augmented(int64_t index, uint64_t augment_seed, float* image, int32_t* label, float* targets) const override {
    if (!transform_) return read(index, image, label, targets);
    const auto [frame, where] = locate_and_read(index);
    const Image8 hwc = decode_payload_image(frame.data() + kFrameHeader, static_cast<int64_t>(frame.size()) - kFrameOverhead,
                                            static_cast<int>(spec_.sample[0]), label, where);
    check_label(*label, where);
    transform_->apply(hwc, augment_seed, image);
  }

  void read_pixels(int64_t index, uint8_t* pixels, int32_t* label) const override {
    if (transform_) SampleSource::read_pixels(index, pixels, label);  // images of many sizes: throws
    const auto [frame, where] = locate_and_read(index);
    decode_sample_payload(frame.data() + kFrameHeader, static_cast<int64_t>(frame.size()) - kFrameOverhead, spec_.sample,
                          pixels, label, where);
    check_label(*label, where);
  }

 private:
  // Sample `index`'s whole frame, checked, and its "records shard ..., record r" for messages.
  std::pair<std::vector<uint8_t>, std::string> locate_and_read(int64_t index) const {
    const size_t s = static_cast<size_t>(std::upper_bound(first_.begin(), first_.end(), index) - first_.begin()) - 1;
    const int64_t record = index - first_[s];
    return {read_frame(s, record), record_where(shards_[s].file->path(), record)};
  }

  void check_label(int32_t label, const std::string& where) const {
    if (label < 0 || label >= spec_.classes)
      throw RuntimeError(where + ": label " + std::to_string(label) + " is out of range 0.." +
                         std::to_string(spec_.classes - 1) + " for data set " + name_ + "; convert the data set again");
  }

  // The whole frame of record `record` of shard `s` (it ends where the next one starts), checked.
  std::vector<uint8_t> read_frame(size_t s, int64_t record) const {
    const Shard& shard = shards_[s];
    const size_t r = static_cast<size_t>(record);
    const int64_t end = r + 1 < shard.offsets.size() ? shard.offsets[r + 1] : shard.file->size();
    if (end - shard.offsets[r] > kMaxFrameBytes)  // no sample is this large: the index is wrong
      throw RuntimeError(record_where(shard.file->path(), record) + ": the index gives it " +
                         std::to_string(end - shard.offsets[r]) + " bytes, more than any sample frame (" +
                         std::to_string(kMaxFrameBytes) + "): the index disagrees with its shard; convert the data "
                         "set again, or delete the .idx files to read the shards without them");
    std::vector<uint8_t> frame(static_cast<size_t>(end - shard.offsets[r]));
    shard.file->read_at(shard.offsets[r], static_cast<int64_t>(frame.size()), frame.data());
    check_frame(frame.data(), static_cast<int64_t>(frame.size()), record_where(shard.file->path(), record));
    return frame;
  }

  std::vector<Shard> shards_;
  std::vector<int64_t> first_;  // first sample index of each shard
  int64_t count_ = 0;
  std::string name_;
  int64_t shuffle_buffer_ = 0;
  SampleSpec spec_;
  std::unique_ptr<PixelNormaliser> normaliser_;  // stored shapes
  std::unique_ptr<ImageTransform> transform_;    // images of any size
};

}  // namespace

std::vector<int64_t> shuffle_buffer_order(const std::vector<int64_t>& shard_sizes, int64_t shuffle_buffer,
                                          uint64_t seed, int64_t epoch) {
  Rng rng(seed_mix(seed, static_cast<uint64_t>(epoch), 0x5b0ff3e));
  std::vector<int64_t> first(shard_sizes.size(), 0), shard_order(shard_sizes.size());
  int64_t total = 0;
  for (size_t s = 0; s < shard_sizes.size(); ++s) {
    first[s] = total;
    total += shard_sizes[s];
    shard_order[s] = static_cast<int64_t>(s);
  }
  for (size_t i = shard_order.size(); i > 1; --i)  // the shards' order: Fisher-Yates
    std::swap(shard_order[i - 1], shard_order[static_cast<size_t>(rng.below(i))]);
  std::vector<int64_t> order, buffer;
  order.reserve(static_cast<size_t>(total));
  buffer.reserve(static_cast<size_t>(std::min(shuffle_buffer, total)));
  for (int64_t s : shard_order)
    for (int64_t r = first[static_cast<size_t>(s)]; r < first[static_cast<size_t>(s)] + shard_sizes[static_cast<size_t>(s)]; ++r) {
      if (static_cast<int64_t>(buffer.size()) < shuffle_buffer) {
        buffer.push_back(r);
        continue;
      }
      int64_t& slot = buffer[static_cast<size_t>(rng.below(buffer.size()))];
      order.push_back(slot);
      slot = r;
    }
  while (!buffer.empty()) {  // the rest, in random order
    const size_t j = static_cast<size_t>(rng.below(buffer.size()));
    order.push_back(buffer[j]);
    buffer[j] = buffer.back();
    buffer.pop_back();
  }
  return order;
}

std::string split_file_stem(Split split) { return split == Split::train ? "train" : "test"; }

std::unique_ptr<SampleSource> open_records_source(const Storage& storage, const std::string& root, Split split,
                                                  const std::string& name, int64_t classes,
                                                  const Normalisation& stats, int64_t shuffle_buffer) {
  return std::make_unique<RecordsSource>(open_shards(storage, root, split_file_stem(split)), name, classes, stats,
                                         shuffle_buffer);
}

std::unique_ptr<SampleSource> open_records_image_source(const Storage& storage, const std::string& root, Split split,
                                                        const std::string& name, const RecordsImageOptions& options) {
  auto transform = std::make_unique<ImageTransform>(options.transform, static_cast<int>(options.sample[1]),
                                                    static_cast<int>(options.sample[2]), options.stats);
  return std::make_unique<RecordsSource>(open_shards(storage, root, split_file_stem(split)), name, options.classes,
                                         Normalisation{}, options.shuffle_buffer, std::move(transform), options.sample);
}

std::vector<std::string> read_records_class_names(const Storage& storage, const std::string& root) {
  const std::string path = join_storage_path(root, kRecordsClassFile);
  if (!storage.exists(path))
    throw RuntimeError("records " + root + ": no " + kRecordsClassFile + " (the class names, one per line, that "
                       "`trainscale data convert --dataset imagefolder --format records` writes beside the shards); "
                       "convert the ImageFolder again");
  const auto f = storage.open(path);
  std::string text(static_cast<size_t>(f->size()), '\0');
  f->read_at(0, f->size(), reinterpret_cast<uint8_t*>(text.data()));
  std::vector<std::string> names = split(text, '\n');
  std::erase(names, "");  // blank lines name no class
  if (names.empty()) throw RuntimeError("records " + path + " names no class; convert the ImageFolder again");
  return names;
}

}  // namespace ts
