// The `records` format on disk (docs/data.md "Formats: records"): TFRecord-framed shards of
// encoded samples, an index file per shard, and the names of both.
//
// A frame, byte for byte as TFRecord writes it (all integers little-endian):
//   uint64 length | uint32 masked_crc32c(the 8 length bytes) | payload (length bytes) |
//   uint32 masked_crc32c(payload)
// A payload is one sample (kPayloadHeader bytes, then the image):
//   0  char[4] "TSR1"   magic and version
//   4  uint8   encoding 0: raw (C*H*W uint8 in (C,H,W) order), 1: JPEG (encode_jpeg of (H,W,C))
//   5  uint8[3] zero
//   8  int32   label
//   12 uint16  C, uint16 H, uint16 W, uint16 zero
//   20 image bytes
// An index file `<shard>.idx` (binary): char[8] "TSRIDX1\0", uint64 records, then one uint64
// byte offset per record (the frame's first byte), strictly increasing from 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/jpeg_codec.h"
#include "data/sample_source.h"

namespace ts {

constexpr int64_t kFrameHeader = 12;   // length + its CRC
constexpr int64_t kFrameOverhead = 16; // header + the payload's CRC
constexpr int64_t kPayloadHeader = 20;
constexpr int64_t kIndexHeader = 16;

enum class PayloadEncoding : uint8_t { raw = 0, jpeg = 1 };

// The frame of `payload` (kFrameOverhead + payload.size() bytes).
std::vector<uint8_t> frame_record(const std::vector<uint8_t>& payload);

class RandomAccessFile;

// "records shard PATH, record N": where a record's error is.
std::string record_where(const std::string& path, int64_t record);
// The offset of each frame of a shard, by its frame headers (one 12-byte read per record);
// RuntimeError naming the record for a header CRC that is wrong, a shard cut short or an empty
// shard (fix: convert the data set again).
std::vector<int64_t> scan_record_offsets(const RandomAccessFile& shard);

// The payload length a frame header declares; throws RuntimeError naming `where` (file and
// record) when the header's CRC is wrong.
int64_t frame_payload_length(const uint8_t* header, const std::string& where);
// Checks a whole frame (header, payload and payload CRC) of `bytes` bytes; its payload starts at
// kFrameHeader. Throws RuntimeError naming `where` for a length that disagrees or a wrong CRC.
void check_frame(const uint8_t* frame, int64_t bytes, const std::string& where);

// One sample's payload. `pixels` holds C*H*W uint8 in (C,H,W) order; JPEG payloads store it
// encoded at `jpeg_quality`.
std::vector<uint8_t> encode_sample_payload(const Shape& chw, const uint8_t* pixels, int32_t label,
                                           PayloadEncoding encoding, int jpeg_quality);
// The payload of a JPEG file kept byte for byte (`data convert --dataset imagefolder`): the
// header's C, H, W are the file's own (C = JpegSize::channels). Throws RuntimeError naming
// `where` when the bytes are not a JPEG or the image is larger than a record holds.
std::vector<uint8_t> encode_jpeg_file_payload(const uint8_t* jpeg, size_t bytes, int32_t label,
                                              const std::string& where);
// Decodes a payload into `pixels` (expected.numel() uint8, (C,H,W)) and `label`; throws
// RuntimeError naming `where` when the payload is malformed, of another shape than `expected`,
// or a JPEG that does not decode.
void decode_sample_payload(const uint8_t* payload, int64_t bytes, const Shape& expected, uint8_t* pixels,
                           int32_t* label, const std::string& where);
// A payload's image at its own size, interleaved (H,W,channels), for sources that transform it
// to the model's input (records of an ImageFolder): a JPEG decoded to `channels` (1 grey, 3 RGB),
// raw pixels re-interleaved (their C must be `channels`). Sets *label; errors as above.
Image8 decode_payload_image(const uint8_t* payload, int64_t bytes, int channels, int32_t* label,
                           const std::string& where);
// The shape, label and encoding of a payload without decoding its image (for inspect and open).
struct PayloadInfo {
  Shape chw;
  int32_t label = 0;
  PayloadEncoding encoding = PayloadEncoding::raw;
};
PayloadInfo peek_sample_payload(const uint8_t* payload, int64_t bytes, const std::string& where);

// Index files: the bytes of one, and its offsets parsed back (RuntimeError naming `path` for a
// wrong magic, a size that disagrees with its count, or offsets that do not increase from 0).
std::vector<uint8_t> encode_record_index(const std::vector<int64_t>& offsets);
std::vector<int64_t> parse_record_index(const std::vector<uint8_t>& bytes, const std::string& path);

// "train-00003-of-00008.rec" (shard 3 of 8; split "train" or "test").
std::string record_shard_name(const std::string& split, int shard, int shards);
// True and the numbers if `name` is such a name for `split`.
bool parse_record_shard_name(const std::string& name, const std::string& split, int* shard, int* shards);
// "<shard path>.idx"
std::string record_index_path(const std::string& shard_path);

}  // namespace ts
