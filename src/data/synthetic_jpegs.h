// A synthetic ImageNet-shaped JPEG set for decode and input-pipeline throughput work at
// realistic image sizes (`trainscale data make-synthetic-jpeg`, datasets/synthetic_imagenet.yaml):
// ROOT/{train,val}/<class>/<class>_<i>.jpg, images of about 500x375 (widths 400..600, heights
// 300..450, one in five portrait), each a function of (seed, split, class, index) alone.
// The class signal is learnable: every class has its own base colour and an oriented sine
// grating of its own frequency and channel mix; every image adds its own phase, colour jitter
// and per-pixel noise. The bytes are deterministic for a given libjpeg-turbo version.
#pragma once

#include <cstdint>
#include <string>

#include "data/jpeg_codec.h"

namespace ts {

struct SyntheticJpegOptions {
  std::string out;            // the folder to create (ROOT)
  int classes = 100;          // folders c000, c001, ... (wider numbers from 1000 classes on)
  int per_class = 30;         // training images per class
  int val_per_class = 5;      // validation images per class
  uint64_t seed = 1;
  int quality = 90;           // JPEG quality 1..100
};

struct SyntheticJpegSummary {
  int64_t images = 0, bytes = 0;
  std::string tree_sha256;  // SHA-256 over "<relative path>\n<file bytes>" of every file, in order
};

// The pixels of image `index` of `class_id` in `split` ("train" or "val"); (H,W,3).
Image8 synthetic_jpeg_image(const SyntheticJpegOptions& options, const std::string& split, int class_id, int64_t index);

// Writes the whole set. Throws ConfigError for counts < 1 (classes up to 100000) or a quality
// outside 1..100, RuntimeError naming the file for a write that fails.
SyntheticJpegSummary make_synthetic_jpegs(const SyntheticJpegOptions& options);

}  // namespace ts
