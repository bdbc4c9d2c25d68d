// The all-reduce benchmark file written by `trainscale bench allreduce --out FILE.h5`
// (schema trainscale-allreduce/1, DESIGN.md "Allreduce benchmark file"):
//   /                      attrs schema, world_size, mpi_flavor, mpi_version, hosts, buffers
//   /allreduce/<algorithm>/{bytes, time_avg, time_min, time_max, algbw, busbw, wrong}
// 1-D datasets over message sizes; times in seconds, bandwidths in GB/s (1e9 bytes/s),
// wrong = wrong elements over all ranks (-1: check off). Written to a temp name, then renamed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ts {

struct AllreduceSeries {
  std::string algorithm;
  std::vector<int64_t> bytes;
  std::vector<double> time_avg, time_min, time_max;  // seconds per call across ranks
  std::vector<double> algbw, busbw;                  // GB/s
  std::vector<int64_t> wrong;
};

struct AllreduceBenchResult {
  int64_t world_size = 1;
  std::string mpi_flavor, mpi_version;
  std::string buffers = "private";  // where the messages lived: shared | private
  std::string hosts;  // the ranks' host names in rank order, comma-separated
  std::vector<AllreduceSeries> series;
};

void write_allreduce_file(const std::string& path, const AllreduceBenchResult& result);

}  // namespace ts
