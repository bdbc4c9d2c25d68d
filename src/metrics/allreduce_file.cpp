// See allreduce_file.h.
#include "metrics/allreduce_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "metrics/hdf5_file.h"

namespace ts {

void write_allreduce_file(const std::string& path, const AllreduceBenchResult& result) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  try {
    h5::File file = h5::File::create(tmp);
    file.set_attr("schema", "trainscale-allreduce/1");
    file.set_attr("world_size", result.world_size);
    file.set_attr("mpi_flavor", result.mpi_flavor);
    file.set_attr("mpi_version", result.mpi_version);
    file.set_attr("hosts", result.hosts);
    file.set_attr("buffers", result.buffers);
    h5::Group top = file.create_group("allreduce");
    for (const AllreduceSeries& s : result.series) {
      h5::Group g = top.create_group(s.algorithm);
      g.write("bytes", s.bytes).set_attr("units", "bytes");
      g.write("time_avg", s.time_avg).set_attr("units", "seconds");
      g.write("time_min", s.time_min).set_attr("units", "seconds");
      g.write("time_max", s.time_max).set_attr("units", "seconds");
      g.write("algbw", s.algbw).set_attr("units", "GB/s");
      g.write("busbw", s.busbw).set_attr("units", "GB/s");
      g.write("wrong", s.wrong).set_attr("units", "elements");
    }
    top.close();
    file.close();
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw RuntimeError("all-reduce benchmark file " + path + ": cannot rename the finished temporary file " +
                         tmp + " into place (" + std::strerror(errno) + ")");
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

}  // namespace ts
