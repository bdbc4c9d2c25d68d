// The `records` format on disk (see records_format.h): frames, sample payloads, index files.
#include "data/records_format.h"

#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "data/crc32c.h"
#include "data/jpeg_codec.h"
#include "data/storage.h"

namespace ts {
namespace {

constexpr char kPayloadMagic[4] = {'T', 'S', 'R', '1'};
constexpr char kIndexMagic[8] = {'T', 'S', 'R', 'I', 'D', 'X', '1', '\0'};
constexpr int64_t kMaxSide = 65535;
constexpr int64_t kMaxSampleBytes = int64_t{1} << 28;  // 256 MiB: no real image is larger

void put_le(uint8_t* dst, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) dst[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t get_le(const uint8_t* src, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{src[i]} << (8 * i);
  return value;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

RuntimeError bad_payload(const std::string& where, const std::string& what) {
  return RuntimeError(where + ": " + what + "; the shard is damaged or was not written by `trainscale data convert` "
                      "(docs/data.md \"Formats: records\"); convert the data set again");
}

// kPayloadHeader bytes of header (encoding, label, C, H, W), then `image`.
std::vector<uint8_t> make_payload(PayloadEncoding encoding, int32_t label, const Shape& chw, const uint8_t* image,
                                  size_t image_bytes) {
  std::vector<uint8_t> payload(static_cast<size_t>(kPayloadHeader) + image_bytes, 0);
  std::memcpy(payload.data(), kPayloadMagic, 4);
  payload[4] = static_cast<uint8_t>(encoding);
  put_le(payload.data() + 8, static_cast<uint32_t>(label), 4);
  for (int i = 0; i < 3; ++i) put_le(payload.data() + 12 + 2 * i, static_cast<uint64_t>(chw[i]), 2);
  if (image_bytes > 0) std::memcpy(payload.data() + kPayloadHeader, image, image_bytes);
  return payload;
}

}  // namespace

std::vector<uint8_t> frame_record(const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> frame(payload.size() + kFrameOverhead);
  put_le(frame.data(), payload.size(), 8);
  put_le(frame.data() + 8, masked_crc32c(frame.data(), 8), 4);
  if (!payload.empty()) std::memcpy(frame.data() + kFrameHeader, payload.data(), payload.size());
  put_le(frame.data() + kFrameHeader + payload.size(), masked_crc32c(payload.data(), payload.size()), 4);
  return frame;
}

int64_t frame_payload_length(const uint8_t* header, const std::string& where) {
  const uint32_t stored = static_cast<uint32_t>(get_le(header + 8, 4));
  const uint32_t computed = masked_crc32c(header, 8);
  if (stored != computed)
    throw RuntimeError(where + ": wrong CRC of the length field (stored " + hex32(stored) + ", computed " +
                       hex32(computed) + "): the shard is damaged, truncated or not a TFRecord file (or its index "
                       "points inside a record); convert the data set again");
  const uint64_t length = get_le(header, 8);
  if (length > (uint64_t{1} << 40))
    throw RuntimeError(where + ": implausible record length " + std::to_string(length) + " bytes");
  return static_cast<int64_t>(length);
}

void check_frame(const uint8_t* frame, int64_t bytes, const std::string& where) {
  if (bytes < kFrameOverhead)
    throw RuntimeError(where + ": truncated: " + std::to_string(bytes) + " bytes, shorter than a frame's " +
                       std::to_string(kFrameOverhead) + "-byte header and trailer");
  const int64_t length = frame_payload_length(frame, where);
  if (length != bytes - kFrameOverhead)
    throw RuntimeError(where + ": the frame declares a " + std::to_string(length) + "-byte payload but the index "
                       "(or the end of the shard) leaves " + std::to_string(bytes - kFrameOverhead) +
                       " bytes for it: the index disagrees with its shard or the shard is truncated; convert the "
                       "data set again (or delete the .idx files to read the shards without them)");
  const uint32_t stored = static_cast<uint32_t>(get_le(frame + kFrameHeader + length, 4));
  const uint32_t computed = masked_crc32c(frame + kFrameHeader, static_cast<size_t>(length));
  if (stored != computed)
    throw RuntimeError(where + ": wrong CRC of the payload (stored " + hex32(stored) + ", computed " +
                       hex32(computed) + "): the record is corrupt; convert the data set again");
}

std::vector<uint8_t> encode_sample_payload(const Shape& chw, const uint8_t* pixels, int32_t label,
                                           PayloadEncoding encoding, int jpeg_quality) {
  if (chw.rank() != 3 || chw[0] < 1 || chw[1] < 1 || chw[2] < 1 || chw[0] > kMaxSide || chw[1] > kMaxSide ||
      chw[2] > kMaxSide)
    throw RuntimeError("records: cannot encode a sample of shape " + chw.str() + " (needs (C,H,W), each 1..65535)");
  if (encoding == PayloadEncoding::raw) return make_payload(encoding, label, chw, pixels, static_cast<size_t>(chw.numel()));
  const std::vector<uint8_t> jpeg = encode_jpeg(image_from_planes(pixels, chw[0], chw[1], chw[2]), jpeg_quality);
  return make_payload(encoding, label, chw, jpeg.data(), jpeg.size());
}

std::vector<uint8_t> encode_jpeg_file_payload(const uint8_t* jpeg, size_t bytes, int32_t label,
                                              const std::string& where) {
  const JpegSize size = jpeg_size(jpeg, bytes, where);
  if (size.width > kMaxSide || size.height > kMaxSide ||
      static_cast<int64_t>(size.width) * size.height > kMaxJpegPixels)
    throw RuntimeError(where + ": a JPEG of " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                       " pixels is larger than a record holds (65535 on a side, " + std::to_string(kMaxJpegPixels) +
                       " pixels); shrink the image");
  return make_payload(PayloadEncoding::jpeg, label, Shape{size.channels, size.height, size.width}, jpeg, bytes);
}

PayloadInfo peek_sample_payload(const uint8_t* payload, int64_t bytes, const std::string& where) {
  if (bytes < kPayloadHeader)
    throw bad_payload(where, "payload of " + std::to_string(bytes) + " bytes is shorter than the " +
                                 std::to_string(kPayloadHeader) + "-byte sample header");
  if (std::memcmp(payload, kPayloadMagic, 4) != 0) throw bad_payload(where, "payload does not start with \"TSR1\"");
  PayloadInfo info;
  if (payload[4] > 1) throw bad_payload(where, "unknown encoding " + std::to_string(payload[4]) + " (0 raw, 1 JPEG)");
  info.encoding = static_cast<PayloadEncoding>(payload[4]);
  info.label = static_cast<int32_t>(static_cast<uint32_t>(get_le(payload + 8, 4)));
  info.chw = Shape{static_cast<int64_t>(get_le(payload + 12, 2)), static_cast<int64_t>(get_le(payload + 14, 2)),
                   static_cast<int64_t>(get_le(payload + 16, 2))};
  if (info.chw.numel() <= 0 || info.chw.numel() > kMaxSampleBytes)
    throw bad_payload(where, "sample shape " + info.chw.str() + " is empty or larger than " +
                                 std::to_string(kMaxSampleBytes) + " bytes");
  if (info.encoding == PayloadEncoding::jpeg && info.chw[0] != 1 && info.chw[0] != 3)
    throw bad_payload(where, "a JPEG sample has 1 or 3 channels, the header says " + std::to_string(info.chw[0]));
  if (info.encoding == PayloadEncoding::raw && bytes - kPayloadHeader != info.chw.numel())
    throw bad_payload(where, "raw image of shape " + info.chw.str() + " needs " + std::to_string(info.chw.numel()) +
                                 " bytes, the payload holds " + std::to_string(bytes - kPayloadHeader));
  return info;
}

void decode_sample_payload(const uint8_t* payload, int64_t bytes, const Shape& expected, uint8_t* pixels,
                           int32_t* label, const std::string& where) {
  const PayloadInfo info = peek_sample_payload(payload, bytes, where);
  if (info.chw != expected)
    throw bad_payload(where, "sample shape " + info.chw.str() + " differs from the data set's " + expected.str());
  if (info.encoding == PayloadEncoding::raw) {
    *label = info.label;
    std::memcpy(pixels, payload + kPayloadHeader, static_cast<size_t>(expected.numel()));
    return;
  }
  const Image8 hwc = decode_payload_image(payload, bytes, static_cast<int>(expected[0]), label, where);
  if (hwc.height != expected[1] || hwc.width != expected[2] ||
      hwc.pixels.size() != static_cast<size_t>(expected.numel()))
    throw bad_payload(where, "JPEG decoded to another size than its header says");
  planes_from_pixels(hwc.pixels.data(), expected[0], expected[1], expected[2], pixels);
}

Image8 decode_payload_image(const uint8_t* payload, int64_t bytes, int channels, int32_t* label,
                           const std::string& where) {
  const PayloadInfo info = peek_sample_payload(payload, bytes, where);
  *label = info.label;
  const uint8_t* image = payload + kPayloadHeader;
  if (info.encoding == PayloadEncoding::jpeg) {
    // The JPEG's own size first: a damaged header must not make the decoder allocate for it.
    const size_t jpeg_bytes = static_cast<size_t>(bytes - kPayloadHeader);
    const JpegSize size = jpeg_size(image, jpeg_bytes, where);
    if (size.height != info.chw[1] || size.width != info.chw[2])
      throw bad_payload(where, "JPEG of " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                                   " pixels, the sample header says " + std::to_string(info.chw[2]) + "x" +
                                   std::to_string(info.chw[1]));
    return decode_jpeg(image, jpeg_bytes, channels, where);
  }
  if (info.chw[0] != channels)
    throw bad_payload(where, "raw image of " + std::to_string(info.chw[0]) + " channels, the model takes " +
                                 std::to_string(channels));
  return image_from_planes(image, channels, info.chw[1], info.chw[2]);
}

std::vector<uint8_t> encode_record_index(const std::vector<int64_t>& offsets) {
  std::vector<uint8_t> bytes(static_cast<size_t>(kIndexHeader) + 8 * offsets.size());
  std::memcpy(bytes.data(), kIndexMagic, 8);
  put_le(bytes.data() + 8, offsets.size(), 8);
  for (size_t i = 0; i < offsets.size(); ++i) put_le(bytes.data() + kIndexHeader + 8 * i, static_cast<uint64_t>(offsets[i]), 8);
  return bytes;
}

std::vector<int64_t> parse_record_index(const std::vector<uint8_t>& bytes, const std::string& path) {
  const std::string hint = "; delete it to read the shard without an index, or convert the data set again";
  if (bytes.size() < static_cast<size_t>(kIndexHeader) || std::memcmp(bytes.data(), kIndexMagic, 8) != 0)
    throw RuntimeError("record index " + path + ": not an index file (no \"TSRIDX1\" header)" + hint);
  const uint64_t count = get_le(bytes.data() + 8, 8);
  if (count == 0 || count != (bytes.size() - kIndexHeader) / 8 || (bytes.size() - kIndexHeader) % 8 != 0)
    throw RuntimeError("record index " + path + ": header says " + std::to_string(count) + " records, the file holds " +
                       std::to_string(bytes.size()) + " bytes (expected 16 + 8 per record)" + hint);
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  for (size_t i = 0; i < offsets.size(); ++i) {
    const uint64_t v = get_le(bytes.data() + kIndexHeader + 8 * i, 8);
    offsets[i] = static_cast<int64_t>(v);
    const bool increasing = i == 0 ? v == 0 : offsets[i] >= offsets[i - 1] + kFrameOverhead;
    if (v > (uint64_t{1} << 50) || !increasing)
      throw RuntimeError("record index " + path + ": offset " + std::to_string(v) + " of record " + std::to_string(i) +
                         (i == 0 ? " is not 0" : " is not past the previous record's frame") + hint);
  }
  return offsets;
}

std::string record_shard_name(const std::string& split, int shard, int shards) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "-%05d-of-%05d.rec", shard, shards);
  return split + buf;
}

bool parse_record_shard_name(const std::string& name, const std::string& split, int* shard, int* shards) {
  const std::string prefix = split + "-";
  if (name.size() != prefix.size() + 18 || name.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string rest = name.substr(prefix.size());  // "00003-of-00008.rec"
  if (rest.compare(5, 4, "-of-") != 0 || rest.compare(14, 4, ".rec") != 0) return false;
  for (int i : {0, 1, 2, 3, 4, 9, 10, 11, 12, 13})
    if (rest[i] < '0' || rest[i] > '9') return false;
  *shard = std::stoi(rest.substr(0, 5));
  *shards = std::stoi(rest.substr(9, 5));
  return true;
}

std::string record_index_path(const std::string& shard_path) { return shard_path + ".idx"; }

std::string record_where(const std::string& path, int64_t record) {
  return "records shard " + path + ", record " + std::to_string(record);
}

std::vector<int64_t> scan_record_offsets(const RandomAccessFile& f) {
  std::vector<int64_t> offsets;
  uint8_t header[kFrameHeader];
  for (int64_t at = 0; at < f.size();) {
    const std::string where = record_where(f.path(), static_cast<int64_t>(offsets.size()));
    if (f.size() - at < kFrameOverhead)
      throw RuntimeError(where + ": truncated: " + std::to_string(f.size() - at) + " bytes left at offset " +
                         std::to_string(at) + ", less than a frame header and trailer; convert the data set again");
    f.read_at(at, kFrameHeader, header);
    const int64_t length = frame_payload_length(header, where);
    if (length > f.size() - at - kFrameOverhead)
      throw RuntimeError(where + ": truncated: the frame at offset " + std::to_string(at) + " declares a " +
                         std::to_string(length) + "-byte payload, the shard ends " + std::to_string(f.size() - at - kFrameOverhead) +
                         " bytes after its header; convert the data set again");
    offsets.push_back(at);
    at += length + kFrameOverhead;
  }
  if (offsets.empty()) throw RuntimeError("records shard " + f.path() + " is empty; convert the data set again");
  return offsets;
}

}  // namespace ts
