// The local file system as a Storage: open(2) once, pread(2) per read, so concurrent readers
// need no lock and no shared file offset.
#pragma once

#include <memory>
#include <string>

#include "data/storage.h"

namespace ts {

class PosixStorage final : public Storage {
 public:
  std::string name() const override { return "local"; }
  bool exists(const std::string& path) const override;
  std::unique_ptr<RandomAccessFile> open(const std::string& path) const override;
  std::vector<StorageEntry> list(const std::string& dir) const override;
};

}  // namespace ts
