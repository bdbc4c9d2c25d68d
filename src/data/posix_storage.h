// The local file system as a Storage: open(2) once, pread(2) per read, so concurrent readers
// need no lock and no shared file offset.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "data/storage.h"

namespace ts {

// The same class serves "local" and "nfs" (a network mount is a POSIX path too); only the name
// differs, and with it what the trainer checks and records (data/file_system_type.h).
class PosixStorage final : public Storage {
 public:
  // `name`: the dataset.storage name it serves ("local", or "nfs": the same calls on a mount).
  explicit PosixStorage(std::string name = "local") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  bool exists(const std::string& path) const override;
  std::unique_ptr<RandomAccessFile> open(const std::string& path) const override;
  std::vector<StorageEntry> list(const std::string& dir) const override;

 private:
  std::string name_;
};

}  // namespace ts
