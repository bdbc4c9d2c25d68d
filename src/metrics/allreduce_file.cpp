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
      g.write("bytes", s.bytes).set_attr("units", "bytes");
      for (const auto& [name, values] : {std::pair{"time_avg", &s.time_avg}, {"time_min", &s.time_min}, {"time_max", &s.time_max},
                                         {"call_min", &s.call_min}, {"call_max", &s.call_max}, {"call_stdev", &s.call_stdev}})
        g.write(name, *values).set_attr("units", "seconds");
      g.write("algbw", s.algbw).set_attr("units", "GB/s");
      g.write("busbw", s.busbw).set_attr("units", "GB/s");
      g.write("wrong", s.wrong).set_attr("units", "elements");
    }
  });
}

}  // namespace ts
