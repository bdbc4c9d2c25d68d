// The all-reduce benchmark file written by `trainscale bench allreduce --out FILE.h5`
// (schema trainscale-allreduce/1, DESIGN.md "Allreduce benchmark file"):
//   /                      attrs schema, world_size, mpi_flavor, mpi_version, mpi_tuning, hosts, buffers,
//                          shm_chunk_bytes, shm_buffers (the shm window the run asked for)
//   /allreduce/<algorithm>/{bytes, time_avg, time_min, time_max, algbw, busbw, wrong}
// 1-D datasets over message sizes; times in seconds, bandwidths in GB/s (1e9 bytes/s),
// wrong = wrong elements over all ranks (-1: check off). Written atomically (core/file_io.h).
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
  std::string mpi_tuning;  // the MPI library's tuning environment, "NAME=value; ..."
  std::string buffers = "private";  // where the messages lived: shared | private
  std::string hosts;  // the ranks' host names in rank order, comma-separated
  int64_t shm_chunk_bytes = 0;  // --shm-chunk-kb in bytes (dist.shm_chunk_kb of a run)
  int64_t shm_buffers = 0;      // --shm-buffers (dist.shm_buffers of a run)
  std::vector<AllreduceSeries> series;
};

void write_allreduce_file(const std::string& path, const AllreduceBenchResult& result);

}  // namespace ts
