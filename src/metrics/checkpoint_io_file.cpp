// See checkpoint_io_file.h.
#include "metrics/checkpoint_io_file.h"

#include "core/error.h"
#include "metrics/hdf5_file.h"

namespace ts {

void write_checkpoint_io_file(const std::string& path, const CheckpointIoRecord& r) {
  if (r.write_seconds.size() != r.read_seconds.size())
    throw RuntimeError("checkpoint io file " + path + ": write and read seconds differ in length");
  h5::write_file(path, "trainscale-checkpoint-io/1", [&](h5::File& file) {
    for (const auto& [key, text] : r.text) file.set_attr(key, text);
    for (const auto& [key, count] : r.counts) file.set_attr(key, count);
    for (const auto& [key, value] : r.reals) file.set_attr(key, value);
    h5::Group checkpoint = file.create_group("checkpoint");
    checkpoint.write_series(
        {{"write_seconds", r.write_seconds, "seconds"}, {"read_seconds", r.read_seconds, "seconds"}});
  });
}

}  // namespace ts
