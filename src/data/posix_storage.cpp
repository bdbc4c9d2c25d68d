// PosixStorage and its file (see posix_storage.h).
#include "data/posix_storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/preemption_signal.h"

namespace ts {
namespace {

std::string os_error(int errnum) { return std::strerror(errnum); }

class PosixFile final : public RandomAccessFile {
 public:
  PosixFile(std::string path, int fd, int64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixFile() override { ::close(fd_); }
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  const std::string& path() const override { return path_; }
  int64_t size() const override { return size_; }

  void read_at(int64_t offset, int64_t bytes, void* dst) const override {
    if (offset < 0 || bytes < 0 || offset + bytes > size_)
      throw RuntimeError("data file " + path_ + ": read of bytes [" + std::to_string(offset) + ", " +
                         std::to_string(offset + bytes) + ") lies outside the file's " +
                         std::to_string(size_) + " bytes");
    auto* out = static_cast<char*>(dst);
    int64_t done = 0;
    while (done < bytes) {  // pread may return fewer bytes than asked (signals, large reads)
      const ssize_t got = ::pread(fd_, out + done, static_cast<size_t>(bytes - done),
                                  static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0)
        throw RuntimeError("data file " + path_ + ": read of " + std::to_string(bytes) +
                           " bytes at offset " + std::to_string(offset) + " failed (" +
                           os_error(errno) + ")");
      if (got == 0)
        throw RuntimeError("data file " + path_ + ": ends at byte " + std::to_string(offset + done) +
                           " while reading " + std::to_string(bytes) + " bytes at offset " +
                           std::to_string(offset) + " (the file shrank after it was opened)");
      done += got;
    }
  }

 private:
  std::string path_;
  int fd_;
  int64_t size_;
};

}  // namespace

bool PosixStorage::exists(const std::string& path) const {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::unique_ptr<RandomAccessFile> PosixStorage::open(const std::string& path) const {
  // O_NONBLOCK: opening a FIFO without a writer would block for ever; it is refused below. On a
  // regular file the flag changes nothing.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw RuntimeError("data file " + path + ": cannot open it (" + os_error(errno) + ")");
  struct stat st {};
  const int stat_error = ::fstat(fd, &st) != 0 ? errno : 0;
  if (stat_error != 0 || !S_ISREG(st.st_mode)) {
    // Never the text of a stale errno ("Success"): fstat's own error, else the file's type.
    const std::string why = stat_error != 0        ? "fstat: " + os_error(stat_error)
                            : S_ISDIR(st.st_mode)  ? "it is a directory"
                            : S_ISFIFO(st.st_mode) ? "it is a FIFO (named pipe), not a regular file"
                            : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "it is a device, not a regular file"
                            : S_ISSOCK(st.st_mode) ? "it is a socket, not a regular file"
                                                   : "it is not a regular file";
    ::close(fd);
    throw RuntimeError("data file " + path + ": cannot read it as a file (" + why + ")");
  }
  return std::make_unique<PosixFile>(path, fd, static_cast<int64_t>(st.st_size));
}

std::vector<StorageEntry> PosixStorage::list(const std::string& dir) const {
  std::unique_ptr<DIR, int (*)(DIR*)> handle(::opendir(dir.c_str()), ::closedir);
  if (!handle) throw RuntimeError("data directory " + dir + ": cannot list it (" + os_error(errno) + ")");
  std::vector<StorageEntry> entries;
  for (;;) {
    errno = 0;  // readdir returns null both at the end and on an error; errno tells them apart
    const dirent* d = ::readdir(handle.get());
    if (!d) break;
    stop_if_signalled_during_startup(
        [&] { return "listing data directory " + dir + ", " + std::to_string(entries.size()) + " entries so far"; });
    const std::string name = d->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    const std::string path = join_storage_path(dir, name);
    if (::stat(path.c_str(), &st) != 0) continue;  // removed while listing, or a dangling link
    const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    entries.push_back({name, S_ISDIR(st.st_mode), S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : 0, mtime_ns});
  }
  if (errno != 0) throw RuntimeError("data directory " + dir + ": listing it failed (" + os_error(errno) + ")");
  std::sort(entries.begin(), entries.end(), [](const StorageEntry& a, const StorageEntry& b) { return a.name < b.name; });
  return entries;
}

}  // namespace ts
