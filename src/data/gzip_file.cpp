// inflate_gzip (see gzip_file.h): the compressed bytes are read through the storage in
// chunks and inflated with zlib into one in-memory file.
#include "data/gzip_file.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace ts {
namespace {

constexpr int64_t kChunkBytes = int64_t{1} << 20;
constexpr const char* kCorruptHint =
    "the file is damaged or not gzip-compressed; reinstall the data set or decompress it "
    "(gunzip) and use the raw file";

// A file held in memory (the inflated bytes); reads are plain copies.
class MemoryFile final : public RandomAccessFile {
 public:
  MemoryFile(std::string path, std::vector<uint8_t> bytes) : path_(std::move(path)), bytes_(std::move(bytes)) {}
  const std::string& path() const override { return path_; }
  int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }
  void read_at(int64_t offset, int64_t bytes, void* dst) const override {
    if (offset < 0 || bytes < 0 || offset + bytes > size())
      throw RuntimeError("data file " + path_ + ": read of bytes [" + std::to_string(offset) + ", " +
                         std::to_string(offset + bytes) + ") lies outside its " +
                         std::to_string(size()) + " inflated bytes");
    if (bytes > 0) std::memcpy(dst, bytes_.data() + offset, static_cast<size_t>(bytes));
  }

 private:
  std::string path_;
  std::vector<uint8_t> bytes_;
};

// gzip's trailer ends with the inflated size mod 2^32 (of the last member): a capacity hint,
// trusted only when it is plausible (deflate expands at most ~1032x).
size_t size_hint(const RandomAccessFile& f) {
  if (f.size() < 18) return 0;
  uint8_t t[4];
  f.read_at(f.size() - 4, 4, t);
  const uint64_t isize = uint64_t{t[0]} | uint64_t{t[1]} << 8 | uint64_t{t[2]} << 16 | uint64_t{t[3]} << 24;
  return isize <= static_cast<uint64_t>(f.size()) * 1032 ? static_cast<size_t>(isize) : 0;
}

}  // namespace

bool is_gzip_path(const std::string& path) {
  return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

std::unique_ptr<RandomAccessFile> inflate_gzip(const RandomAccessFile& compressed) {
  const std::string& path = compressed.path();
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)  // 16: expect a gzip header
    throw RuntimeError("data file " + path + ": zlib could not start inflating (out of memory?)");
  std::vector<uint8_t> out, in(static_cast<size_t>(std::min(kChunkBytes, compressed.size())));
  out.reserve(size_hint(compressed));
  std::vector<uint8_t> window(static_cast<size_t>(kChunkBytes));
  int64_t offset = 0;
  int status = Z_OK;
  bool pending = false;  // the last inflate filled the window, so it may hold more output
  std::string error;
  while (error.empty()) {
    if (zs.avail_in == 0 && offset < compressed.size()) {  // next chunk of compressed bytes
      const int64_t n = std::min<int64_t>(kChunkBytes, compressed.size() - offset);
      compressed.read_at(offset, n, in.data());
      offset += n;
      zs.next_in = in.data();
      zs.avail_in = static_cast<uInt>(n);
    }
    if (zs.avail_in == 0 && !pending) {  // everything read and inflated
      if (status != Z_STREAM_END)
        error = "truncated: the compressed stream ends before its end marker (after " +
                std::to_string(out.size()) + " inflated bytes)";
      break;
    }
    if (status == Z_STREAM_END) inflateReset(&zs);  // a further concatenated gzip member
    zs.next_out = window.data();
    zs.avail_out = static_cast<uInt>(window.size());
    status = inflate(&zs, Z_NO_FLUSH);
    out.insert(out.end(), window.data(), window.data() + (window.size() - zs.avail_out));
    pending = status != Z_STREAM_END && zs.avail_out == 0;
    if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR)
      error = std::string("corrupt compressed data (zlib: ") + (zs.msg ? zs.msg : zError(status)) + ")";
  }
  inflateEnd(&zs);
  if (!error.empty()) throw RuntimeError("data file " + path + ": " + error + "; " + kCorruptHint);
  return std::make_unique<MemoryFile>(path, std::move(out));
}

}  // namespace ts
