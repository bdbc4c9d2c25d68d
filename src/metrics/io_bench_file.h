// The input-pipeline benchmark file written by `trainscale bench io --out FILE.h5` (schema
// trainscale-io/1, docs/hdf5-schema.md "Input benchmark file"):
//   /          attrs schema, version, git_sha, host, cpu_model, start_time, config (the resolved
//              run config as YAML), format, storage, file_system, loader_threads, batch, steps
//   /config    attrs: every resolved key flattened with dots, as the run file's /config
//   /io/{cache, samples_per_s, mb_per_s, seconds, read_bytes, read_seconds, open_seconds}
//              1-D over the timed repeats: cache is "cold" or "warm" (strings), MB = 1e6 bytes
// Written atomically (core/file_io.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts {

struct IoBenchResult {
  std::map<std::string, std::string> text;     // root string attributes (format, storage, ...)
  std::map<std::string, int64_t> counts;       // root int64 attributes (loader_threads, batch, steps)
  std::map<std::string, std::string> config;   // /config
  std::vector<std::string> cache;              // per timed repeat
  std::vector<double> samples_per_s, mb_per_s, seconds, read_seconds, open_seconds;
  std::vector<int64_t> read_bytes;
};

void write_io_bench_file(const std::string& path, const IoBenchResult& result);

}  // namespace ts
