// The checkpoint I/O file written by `trainscale bench checkpoint --out FILE.h5` (schema
// trainscale-checkpoint-io/1, docs/hdf5-schema.md "Checkpoint I/O file"):
//   /            attrs schema, version, git_sha, host, cpu_model, start_time, end_time, model,
//                storage, root, file_system, note (strings); bytes, parameters, state, repeats,
//                seed (int64); write_gbps, read_gbps (float64, bytes / median seconds / 1e9)
//   /checkpoint/{write_seconds, read_seconds}   float64 [repeats]
// Written atomically (core/file_io.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts {

struct CheckpointIoRecord {
  std::map<std::string, std::string> text;  // root string attributes
  std::map<std::string, int64_t> counts;    // root int64 attributes
  std::map<std::string, double> reals;      // root float64 attributes
  std::vector<double> write_seconds, read_seconds;
};

void write_checkpoint_io_file(const std::string& path, const CheckpointIoRecord& record);

}  // namespace ts
