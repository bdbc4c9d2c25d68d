// inflate_gzip and read_gzip_head (see gzip_file.h): the compressed bytes are read through the
// storage in chunks and inflated with zlib into one in-memory file (or its first bytes).
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

constexpr int64_t kMaxDeflateRatio = 1032;  // deflate's most inflated bytes per compressed byte
constexpr int64_t kMaxHintRatio = 8;        // reserve no more than this many times the file

// gzip's trailer ends with the inflated size mod 2^32 (of the last member): a capacity hint
// only. A forged or damaged trailer can claim 4 GiB, so the reservation is also capped by the
// caller's limit and by a small multiple of the compressed size (beyond it, the vector grows
// with the bytes that really arrive).
size_t size_hint(const RandomAccessFile& f, int64_t limit) {
  if (f.size() < 18) return 0;
  uint8_t t[4];
  f.read_at(f.size() - 4, 4, t);
  int64_t isize = int64_t{t[0]} | int64_t{t[1]} << 8 | int64_t{t[2]} << 16 | int64_t{t[3]} << 24;
  isize = std::min(isize, kMaxHintRatio * f.size() + kChunkBytes);
  if (limit >= 0) isize = std::min(isize, limit);
  return static_cast<size_t>(isize);
}

// Inflates `compressed` into `out` until the stream ends or `out` holds at least `stop_after`
// bytes (stop_after < 0: no stop). Returns "" or what is wrong with the stream; a stop before
// the end is not an error (the caller decides).
std::string inflate_into(const RandomAccessFile& compressed, int64_t stop_after, std::vector<uint8_t>& out) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)  // 16: expect a gzip header
    return "zlib could not start inflating (out of memory?)";
  std::vector<uint8_t> in(static_cast<size_t>(std::min(kChunkBytes, compressed.size())));
  std::vector<uint8_t> window(static_cast<size_t>(kChunkBytes));
  int64_t offset = 0;
  int status = Z_OK;
  bool pending = false;  // the last inflate filled the window, so it may hold more output
  std::string error;
  while (error.empty() && (stop_after < 0 || static_cast<int64_t>(out.size()) < stop_after)) {
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
  return error;
}

RuntimeError gzip_error(const std::string& path, const std::string& what) {
  return RuntimeError("data file " + path + ": " + what + "; " + kCorruptHint);
}

}  // namespace

bool is_gzip_path(const std::string& path) {
  return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

int64_t gzip_max_inflated_bytes(int64_t compressed_bytes) { return kMaxDeflateRatio * compressed_bytes; }

std::unique_ptr<RandomAccessFile> inflate_gzip(const RandomAccessFile& compressed, int64_t max_inflated_bytes) {
  std::vector<uint8_t> out;
  out.reserve(size_hint(compressed, max_inflated_bytes));
  // One byte past the limit is enough to know the stream holds more than it may.
  const int64_t stop_after = max_inflated_bytes < 0 ? -1 : max_inflated_bytes + 1;
  const std::string error = inflate_into(compressed, stop_after, out);
  if (!error.empty()) throw gzip_error(compressed.path(), error);
  if (max_inflated_bytes >= 0 && static_cast<int64_t>(out.size()) > max_inflated_bytes)
    throw gzip_error(compressed.path(), "unexpected bytes: it inflates to more than the " +
                                            std::to_string(max_inflated_bytes) + " bytes expected (from its header)");
  return std::make_unique<MemoryFile>(compressed.path(), std::move(out));
}

std::vector<uint8_t> read_gzip_head(const RandomAccessFile& compressed, int64_t bytes) {
  std::vector<uint8_t> out;
  const std::string error = inflate_into(compressed, bytes, out);
  // An error after the head was inflated is left to inflate_gzip, which reads the rest.
  if (!error.empty() && static_cast<int64_t>(out.size()) < bytes) throw gzip_error(compressed.path(), error);
  if (static_cast<int64_t>(out.size()) > bytes) out.resize(static_cast<size_t>(bytes));
  return out;
}

}  // namespace ts
