// MNIST-style IDX files (Fashion-MNIST, MNIST) as a SampleSource:
//   <root>/{train,t10k}-images-idx3-ubyte[.gz]  magic 0x00000803, dims (count, rows, cols), pixels
//   <root>/{train,t10k}-labels-idx1-ubyte[.gz]  magic 0x00000801, dims (count), labels 0..9
// Raw files are read per sample (one read of rows*cols bytes and one of the label byte);
// .gz files are inflated at open (gzip_file.h). Headers, sizes and labels are checked at open.
#pragma once

#include <memory>
#include <string>

#include "data/pixel_normaliser.h"
#include "data/sample_source.h"
#include "data/storage.h"

namespace ts {

// Opens one split; samples are (1, rows, cols) images with labels in 0..9. Prefers the .gz
// file when both exist. `name` is the data set's name for messages and describe().
// Throws RuntimeError naming the file for a missing, truncated or malformed file (wrong magic,
// implausible dimensions, a size that disagrees with the header, labels out of range, images
// and labels that disagree in count).
std::unique_ptr<SampleSource> open_idx_source(const Storage& storage, const std::string& root, Split split,
                                              const std::string& name, const Normalisation& stats);

}  // namespace ts
