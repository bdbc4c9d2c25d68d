// Dropping and warming the page cache of data files (see page_cache.h).
#include "data/page_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/preemption_signal.h"
#include "core/strings.h"

namespace ts {
namespace {

std::string size_text(int64_t bytes) { return format_number("%.1f MB", static_cast<double>(bytes) / 1e6); }

std::string files_text(const CacheResult& r) {
  return std::to_string(r.files) + " file" + (r.files == 1 ? "" : "s") + " (" + size_text(r.bytes) + ")";
}

// "read 1200 of 50000 files, stopped at the next": what a stopped pass had done.
std::string progress_text(const CacheResult& r, size_t total, const char* done) {
  return std::string(done) + " " + std::to_string(r.files) + " of " + std::to_string(total) + " files";
}

}  // namespace

CacheResult drop_page_cache(const std::vector<TreeFile>& files) {
  CacheResult r;
  for (const TreeFile& f : files) {
    stop_if_signalled_during_startup([&] { return "dataset.cache cold: " + progress_text(r, files.size(), "dropped"); });
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block it
    const int rc = fd < 0 ? errno : ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // returns the error
    if (fd >= 0) ::close(fd);
    if (rc != 0) {
      r.ok = false;
      r.note = "failed: " + f.path + ": " + std::strerror(rc);
      return r;
    }
    ++r.files;
    r.bytes += f.size;
  }
  r.note = "dropped " + files_text(r);
  return r;
}

CacheResult warm_page_cache(const Storage& storage, const std::vector<TreeFile>& files) {
  CacheResult r;
  std::vector<char> buffer(size_t{4} << 20);
  const auto stop_if_signalled = [&] {
    stop_if_signalled_during_startup([&] { return "dataset.cache warm: " + progress_text(r, files.size(), "read"); });
  };
  for (const TreeFile& f : files) {
    stop_if_signalled();
    const auto file = storage.open(f.path);
    for (int64_t offset = 0; offset < file->size();) {
      stop_if_signalled();  // a large file: between its 4 MiB reads
      const int64_t bytes = std::min<int64_t>(static_cast<int64_t>(buffer.size()), file->size() - offset);
      file->read_at(offset, bytes, buffer.data());
      offset += bytes;
    }
    ++r.files;
    r.bytes += file->size();
  }
  r.note = "read " + files_text(r);
  return r;
}

int64_t resident_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return st.st_size == 0 ? 0 : -1;
  }
  const size_t length = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return -1;
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> resident((length + static_cast<size_t>(page) - 1) / static_cast<size_t>(page));
  const int rc = ::mincore(map, length, resident.data());
  ::munmap(map, length);
  if (rc != 0) return -1;
  return std::count_if(resident.begin(), resident.end(), [](unsigned char v) { return (v & 1) != 0; });
}

}  // namespace ts
