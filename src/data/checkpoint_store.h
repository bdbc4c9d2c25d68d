// Where `trainscale bench checkpoint` (train/checkpoint_bench.h) writes a checkpoint-sized
// object and reads it back: a directory of a POSIX file system (`local`, `nfs`: write(2) then
// fsync, so the bytes are on the storage when write returns) or an S3 prefix (`blob`: one PUT,
// acknowledged once stored). Reads come from the storage, not from this client's memory: POSIX
// stores drop the file's pages from the page cache first (posix_fadvise DONTNEED after the fsync;
// on NFS the client's pages), and object storage has no client cache. docs/data.md "Checkpoint I/O".
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/file_system_type.h"

namespace ts {

class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;
  // The storage name (local, nfs, blob) and where it writes ("/scratch/ckpt", "s3://bucket/ckpt").
  virtual std::string name() const = 0;
  virtual std::string root() const = 0;
  // Writes `bytes` bytes as object `key` (replacing it), durable on return.
  virtual void write(const std::string& key, const void* data, int64_t bytes) = 0;
  // Reads the whole object `key` (exactly `bytes` bytes) from the storage itself.
  virtual void read_from_storage(const std::string& key, void* dst, int64_t bytes) = 0;
  virtual void remove(const std::string& key) = 0;
  // The file system under a POSIX root ("ext4", "nfs4", "fuse.sshfs", ...; data/file_system_type.h),
  // {"s3", network} for blob.
  virtual FileSystemType file_system() const = 0;
};

// `storage`: local, nfs or blob; `root`: a directory (created) or s3://BUCKET/PREFIX;
// `endpoint`: blob's S3 endpoint (empty: AWS_ENDPOINT_URL). ConfigError for another storage, a
// root of the wrong kind (an s3:// root for local or nfs, a path for blob). An nfs root on a local file
// system is accepted; file_system() tells (the bench says so, as runs do).
std::unique_ptr<CheckpointStore> make_checkpoint_store(const std::string& storage, const std::string& root,
                                                       const std::string& endpoint);

}  // namespace ts
