// In-memory data sets and the readers that fill them. Pixels stay uint8 as stored on disk;
// the loader converts and normalises them per batch in its worker threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"

namespace ts {

enum class Split { train, test };

struct Dataset {
  std::string name;            // "fashion_mnist", "cifar10", "synthetic", ...
  Shape sample;                // per-sample (C,H,W) or (features)
  int64_t count = 0;           // samples
  int64_t classes = 0;         // > 0 for classification; 0 for regression
  std::vector<uint8_t> pixels; // (count, sample.numel()) raw bytes, or empty
  std::vector<float> values;   // (count, sample.numel()) floats (synthetic/regression), or empty
  std::vector<int32_t> labels; // (count) class ids, classification only
  std::vector<float> targets;  // (count, outputs) regression targets, or empty
  // Per-channel normalisation applied to pixels: x = (p/255 - mean[c]) / std[c].
  std::vector<float> mean, stddev;
};

// Readers. Each throws RuntimeError naming the file for a missing, truncated or malformed file
// (wrong magic, labels out of range, count mismatch between images and labels).
// Fashion-MNIST / MNIST IDX files, raw or .gz: <root>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]
Dataset read_idx_dataset(const std::string& root, Split split, const std::string& name);
// CIFAR-10 binary batches: <root>/data_batch_{1..5}.bin (train), <root>/test_batch.bin (test);
// each record is 1 label byte + 3072 pixel bytes (3x32x32, channel-major).
Dataset read_cifar10_dataset(const std::string& root, Split split);
// Fixed random tensors, no I/O (throughput runs): `count` samples of `sample` shape.
Dataset make_synthetic_dataset(const Shape& sample, int64_t classes, int64_t count, uint64_t seed);
// The single-neuron task: x ~ U[0,1), target = [x >= 0.5].
Dataset make_neuron_dataset(int64_t count, uint64_t seed);

}  // namespace ts
