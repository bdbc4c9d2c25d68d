// The page cache of the data files before a run (dataset.cache): `cold` drops it
// (posix_fadvise(POSIX_FADV_DONTNEED) per file: no root needed; the kernel drops clean pages,
// on NFS and FUSE mounts the client's cached pages), `warm` reads every file once so the first
// steps read from memory. Either way the run file says what was done and whether it worked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/node_stage.h"
#include "data/storage.h"

namespace ts {

struct CacheResult {
  int64_t files = 0, bytes = 0;
  bool ok = true;
  // One line for the run file: "dropped 4 files (31.2 MB)", "read 4 files (31.2 MB)",
  // "failed: <file>: <error>", "not applicable: storage blob has no page cache here".
  std::string note;
};

// posix_fadvise(POSIX_FADV_DONTNEED) on every file (POSIX paths). A failure is reported in the
// result (ok false, the file and the error), not thrown: the run goes on, and says so.
CacheResult drop_page_cache(const std::vector<TreeFile>& files);

// Reads every file once through `storage`. RuntimeError naming the file when a read fails.
CacheResult warm_page_cache(const Storage& storage, const std::vector<TreeFile>& files);

// Pages of `path` resident in the page cache (mincore over an mmap of the file); -1 when it
// cannot be told. For tests and bench io.
int64_t resident_pages(const std::string& path);

}  // namespace ts
