// See allreduce_file.h.
#include "metrics/allreduce_file.h"

#include "metrics/hdf5_file.h"

namespace ts {

void write_allreduce_file(const std::string& path, const AllreduceBenchResult& result) {
  h5::write_file(path, "trainscale-allreduce/1", [&](h5::File& file) {
    file.set_attr("version", result.version);
    file.set_attr("git_sha", result.git_sha);
    file.set_attr("start_time", result.start_time);
    file.set_attr("end_time", result.end_time);
    file.set_attr("iters", result.iters);
    file.set_attr("warmup", result.warmup);
    file.set_attr("check", result.check);
    file.set_attr("in_place", result.in_place);
    file.set_attr("world_size", result.world_size);
    file.set_attr("mpi_flavor", result.mpi_flavor);
    file.set_attr("mpi_version", result.mpi_version);
    file.set_attr("mpi_tuning", result.mpi_tuning);
    file.set_attr("hosts", result.hosts);
    file.set_attr("buffers", result.buffers);
    file.set_attr("shm_chunk_bytes", result.shm_chunk_bytes);
    file.set_attr("shm_buffers", result.shm_buffers);
    h5::Group top = file.create_group("allreduce");
    for (const AllreduceSeries& s : result.series) {
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
