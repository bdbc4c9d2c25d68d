// JPEG through TurboJPEG (see jpeg_codec.h).
#include "data/jpeg_codec.h"

#include <turbojpeg.h>

#include <memory>

#include "core/error.h"

namespace ts {
namespace {

struct HandleDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using Handle = std::unique_ptr<void, HandleDeleter>;

tjhandle thread_compressor() {
  thread_local Handle handle(tjInitCompress());
  if (!handle) throw RuntimeError("libjpeg-turbo: tjInitCompress failed (" + std::string(tjGetErrorStr2(nullptr)) + ")");
  return handle.get();
}

Handle& decompressor_slot() {
  thread_local Handle handle;
  return handle;
}

tjhandle thread_decompressor() {
  Handle& handle = decompressor_slot();
  if (!handle) handle.reset(tjInitDecompress());
  if (!handle) throw RuntimeError("libjpeg-turbo: tjInitDecompress failed (" + std::string(tjGetErrorStr2(nullptr)) + ")");
  return handle.get();
}

// A handle whose header read failed mid-file (libjpeg-turbo 2.1: "missing SOS marker") fails
// every later decode with "Invalid argument": after any error the thread starts a new one.
RuntimeError decode_error(tjhandle handle, const std::string& message) {
  const std::string text = message + " (" + tjGetErrorStr2(handle) + ")";
  decompressor_slot().reset();
  return RuntimeError(text);
}

int pixel_format(int channels) {
  if (channels == 1) return TJPF_GRAY;
  if (channels == 3) return TJPF_RGB;
  throw RuntimeError("JPEG images have 1 (grey) or 3 (RGB) channels, not " + std::to_string(channels));
}

}  // namespace

Image8 image_from_planes(const uint8_t* chw, int64_t channels, int64_t height, int64_t width) {
  Image8 image{static_cast<int>(width), static_cast<int>(height), static_cast<int>(channels), {}};
  image.pixels.resize(static_cast<size_t>(channels * height * width));
  const int64_t plane = height * width;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t p = 0; p < plane; ++p) image.pixels[static_cast<size_t>(p * channels + c)] = chw[c * plane + p];
  return image;
}

void planes_from_pixels(const uint8_t* hwc, int64_t channels, int64_t height, int64_t width, uint8_t* chw) {
  const int64_t plane = height * width;
  for (int64_t p = 0; p < plane; ++p)
    for (int64_t c = 0; c < channels; ++c) chw[c * plane + p] = hwc[p * channels + c];
}

std::vector<uint8_t> encode_jpeg(const Image8& image, int quality) {
  const int format = pixel_format(image.channels);
  if (image.width < 1 || image.height < 1 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * image.channels)
    throw RuntimeError("encode_jpeg: an image of " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                       "x" + std::to_string(image.channels) + " holds " + std::to_string(image.pixels.size()) + " bytes");
  if (quality < 1 || quality > 100)
    throw RuntimeError("encode_jpeg: quality " + std::to_string(quality) + " is outside [1, 100]");
  tjhandle handle = thread_compressor();
  unsigned char* jpeg = nullptr;
  unsigned long jpeg_size_bytes = 0;
  const int subsampling = image.channels == 1 ? TJSAMP_GRAY : TJSAMP_420;
  if (tjCompress2(handle, image.pixels.data(), image.width, 0, image.height, format, &jpeg, &jpeg_size_bytes,
                  subsampling, quality, 0) != 0) {
    if (jpeg) tjFree(jpeg);
    throw RuntimeError("libjpeg-turbo could not encode a " + std::to_string(image.width) + "x" +
                       std::to_string(image.height) + " image: " + tjGetErrorStr2(handle));
  }
  std::vector<uint8_t> out(jpeg, jpeg + jpeg_size_bytes);
  tjFree(jpeg);
  return out;
}

JpegSize jpeg_size(const uint8_t* bytes, size_t size, const std::string& where) {
  tjhandle handle = thread_decompressor();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle, bytes, static_cast<unsigned long>(size), &width, &height, &subsampling,
                          &colorspace) != 0)
    throw decode_error(handle, where + ": not a JPEG libjpeg-turbo can read");
  return {width, height, colorspace == TJCS_GRAY ? 1 : 3};
}

Image8 decode_jpeg(const uint8_t* bytes, size_t size, int channels, const std::string& where) {
  const int format = pixel_format(channels);
  const JpegSize dims = jpeg_size(bytes, size, where);
  // A header may claim up to 65535x65535 from a few hundred bytes: refuse before allocating.
  if (static_cast<int64_t>(dims.width) * dims.height > kMaxJpegPixels)
    throw RuntimeError(where + ": the JPEG header claims " + std::to_string(dims.width) + "x" +
                       std::to_string(dims.height) + " pixels, more than the " + std::to_string(kMaxJpegPixels) +
                       " a sample may have (a damaged or hostile file; shrink the image if it is real)");
  tjhandle handle = thread_decompressor();
  Image8 image{dims.width, dims.height, channels,
               std::vector<uint8_t>(static_cast<size_t>(dims.width) * dims.height * channels)};
  // TJFLAG_STOPONWARNING: a truncated or damaged JPEG is an error, not a grey-filled image.
  if (tjDecompress2(handle, bytes, static_cast<unsigned long>(size), image.pixels.data(), dims.width, 0,
                    dims.height, format, TJFLAG_STOPONWARNING) != 0)
    throw decode_error(handle, where + ": the JPEG does not decode");
  return image;
}

}  // namespace ts
