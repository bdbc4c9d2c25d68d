// The room of a FAILED marker, reserved at the start of a run (see marker_reserve.h).
#include "core/marker_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

namespace ts {
namespace {

// Writes all of [data, data + bytes) at `offset`; false on any error.
bool write_all(int fd, const char* data, size_t bytes, off_t offset) {
  for (size_t done = 0; done < bytes;) {
    const ssize_t put = ::pwrite(fd, data + done, bytes - done, offset + static_cast<off_t>(done));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    done += static_cast<size_t>(put);
  }
  return true;
}

}  // namespace

std::string marker_reserve_path(const std::string& marker_path) {
  const std::filesystem::path p(marker_path);
  return (p.parent_path() / ("." + p.filename().string() + ".reserve")).string();
}

MarkerReserve::MarkerReserve(const std::string& marker_path) : path_(marker_reserve_path(marker_path)) {
  std::remove(path_.c_str());  // a killed run's: made again, so that it is whole
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  int error = errno;
  if (fd >= 0) {
    const std::string block(static_cast<size_t>(kMarkerReserveBytes), '\n');  // written: the blocks are the file's
    const bool ok = write_all(fd, block.data(), block.size(), 0) && ::fsync(fd) == 0;
    error = errno;
    ::close(fd);
    if (ok) {
      owner_ = true;
      return;
    }
    std::remove(path_.c_str());
  }
  std::cerr << "trainscale run: note: cannot reserve room for a FAILED marker (" << path_ << ": "
            << std::strerror(error) << "); on a full disk the failure may go unrecorded\n";
}

MarkerReserve::~MarkerReserve() {
  if (owner_) std::remove(path_.c_str());  // gone already when a marker was written into it
}

bool write_through_reserve(const std::string& marker_path, const std::string& text) {
  const std::string reserve = marker_reserve_path(marker_path);
  const int fd = ::open(reserve.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const size_t bytes = std::min(text.size(), static_cast<size_t>(kMarkerReserveBytes));
  // Rewriting blocks the file already has and shrinking it need no new ones; the rename neither.
  const bool ok = write_all(fd, text.data(), bytes, 0) && ::ftruncate(fd, static_cast<off_t>(bytes)) == 0 &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (ok && std::rename(reserve.c_str(), marker_path.c_str()) == 0) return true;
  std::remove(reserve.c_str());  // its room, freed for one more ordinary try
  return false;
}

}  // namespace ts
