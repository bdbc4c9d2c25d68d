// The storage registry (storage.h): which names dataset.storage may take in this build.
// A new storage (staged, ...) adds its class beside posix_storage and one line in registry().
#include "data/storage.h"

#include "core/error.h"
#include "data/blob_storage.h"
#include "data/posix_storage.h"

namespace ts {
namespace {

struct StorageKind {
  std::string name;
  std::string what;  // for the message listing the accepted names
  std::unique_ptr<Storage> (*make)(const StorageOptions&);
};

// One line per storage name.
const std::vector<StorageKind>& registry() {
  static const std::vector<StorageKind> kinds = {
      {"local", "the POSIX file system; dataset.root is a path on it",
       [](const StorageOptions&) -> std::unique_ptr<Storage> { return std::make_unique<PosixStorage>("local"); }},
      {"nfs", "a network file system mounted as a POSIX path; dataset.root is a path on it",
       [](const StorageOptions&) -> std::unique_ptr<Storage> { return std::make_unique<PosixStorage>("nfs"); }},
      {"blob", "object storage; dataset.root is http(s)://HOST[:PORT]/PREFIX or s3://BUCKET/PREFIX",
       [](const StorageOptions& o) -> std::unique_ptr<Storage> {
         BlobOptions blob = blob_options_from_environment(o.endpoint);
         blob.retry.deadline_base_s = o.blob_deadline_s;
         blob.retry.min_bytes_per_s = o.blob_min_kib_s * 1024.0;
         return std::make_unique<BlobStorage>(std::move(blob));
       }},
  };
  return kinds;
}

}  // namespace

std::string join_storage_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::vector<std::string> storage_names() {
  std::vector<std::string> names;
  for (const auto& kind : registry()) names.push_back(kind.name);
  return names;
}

std::unique_ptr<Storage> make_storage(const StorageOptions& options) {
  for (const auto& kind : registry())
    if (kind.name == options.name) return kind.make(options);
  std::string accepted;
  for (const auto& kind : registry()) accepted += (accepted.empty() ? "" : "; ") + kind.name + " (" + kind.what + ")";
  throw ConfigError("dataset.storage '" + options.name + "' is not a storage this build can read; accepted: " + accepted);
}

}  // namespace ts
