// `trainscale bench checkpoint`: checkpoint I/O as its own measurement, as MLPerf Storage
// (v3.0 on) measures it per storage system. A model of the zoo sets the size: its checkpoint's
// tensors as trainscale writes them (fp32 parameters, SGD momentum and the non-trainable state:
// resnet50 about 205 MB, vgg16 about 1.1 GB); the bytes are pseudo-random, so no compression or
// deduplication in the storage flatters it. Each repeat writes the object (durable on return),
// reads it back from the storage (page cache dropped, data/checkpoint_store.h), checks every
// byte (CRC-32C against what was written) and removes it. docs/data.md "Checkpoint I/O".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ts {

struct CheckpointBenchOptions {
  std::string model = "resnet50";
  std::string storage = "local";  // local, nfs, blob
  std::string root;               // a directory, or s3://BUCKET/PREFIX for blob
  std::string endpoint;           // blob: the S3 endpoint (empty: AWS_ENDPOINT_URL)
  int repeats = 3;
  uint64_t seed = 1;
};

struct CheckpointBenchResult {
  CheckpointBenchOptions options;
  std::string file_system;  // of the root: ext4, nfs4, tmpfs, ..., s3
  int64_t parameters = 0, state = 0, bytes = 0;
  std::vector<double> write_seconds, read_seconds;  // [repeats]
  double write_gbps = 0, read_gbps = 0;             // bytes / the median seconds, in 1e9 bytes per second
  std::string note;  // e.g. storage nfs on a local file system
};

// The checkpoint bytes of `model`: 4 x (2 x parameters + state). ConfigError for an unknown model.
int64_t checkpoint_bytes_of(const std::string& model, int64_t* parameters = nullptr, int64_t* state = nullptr);

// ConfigError for bad options (repeats < 1, unknown model or storage); RuntimeError naming the
// object for a failed write, read or a read that returned other bytes than were written.
CheckpointBenchResult run_checkpoint_bench(const CheckpointBenchOptions& options);

}  // namespace ts
