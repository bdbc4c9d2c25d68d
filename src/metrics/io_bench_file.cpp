// See io_bench_file.h.
#include "metrics/io_bench_file.h"

#include "core/error.h"
#include "metrics/hdf5_file.h"

namespace ts {

void write_io_bench_file(const std::string& path, const IoBenchResult& r) {
  const size_t n = r.cache.size();
  for (size_t m : {r.samples_per_s.size(), r.mb_per_s.size(), r.seconds.size(), r.read_seconds.size(),
                   r.open_seconds.size(), r.read_bytes.size()})
    if (m != n)
      throw RuntimeError("io bench file " + path + ": the /io arrays differ in length (" + std::to_string(n) +
                         " repeats in /io/cache)");
  h5::write_file(path, "trainscale-io/1", [&](h5::File& file) {
    for (const auto& [key, text] : r.text) file.set_attr(key, text);
    for (const auto& [key, count] : r.counts) file.set_attr(key, count);
    h5::Group config = file.create_group("config");
    for (const auto& [key, value] : r.config) config.set_attr(key, value);
    h5::Group io = file.create_group("io");
    io.write_strings("cache", r.cache);
    io.write_series({{"samples_per_s", r.samples_per_s, "samples/s"},
                     {"mb_per_s", r.mb_per_s, "MB/s (1e6 bytes/s read from storage)"},
                     {"seconds", r.seconds, "seconds"}, {"read_bytes", r.read_bytes, "bytes"},
                     {"read_seconds", r.read_seconds, "seconds (summed over loader threads)"},
                     {"open_seconds", r.open_seconds, "seconds"}});
  });
}

}  // namespace ts
