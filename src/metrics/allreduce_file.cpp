// See allreduce_file.h.
#include "metrics/allreduce_file.h"

#include "metrics/hdf5_file.h"

namespace ts {

void write_allreduce_file(const std::string& path, const AllreduceBenchResult& r) {
  h5::write_file(path, "trainscale-allreduce/1", [&](h5::File& file) {
    file.set_attrs({{"version", r.version}, {"git_sha", r.git_sha}, {"start_time", r.start_time},
                    {"end_time", r.end_time}, {"iters", r.iters}, {"warmup", r.warmup}, {"check", r.check},
                    {"in_place", r.in_place}, {"world_size", r.world_size}, {"mpi_flavor", r.mpi_flavor},
                    {"mpi_version", r.mpi_version}, {"mpi_tuning", r.mpi_tuning}, {"hosts", r.hosts},
                    {"buffers", r.buffers}, {"shm_chunk_bytes", r.shm_chunk_bytes}, {"shm_buffers", r.shm_buffers}});
    h5::Group top = file.create_group("allreduce");
    for (const AllreduceSeries& s : r.series) {
      h5::Group g = top.create_group(s.algorithm);
      g.write_series({{"bytes", s.bytes, "bytes"}, {"time_avg", s.time_avg, "seconds"},
                      {"time_min", s.time_min, "seconds"}, {"time_max", s.time_max, "seconds"},
                      {"call_min", s.call_min, "seconds"}, {"call_max", s.call_max, "seconds"},
                      {"call_stdev", s.call_stdev, "seconds"}, {"algbw", s.algbw, "GB/s"}, {"busbw", s.busbw, "GB/s"},
                      {"wrong", s.wrong, "elements"}});
    }
  });
}

}  // namespace ts
