// Whole-file I/O with one rule: a file that exists under its final name is complete. Every
// writer of a result, marker or manifest goes through AtomicFile: the content is written to a
// temporary name in the same directory, flushed to disk (fsync), renamed over the final name
// (atomic within one file system), and the directory entry is flushed too, so neither a crash
// nor a reader ever sees a half-written file. Errors are RuntimeError naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ts {

// One atomic replacement of `path`. Writers that produce the file themselves (HDF5) write to
// temp_path() and call commit(); a destroyed AtomicFile that was not committed removes its
// temporary file, so an error mid-write leaves nothing behind.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& path() const { return path_; }
  // "<path>.tmp-<pid>": in the same directory, so the rename stays within one file system.
  const std::string& temp_path() const { return temp_; }
  // Writes `text` to the temporary file (replacing what it held).
  void write(std::string_view text);
  // fsync(temporary) + rename(temporary, path) + fsync(directory of path). The temporary file
  // must be complete and closed.
  void commit();

 private:
  std::string path_, temp_;
  bool committed_ = false;
};

// `text` into `path` atomically (AtomicFile).
void write_file_atomically(const std::string& path, std::string_view text);
// Writes `bytes` to `path` (created or truncated) with checked write(2)/close(2) calls; on
// failure a RuntimeError naming `path`, the system's reason ("No space left on device") and,
// for a full disk or quota, what to do. `for_file` names the file the bytes are for in the
// message (the final name of an AtomicFile's temporary; "" when it is `path` itself).
void write_whole_file(const std::string& path, std::string_view bytes, const std::string& for_file = "");
// " (No space left on device): the file system of DIR is full; free space there or write
// elsewhere" for `error_number`, naming the directory of `path`; the plain reason otherwise.
std::string io_error_text(int error_number, const std::string& path);
// The whole file; RuntimeError naming it when it cannot be read.
std::string read_text_file(const std::string& path);

// The largest input file a person writes (run config, sweep, site, cluster file): 1 MiB, far
// above any real one (the biggest shipped is a few KiB) and small enough that YAML parses it in
// well under a second (a 17 MB file of a million keys took 50 s and 1.2 GB before its error).
inline constexpr int64_t kMaxConfigFileBytes = int64_t{1} << 20;
// A file a person gives as `what` ("run config", "sweep file", ...), whole. ConfigError (exit 2)
// naming it, with the system's reason, when it is missing or unreadable ("Permission denied"),
// not a regular file (a directory, a FIFO, /dev/zero: they would block or never end) or larger
// than kMaxConfigFileBytes; the size is checked before anything is read.
std::string read_config_text(const std::string& path, const std::string& what);

}  // namespace ts
