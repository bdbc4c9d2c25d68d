// The data-reader fuzz targets (see fuzz_targets.h): IDX, CIFAR-10, records and JPEG files
// opened through the sample sources the trainer uses, over an in-memory Storage, then every sample
// read (hdf5: fuzz_hdf5_file.cpp).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/cifar_source.h"
#include "data/idx_source.h"
#include "data/jpeg_dir_source.h"
#include "data/records_source.h"
#include "fuzz_targets.h"
#include "memory_storage.h"

namespace ts::fuzz {
namespace {

constexpr const char* kRoot = "/fuzz";

void read_every_sample(const SampleSource& source) {
  const SampleSpec& spec = source.spec();
  std::vector<float> image(static_cast<size_t>(spec.sample.numel()));
  std::vector<float> targets(static_cast<size_t>(std::max<int64_t>(spec.outputs, 1)));
  int32_t label = 0;
  for (int64_t i = 0; i < source.count(); ++i) source.read(i, image.data(), &label, targets.data());
}

}  // namespace

// Input layout: byte 0 flags (bit 0: the images file is .gz, bit 1: the labels file is .gz),
// bytes 1..4 the images file's length n (little-endian, clamped to what is left), then n bytes
// of the images file, then the labels file (the rest).
void idx(const uint8_t* data, size_t size) {
  if (size < 5) return;
  const uint8_t flags = data[0];
  size_t images_size = size_t{data[1]} | size_t{data[2]} << 8 | size_t{data[3]} << 16 | size_t{data[4]} << 24;
  images_size = std::min(images_size, size - 5);
  const uint8_t* images = data + 5;
  const uint8_t* labels = images + images_size;
  MemoryStorage storage;
  storage.add(std::string(kRoot) + "/t10k-images-idx3-ubyte" + (flags & 1 ? ".gz" : ""),
              std::vector<uint8_t>(images, images + images_size));
  storage.add(std::string(kRoot) + "/t10k-labels-idx1-ubyte" + (flags & 2 ? ".gz" : ""),
              std::vector<uint8_t>(labels, data + size));
  try {
    read_every_sample(*open_idx_source(storage, kRoot, Split::test, "fashion_mnist", {{0.2860f}, {0.3530f}}));
  } catch (const ConfigError&) {
  } catch (const RuntimeError&) {
  }
}

void cifar(const uint8_t* data, size_t size) {
  MemoryStorage storage;
  storage.add(std::string(kRoot) + "/test_batch.bin", std::vector<uint8_t>(data, data + size));
  try {
    read_every_sample(*open_cifar10_source(storage, kRoot, Split::test,
                                           {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}}));
  } catch (const ConfigError&) {
  } catch (const RuntimeError&) {
  }
}

// The input is one JPEG file of a jpeg_dir tree (train/a/0.jpg and test/a/0.jpg), decoded and
// transformed for RGB training (random-resized crop + flip, several seeds) and grey evaluation
// (resize + centre crop). Seeds: small JPEGs made once with Pillow (baseline, progressive,
// grey, RGB, CMYK), kept as files; tests/fuzz/make_seeds.py does not rewrite them.
void jpeg_dir(const uint8_t* data, size_t size) {
  auto storage = std::make_shared<MemoryStorage>();
  storage->add(std::string(kRoot) + "/train/a/0.jpg", std::vector<uint8_t>(data, data + size));
  storage->add(std::string(kRoot) + "/test/a/0.jpg", std::vector<uint8_t>(data, data + size));
  JpegDirOptions options;
  options.root = kRoot;
  try {
    options.sample = Shape{3, 24, 24};
    const auto train = open_jpeg_dir_source(storage, options, Split::train);
    std::vector<float> image(3 * 24 * 24);
    int32_t label = 0;
    for (uint64_t seed = 0; seed < 4; ++seed) train->read_augmented(0, seed, image.data(), &label, nullptr);
    options.sample = Shape{1, 7, 5};
    read_every_sample(*open_jpeg_dir_source(storage, options, Split::test));
  } catch (const ConfigError&) {
  } catch (const RuntimeError&) {
  }
}

// Input layout: byte 0 flags (bit 0: an index file exists), bytes 1..4 the shard's length n
// (little-endian, clamped to what is left), then n bytes of the shard
// /fuzz/test-00000-of-00001.rec, then its index (the rest).
void records(const uint8_t* data, size_t size) {
  if (size < 5) return;
  size_t shard_size = size_t{data[1]} | size_t{data[2]} << 8 | size_t{data[3]} << 16 | size_t{data[4]} << 24;
  shard_size = std::min(shard_size, size - 5);
  const uint8_t* shard = data + 5;
  MemoryStorage storage;
  const std::string path = std::string(kRoot) + "/test-00000-of-00001.rec";
  storage.add(path, std::vector<uint8_t>(shard, shard + shard_size));
  if (data[0] & 1) storage.add(path + ".idx", std::vector<uint8_t>(shard + shard_size, data + size));
  try {
    read_every_sample(*open_records_source(storage, kRoot, Split::test, "fashion_mnist", 10, {{0.2860f}, {0.3530f}}));
  } catch (const ConfigError&) {
  } catch (const RuntimeError&) {
  }
}

}  // namespace ts::fuzz
