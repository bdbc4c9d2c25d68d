// JPEG encoding and decoding through libjpeg-turbo's TurboJPEG API, for the jpeg_dir format,
// JPEG record payloads and `trainscale data convert`. Images are 8-bit, interleaved (H,W,C),
// C = 1 (grey) or 3 (RGB). Each thread keeps its own TurboJPEG handles (a handle is not
// thread-safe; making one per image would cost more than decoding a small one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ts {

// An 8-bit image: pixels holds height x width x channels bytes, row-major, channels interleaved.
struct Image8 {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

// Stored samples are (C,H,W) planes of uint8: the image of such planes, and an interleaved
// (H,W,C) image's pixels written back as planes into `chw` (C*H*W bytes).
Image8 image_from_planes(const uint8_t* chw, int64_t channels, int64_t height, int64_t width);
void planes_from_pixels(const uint8_t* hwc, int64_t channels, int64_t height, int64_t width, uint8_t* chw);

// The JPEG (baseline, 4:2:0 chroma subsampling for RGB, none for grey) of `image` at `quality`
// in [1, 100]. Throws RuntimeError with libjpeg-turbo's message.
std::vector<uint8_t> encode_jpeg(const Image8& image, int quality);

// Width, height and colour channels (1: greyscale, 3: any other colour space) of a JPEG from its
// header alone. `where` names the file (and record) in errors.
struct JpegSize {
  int width = 0, height = 0, channels = 0;
};
JpegSize jpeg_size(const uint8_t* bytes, size_t size, const std::string& where);

// The most pixels decode_jpeg accepts (PIL's decompression-bomb limit, 1024 x 1024 x 256 / 3).
constexpr int64_t kMaxJpegPixels = 89478485;
// The largest JPEG file the jpeg_dir format reads: 4 bytes per pixel of the largest image
// decode_jpeg accepts (raw RGB is 3; the rest leaves room for quality 100 and metadata). A
// larger file cannot be an image it decodes, and is refused before it is read.
constexpr int64_t kMaxJpegFileBytes = 4 * kMaxJpegPixels;

// Decodes a JPEG into `channels` (1: grey, 3: RGB) whatever its own colour space. Throws
// RuntimeError naming `where` when the bytes are not a JPEG libjpeg-turbo can decode
// (truncated data decodes with a warning and is an error here too) or the header claims more
// than kMaxJpegPixels pixels (checked before anything is allocated).
Image8 decode_jpeg(const uint8_t* bytes, size_t size, int channels, const std::string& where);

}  // namespace ts
