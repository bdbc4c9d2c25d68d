// The records split writer (see records_writer.h): frames are appended to a shard through stdio;
// the offsets become the shard's index.
#include "data/records_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/file_io.h"
#include "data/records_source.h"
#include "data/storage.h"

namespace ts {
namespace {

// A file written to a temporary name and renamed to its own by commit() (AtomicFile).
class PendingFile {
 public:
  explicit PendingFile(const std::string& path) : atomic_(path) {
    file_ = std::fopen(atomic_.temp_path().c_str(), "wb");
    if (!file_) throw RuntimeError("records: cannot create " + atomic_.temp_path() + ": " + std::strerror(errno));
  }
  ~PendingFile() {
    if (file_) std::fclose(file_);  // the AtomicFile removes the uncommitted temporary
  }
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  void write(const std::vector<uint8_t>& bytes) {
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
      throw RuntimeError("records: cannot write " + atomic_.temp_path() + ": " + std::strerror(errno) + " (disk full?)");
  }
  void commit() {
    const int failed = std::fclose(file_);
    file_ = nullptr;
    if (failed != 0)
      throw RuntimeError("records: cannot close " + atomic_.temp_path() + ": " + std::strerror(errno) + " (disk full?)");
    atomic_.commit();
  }

 private:
  AtomicFile atomic_;
  std::FILE* file_ = nullptr;
};

}  // namespace

std::vector<std::string> write_record_payloads(const std::string& dir, Split split, int64_t count, int shards,
                                               const PayloadOf& payload_of) {
  if (shards < 1 || shards > count || shards > 99999)
    throw ConfigError("--shards " + std::to_string(shards) + " must be in [1, " +
                      std::to_string(std::min<int64_t>(count, 99999)) + "] (at least one sample per shard)");
  std::vector<std::string> paths;
  for (int s = 0; s < shards; ++s) {
    const std::string path = join_storage_path(dir, record_shard_name(split_file_stem(split), s, shards));
    PendingFile shard(path);
    std::vector<int64_t> offsets;
    int64_t at = 0;
    for (int64_t i = s * count / shards; i < (s + 1) * count / shards; ++i) {
      const std::vector<uint8_t> frame = frame_record(payload_of(i));
      shard.write(frame);
      offsets.push_back(at);
      at += static_cast<int64_t>(frame.size());
    }
    shard.commit();
    PendingFile index_file(record_index_path(path));
    index_file.write(encode_record_index(offsets));
    index_file.commit();
    paths.push_back(path);
  }
  return paths;
}

std::vector<std::string> write_records_split(const std::string& dir, Split split, const SampleSource& source,
                                             int64_t count, const RecordsWriteOptions& options) {
  if (options.jpeg_quality < 1 || options.jpeg_quality > 100)
    throw ConfigError("--jpeg-quality " + std::to_string(options.jpeg_quality) + " must be in [1, 100]");
  const Shape chw = source.spec().sample;
  std::vector<uint8_t> pixels(static_cast<size_t>(chw.numel()));
  return write_record_payloads(dir, split, count, options.shards, [&](int64_t i) {
    int32_t label = 0;
    source.read_pixels(i, pixels.data(), &label);
    return encode_sample_payload(chw, pixels.data(), label, options.encoding, options.jpeg_quality);
  });
}

}  // namespace ts
