// Decoded images (Image8, H,W,C bytes) -> the model's input (C,H,W) normalised floats, for the
// image formats (jpeg_dir). Three transforms, with torchvision's semantics:
//   random_crop_flip  training: RandomResizedCrop(scale (0.08, 1), ratio (3/4, 4/3), 10 attempts,
//                     then a centre crop) + RandomHorizontalFlip(p = 0.5), drawn from a seed
//   centre_crop       evaluation: Resize(shorter side -> round(out / 0.875)) + CenterCrop(out)
//   resize            the whole image resized to the output (no crop; images already at the
//                     model's framing, e.g. Fashion-MNIST as JPEGs)
// Every transform is a window of the source image (SourceWindow) sampled once: bilinear with
// half-pixel centres (align_corners=False, as torch.nn.functional.interpolate and OpenCV's
// INTER_LINEAR), source coordinates clamped to the image, no antialiasing filter when
// shrinking (PIL's resize has one, so pixel values differ slightly from torchvision on PIL).
// Resize-then-crop is one resample of the equivalent window, the same pixels as two steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/jpeg_codec.h"
#include "data/pixel_normaliser.h"

namespace ts {

// The rectangle of the source image (in source pixels; may be fractional) that is resampled to
// the whole output, mirrored left-right when `flip`.
struct SourceWindow {
  double x = 0, y = 0, width = 0, height = 0;
  bool flip = false;
};

// torchvision RandomResizedCrop.get_params + RandomHorizontalFlip on a width x height image:
// integer crop boxes, the same sequence of draws (area, log-ratio, top, left; then the flip).
SourceWindow random_resized_crop_window(int width, int height, Rng& rng);
// Resize(round(out / crop_fraction)) + CenterCrop(out_height, out_width) as one window.
SourceWindow centre_crop_window(int width, int height, int out_height, int out_width, double crop_fraction = 0.875);
// The whole image.
SourceWindow whole_image_window(int width, int height);

// src (H,W,C) uint8 -> dst (C, out_height, out_width) floats: the window bilinearly resampled,
// then per channel (v / 255 - mean[c]) / stddev[c] (`stats` as PixelNormaliser: 0, 1 or C entries).
void resample_normalise(const Image8& src, const SourceWindow& window, int out_height, int out_width,
                        const Normalisation& stats, float* dst);

enum class ImageTransformKind { random_crop_flip, centre_crop, resize };
std::string image_transform_name(ImageTransformKind kind);

// One split's transform to a fixed output shape (C,H,W), C = the decoded image's channels.
class ImageTransform {
 public:
  // Throws RuntimeError for a non-positive output size or statistics that fit no channel count.
  ImageTransform(ImageTransformKind kind, int out_height, int out_width, Normalisation stats);
  ImageTransformKind kind() const { return kind_; }
  // image -> dst (image.channels, out_height, out_width); `augment_seed` draws the random crop
  // and flip (random_crop_flip only): the same seed gives the same output.
  void apply(const Image8& image, uint64_t augment_seed, float* dst) const;

 private:
  ImageTransformKind kind_;
  int out_height_, out_width_;
  Normalisation stats_;
};

}  // namespace ts
