// The all-reduce benchmark file written by `trainscale bench allreduce --out FILE.h5`
// (schema trainscale-allreduce/1, docs/hdf5-schema.md "All-reduce benchmark file"):
//   /                      attrs schema, version, git_sha, start_time, end_time, world_size, mpi_flavor,
//                          mpi_version, mpi_tuning, hosts, buffers, shm_chunk_bytes, shm_buffers (the shm
//                          window the run asked for), iters, warmup, check, in_place
//   /allreduce/<algorithm>/{bytes, time_avg, time_min, time_max, call_min, call_max, call_stdev, algbw,
//                           busbw, wrong}
// 1-D datasets over message sizes; times in seconds, bandwidths in GB/s (1e9 bytes/s),
// wrong = wrong elements over all ranks (-1: check off). Written atomically (core/file_io.h).
// docs/hdf5-schema.md "All-reduce benchmark file".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ts {

struct AllreduceSeries {
  std::string algorithm;
  std::vector<int64_t> bytes;
  std::vector<double> time_avg, time_min, time_max;  // seconds per call across ranks
  // Over the timed calls of each call's slowest rank: min, max, standard deviation (seconds).
  std::vector<double> call_min, call_max, call_stdev;
  std::vector<double> algbw, busbw;                  // GB/s
  std::vector<int64_t> wrong;
};

struct AllreduceBenchResult {
  std::string version, git_sha;        // the trainscale that measured
  std::string start_time, end_time;    // ISO 8601 UTC, of the measurements
  int64_t iters = 0, warmup = 0;       // timed and untimed calls per size and algorithm
  int64_t check = 1;                   // 1: the wrong elements were counted; 0: --no-check
  int64_t in_place = 1;                // 1: every call reduced its buffer in place
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
