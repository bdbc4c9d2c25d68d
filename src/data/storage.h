// Where data files live, as seen by the sample sources: a `Storage` opens paths for
// random-access reads, a `RandomAccessFile` reads byte ranges of one of them. Byte-oriented on
// purpose: formats (IDX, CIFAR batches, ...) are parsed above it, so a new storage (network
// file systems, HTTP object storage with range GETs, node-local staging) is one class here and
// no format changes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ts {

// One open file. Reads are thread-safe (loader workers share one file) and exact: a read that
// cannot deliver every byte throws RuntimeError naming the path, the range and the OS error.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  virtual const std::string& path() const = 0;
  // Bytes in the file, fixed when it was opened.
  virtual int64_t size() const = 0;
  // Copies bytes [offset, offset + bytes) of the file into dst (bytes may be 0).
  virtual void read_at(int64_t offset, int64_t bytes, void* dst) const = 0;
};

// One entry of a directory listing.
struct StorageEntry {
  std::string name;        // the entry's name inside the directory (no '/')
  bool directory = false;  // a directory (object storage: a common prefix)
  int64_t size = 0;        // bytes of a file; 0 for a directory
  int64_t mtime_ns = 0;    // last modification (ns since the epoch); 0 where the storage has none
};

// A place that holds data files, e.g. the local POSIX file system.
class Storage {
 public:
  virtual ~Storage() = default;
  // The storage name of the run config (dataset.storage), for messages.
  virtual std::string name() const = 0;
  // True if `path` names an existing file or directory.
  virtual bool exists(const std::string& path) const = 0;
  // Opens an existing file; throws RuntimeError naming the path and the OS error. The file
  // stays usable after the Storage object is gone.
  virtual std::unique_ptr<RandomAccessFile> open(const std::string& path) const = 0;
  // The entries directly inside directory `dir`, sorted by name (byte order), without "." and
  // "..". Throws RuntimeError naming the directory if it cannot be listed.
  virtual std::vector<StorageEntry> list(const std::string& dir) const = 0;
};

// "dir/name" with exactly one '/' between them (storage paths are POSIX-style or URL paths).
std::string join_storage_path(const std::string& dir, const std::string& name);

// What make_storage needs: the storage's name (dataset.storage) and, for blob storage, the S3
// endpoint (dataset.endpoint; empty: AWS_ENDPOINT_URL). Credentials are never options: blob
// storage reads them from the environment (AWS_ACCESS_KEY_ID, ...), so no config, log or run
// file holds them.
struct StorageOptions {
  std::string name = "local";
  std::string endpoint;
  // blob: every request's deadline (data/blob_retry.h; dataset.blob_deadline_s, blob_min_kib_s).
  double blob_deadline_s = 30;
  double blob_min_kib_s = 16;
};

// Storage names this build can open (dataset.storage): local, nfs (a POSIX path on a network
// file system; checked and recorded by the trainer, data/file_system_type.h), blob.
std::vector<std::string> storage_names();
// The storage called options.name; throws ConfigError listing storage_names() for any other name.
std::unique_ptr<Storage> make_storage(const StorageOptions& options);

}  // namespace ts
