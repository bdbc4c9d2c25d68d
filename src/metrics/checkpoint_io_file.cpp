// See checkpoint_io_file.h.
#include "metrics/checkpoint_io_file.h"

#include "core/error.h"
#include "core/file_io.h"
#include "metrics/hdf5_file.h"

namespace ts {

void write_checkpoint_io_file(const std::string& path, const CheckpointIoRecord& r) {
  if (r.write_seconds.size() != r.read_seconds.size())
    throw RuntimeError("checkpoint io file " + path + ": write and read seconds differ in length");
  AtomicFile out(path);  // removes its temporary file if anything below throws
  {
    h5::File file = h5::File::create(out.temp_path());
    file.set_attr("schema", "trainscale-checkpoint-io/1");
    for (const auto& [key, text] : r.text) file.set_attr(key, text);
    for (const auto& [key, count] : r.counts) file.set_attr(key, count);
    for (const auto& [key, value] : r.reals) file.set_attr(key, value);
    h5::Group checkpoint = file.create_group("checkpoint");
    checkpoint.write("write_seconds", r.write_seconds).set_attr("units", "seconds");
    checkpoint.write("read_seconds", r.read_seconds).set_attr("units", "seconds");
    checkpoint.close();
    file.close();
  }
  out.commit();
}

}  // namespace ts
