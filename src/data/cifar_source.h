// CIFAR-10 binary batches as a SampleSource: <root>/data_batch_{1..5}.bin (train, in that
// order) or <root>/test_batch.bin (test), or the same inside <root>/cifar-10-batches-bin/.
// Each record is 1 label byte (0..9) + 3072 pixel bytes, channel-major (3x32x32), so read()
// is one read of one record. File sizes and every label are checked at open.
#pragma once

#include <memory>
#include <string>

#include "data/pixel_normaliser.h"
#include "data/sample_source.h"
#include "data/storage.h"

namespace ts {

// Throws RuntimeError naming the file for a missing file, a size that is not a positive
// multiple of the 3073-byte record, or a label outside 0..9.
std::unique_ptr<SampleSource> open_cifar10_source(const Storage& storage, const std::string& root, Split split,
                                                  const Normalisation& stats);

}  // namespace ts
