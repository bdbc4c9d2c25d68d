// flock(2) advisory locks (see file_lock.h).
#include "core/file_lock.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/error.h"

namespace ts {

FileLock FileLock::try_lock(const std::string& path) {
  FileLock lock;
  lock.path_ = path;
  lock.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0)
    throw RuntimeError("lock file " + path + ": cannot open (" + std::strerror(errno) +
                       "); check that the directory exists and is writable");
  int rc;
  do {
    rc = ::flock(lock.fd_, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) {
    lock.result_ = Result::acquired;
  } else if (errno == EWOULDBLOCK) {
    lock.result_ = Result::held;
  } else {
    lock.result_ = Result::unsupported;
    lock.note_ = std::string("flock failed: ") + std::strerror(errno);
  }
  if (!lock.acquired()) {  // nothing to hold: do not keep the descriptor
    ::close(lock.fd_);
    lock.fd_ = -1;
  }
  return lock;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

FileLock::FileLock(FileLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), result_(other.result_), path_(std::move(other.path_)), note_(std::move(other.note_)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    result_ = other.result_;
    path_ = std::move(other.path_);
    note_ = std::move(other.note_);
  }
  return *this;
}

}  // namespace ts
