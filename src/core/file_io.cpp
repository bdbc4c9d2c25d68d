// Atomic whole-file writes and whole-file reads (see file_io.h).
#include "core/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ts {
namespace {

std::string errno_text() { return std::strerror(errno); }

// fsync of an open-able path (a file, or a directory opened O_DIRECTORY). File systems that
// cannot sync a directory say EINVAL: nothing more can be done there, so it is not an error.
void sync_path(const std::string& path, bool directory, const std::string& file_for_messages) {
  const int fd = ::open(path.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0)
    throw RuntimeError(file_for_messages + ": cannot open " + path + " to flush it to disk (" + errno_text() + ")");
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0 && !(directory && (saved == EINVAL || saved == EROFS)))
    throw RuntimeError(file_for_messages + ": fsync of " + path + " failed (" + std::strerror(saved) + ")");
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  temp_ = path_ + ".tmp-" + std::to_string(::getpid());
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  std::error_code ec;
  std::filesystem::remove(temp_, ec);  // whatever an unfinished writer left
}

void AtomicFile::write(std::string_view text) {
  std::ofstream out(temp_, std::ios::binary | std::ios::trunc);
  if (!out)
    throw RuntimeError(path_ + ": cannot create the temporary file " + temp_ + " (" + errno_text() +
                       "); check that the directory exists and is writable");
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw RuntimeError(path_ + ": writing the temporary file " + temp_ + " failed (disk full?)");
}

void AtomicFile::commit() {
  sync_path(temp_, false, path_);
  if (std::rename(temp_.c_str(), path_.c_str()) != 0)
    throw RuntimeError(path_ + ": cannot rename the finished temporary file " + temp_ + " into place (" +
                       errno_text() + ")");
  committed_ = true;
  std::string dir = std::filesystem::path(path_).parent_path().string();
  sync_path(dir.empty() ? "." : dir, true, path_);
}

void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RuntimeError(path + ": cannot read (" + errno_text() + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ts
