// Checkpoint stores on POSIX file systems and object storage (see checkpoint_store.h).
#include "data/checkpoint_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "data/blob_storage.h"
#include "data/file_system_type.h"

namespace ts {
namespace {

[[noreturn]] void os_failure(const std::string& what, const std::string& path, int error) {
  throw RuntimeError("checkpoint store: " + what + " " + path + ": " + std::strerror(error) +
                     (error == ENOSPC || error == EDQUOT ? " (free space on it, or choose another --root)" : ""));
}

class PosixCheckpointStore final : public CheckpointStore {
 public:
  PosixCheckpointStore(std::string storage, std::string root) : storage_(std::move(storage)), root_(std::move(root)) {
    std::error_code ec;
    std::filesystem::create_directories(root_, ec);
    if (ec) throw ConfigError("--root " + root_ + ": cannot create the directory (" + ec.message() + ")");
  }
  std::string name() const override { return storage_; }
  std::string root() const override { return root_; }
  FileSystemType file_system() const override { return file_system_type(root_); }

  void write(const std::string& key, const void* data, int64_t bytes) override {
    const std::string path = root_ + "/" + key;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) os_failure("cannot create", path, errno);
    const auto* p = static_cast<const char*>(data);
    for (int64_t done = 0; done < bytes;) {
      const ssize_t n = ::write(fd, p + done, static_cast<size_t>(std::min<int64_t>(bytes - done, int64_t{1} << 30)));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int error = n < 0 ? errno : EIO;
        ::close(fd);
        os_failure("cannot write", path, error);
      }
      done += n;
    }
    const int synced = ::fsync(fd) == 0 ? 0 : errno;  // on the storage, not in this host's memory
    if (::close(fd) != 0 && synced == 0) os_failure("cannot close", path, errno);
    if (synced != 0) os_failure("cannot fsync", path, synced);
  }

  void read_from_storage(const std::string& key, void* dst, int64_t bytes) override {
    const std::string path = root_ + "/" + key;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) os_failure("cannot open", path, errno);
    // Clean pages (the write was fsynced) leave the page cache: the read below is the storage's.
    const int dropped = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (dropped != 0) {
      ::close(fd);
      os_failure("cannot drop the page cache of", path, dropped);
    }
    auto* p = static_cast<char*>(dst);
    for (int64_t done = 0; done < bytes;) {
      const ssize_t n = ::pread(fd, p + done, static_cast<size_t>(std::min<int64_t>(bytes - done, int64_t{1} << 30)), done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int error = n < 0 ? errno : EIO;
        ::close(fd);
        os_failure(n == 0 ? "short read (the file is shorter than written) of" : "cannot read", path, error);
      }
      done += n;
    }
    ::close(fd);
  }

  void remove(const std::string& key) override {
    const std::string path = root_ + "/" + key;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) os_failure("cannot remove", path, errno);
  }

 private:
  std::string storage_, root_;
};

class BlobCheckpointStore final : public CheckpointStore {
 public:
  BlobCheckpointStore(std::string root, const std::string& endpoint)
      : root_(std::move(root)), blob_(blob_options_from_environment(endpoint)) {
    while (!root_.empty() && root_.back() == '/') root_.pop_back();
  }
  std::string name() const override { return "blob"; }
  std::string root() const override { return root_; }
  FileSystemType file_system() const override { return {"s3", true}; }
  void write(const std::string& key, const void* data, int64_t bytes) override { blob_.put(root_ + "/" + key, data, bytes); }
  void read_from_storage(const std::string& key, void* dst, int64_t bytes) override {
    const auto file = blob_.open(root_ + "/" + key);
    if (file->size() != bytes)
      throw RuntimeError("checkpoint store: " + root_ + "/" + key + " holds " + std::to_string(file->size()) +
                         " bytes, " + std::to_string(bytes) + " were written");
    file->read_at(0, bytes, dst);
  }
  void remove(const std::string& key) override { blob_.remove(root_ + "/" + key); }

 private:
  std::string root_;
  BlobStorage blob_;
};

}  // namespace

std::unique_ptr<CheckpointStore> make_checkpoint_store(const std::string& storage, const std::string& root,
                                                       const std::string& endpoint) {
  const bool s3 = root.rfind("s3://", 0) == 0;
  if (storage == "blob") {
    if (!s3) throw ConfigError("--root " + root + ": storage blob writes to s3://BUCKET/PREFIX; give such a root");
    return std::make_unique<BlobCheckpointStore>(root, endpoint);
  }
  if (storage == "local" || storage == "nfs") {
    if (s3 || root.empty())
      throw ConfigError("--root '" + root + "': storage " + storage + " writes to a directory; give its path");
    return std::make_unique<PosixCheckpointStore>(storage, root);
  }
  throw ConfigError("--storage " + storage + ": not a checkpoint storage (accepted: local, nfs, blob)");
}

}  // namespace ts
