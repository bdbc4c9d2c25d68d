// The sample-source interface: one split of a data set, read sample by sample by index. The
// loader's worker threads call read() inside the timed loop, so the trainer's data_wait
// measures the storage and the format behind it. A source decodes and normalises; it never
// holds a whole split in memory (the one exception, gzip files, is explained in gzip_file.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/shape.h"

namespace ts {

enum class Split { train, test };

// What one sample is: the image shape and its label or regression targets.
struct SampleSpec {
  Shape sample;         // per-sample (C,H,W) or (features)
  int64_t classes = 0;  // > 0: classification, one label in [0, classes) per sample
  int64_t outputs = 0;  // classes == 0: `outputs` float regression targets per sample
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual const SampleSpec& spec() const = 0;
  // Samples in this split.
  virtual int64_t count() const = 0;
  // For logs: format, location and samples, e.g. "idx /data/t10k-images-idx3-ubyte (10000 samples)".
  virtual std::string describe() const = 0;
  // True for formats that read faster in increasing index order (sharded record files); the
  // loader then reads each batch's samples in increasing index order (the batch is the same).
  virtual bool prefers_sequential() const { return false; }
  // Decodes and normalises sample `index` (0 <= index < count()):
  //   image   (sample.numel()) floats, normalised
  //   label   one class id, written when classes > 0 (may be null otherwise)
  //   targets (outputs) floats, written when classes == 0 (may be null otherwise)
  // Thread-safe; throws RuntimeError naming the file for an I/O or format error.
  virtual void read(int64_t index, float* image, int32_t* label, float* targets) const = 0;
  // As read(), for sources with random training augmentation (jpeg_dir: random-resized crop and
  // flip), which draw it from `augment_seed`. The loader derives it from (loader seed, epoch,
  // index): a sample gets the same augmentation in the same epoch whichever rank or thread reads
  // it, and a resumed run the same as the uninterrupted one. Other sources ignore it.
  virtual void read_augmented(int64_t index, uint64_t augment_seed, float* image, int32_t* label,
                              float* targets) const {
    (void)augment_seed;
    read(index, image, label, targets);
  }
  // The epoch's shuffled order for sources that define their own (records with a shuffle buffer:
  // an order that keeps reads near the stream position); `order` holds count() indices in
  // increasing order on entry. The same (seed, epoch) gives the same order on every rank.
  // Returns false to let the loader shuffle (Fisher-Yates from seed and epoch).
  virtual bool shuffled_order(uint64_t seed, int64_t epoch, std::vector<int64_t>& order) const {
    (void)seed, (void)epoch, (void)order;
    return false;
  }
  // The sample's stored pixels before normalisation, for `trainscale data convert` and the
  // format-equivalence tests: sample.numel() uint8 in (C,H,W) order, and its label. Sources of
  // stored uint8 images (idx, cifar_bin, records, hdf5) implement it; the others throw.
  virtual void read_pixels(int64_t index, uint8_t* pixels, int32_t* label) const {
    (void)index, (void)pixels, (void)label;
    throw RuntimeError(describe() + ": this source has no stored uint8 pixels to convert (it generates or "
                       "decodes its samples); convert from an idx, cifar_bin, records or hdf5 source");
  }
};

}  // namespace ts
