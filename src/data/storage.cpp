// The storage registry (storage.h): which names dataset.storage may take in this build.
// A new storage (nfs, http, staged) adds its class beside posix_storage and a name here.
#include "data/storage.h"

#include "core/error.h"
#include "data/posix_storage.h"

namespace ts {

std::string join_storage_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::vector<std::string> storage_names() { return {"local", "nfs"}; }

std::unique_ptr<Storage> make_storage(const std::string& name) {
  if (name == "local") return std::make_unique<PosixStorage>();
  if (name == "nfs") return std::make_unique<PosixStorage>("nfs");
  throw ConfigError("dataset.storage '" + name +
                    "' is not a storage this build can read; accepted: local (the POSIX file "
                    "system; dataset.root is a path on it), nfs (a path on a network mount)");
}

}  // namespace ts
