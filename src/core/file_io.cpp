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

namespace fs = std::filesystem;

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
    throw RuntimeError(file_for_messages + ": fsync of " + path + " failed (" + io_error_text(saved, path) + ")");
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

void AtomicFile::write(std::string_view text) { write_whole_file(temp_, text, path_); }

std::string io_error_text(int error_number, const std::string& path) {
  std::string text = std::strerror(error_number);
  if (error_number == ENOSPC || error_number == EDQUOT) {
    const std::string parent = std::filesystem::path(path).parent_path().string();
    const std::string dir = parent.empty() ? std::string(".") : parent;
    text += error_number == ENOSPC ? ": the file system of " + dir + " is full"
                                   : ": the disk quota on the file system of " + dir + " is exhausted";
    text += "; free space there (df -h " + dir + ") or write to another directory (--out, or a campaign elsewhere)";
  }
  return text;
}

void write_whole_file(const std::string& path, std::string_view bytes, const std::string& for_file) {
  const std::string what = for_file.empty() ? path : for_file + ": its temporary file " + path;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw RuntimeError(what + ": cannot create (" + io_error_text(errno, path) +
                       "); check that the directory exists and is writable");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = n < 0 ? errno : ENOSPC;  // a write of 0 bytes: no room for more
      ::close(fd);
      throw RuntimeError(what + ": writing " + std::to_string(bytes.size()) + " bytes failed after " +
                         std::to_string(done) + " (" + io_error_text(saved, path) + ")");
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0)  // NFS and quotas may report a full disk only here
    throw RuntimeError(what + ": closing after writing " + std::to_string(bytes.size()) + " bytes failed (" +
                       io_error_text(errno, path) + ")");
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
  if (!in) throw RuntimeError(path + ": cannot read (" + (errno != 0 ? errno_text() : "it cannot be opened") + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// What a path that is neither a directory nor a regular file is, for the refusal.
std::string special_file_kind(const fs::file_status& st, const std::string& path) {
  switch (st.type()) {
    case fs::file_type::fifo: return "a FIFO (named pipe)";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character:
      return path == "/dev/null" ? "a character device (it reads as an empty file)" : "a character device";
    default: return "not a regular file";
  }
}

}  // namespace

std::string read_config_text(const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) {
    throw ConfigError(path + ": cannot open the " + what + " (" + ec.message() + "); check the path");
  }
  if (fs::is_directory(st)) throw ConfigError(path + ": is a directory, not a " + what + "; give the YAML file");
  if (!fs::is_regular_file(st))
    throw ConfigError(path + ": is not a regular file (" + special_file_kind(st, path) + "), so not a " + what +
                      "; give the YAML file");
  const auto size = fs::file_size(path, ec);
  if (!ec && static_cast<int64_t>(size) > kMaxConfigFileBytes)
    throw ConfigError(path + ": " + std::to_string(size) + " bytes is too large for a " + what + "; a " + what + " may be at most " +
                      std::to_string(kMaxConfigFileBytes) + " bytes (" + std::to_string(kMaxConfigFileBytes >> 20) +
                      " MiB); is this the right file?");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open the " + what + " (" + errno_text() + ")");
  std::string text;
  text.resize(static_cast<size_t>(ec ? 0 : size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

}  // namespace ts
