// file_system_type (see file_system_type.h): statfs(2) decides "network", the mount table
// gives the name (FUSE mounts all share one magic; the table says fuse.sshfs).
#include "data/file_system_type.h"

#include <sys/vfs.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ts {
namespace {

// f_type values of network and FUSE file systems (linux/magic.h and the file systems' sources).
constexpr int64_t kNetworkMagics[] = {
    0x6969,       // NFS_SUPER_MAGIC
    0x65735546,   // FUSE_SUPER_MAGIC (sshfs, s3fs, gcsfuse, ...)
    0xff534d42,   // CIFS_SUPER_MAGIC
    0xfe534d42,   // SMB2_SUPER_MAGIC
    0x517b,       // SMB_SUPER_MAGIC
    0x5346414f,   // AFS_FS_MAGIC
    0x00c36400,   // CEPH_SUPER_MAGIC
    0x0bd00bd0,   // Lustre
    0x47504653,   // GPFS
    0x01021997,   // V9FS_MAGIC (9p)
    0x6e667364,   // NFSD_MAGIC
};

// "\040" in /proc/self/mounts is a space (the kernel escapes blanks in mount points).
std::string unescape_mount_field(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The type of the longest mount point that contains `real_path`; "" when none matches.
std::string mount_table_type(const std::string& real_path) {
  std::ifstream mounts("/proc/self/mounts");
  std::string line, best_type;
  size_t best_length = 0;
  while (std::getline(mounts, line)) {
    std::istringstream fields(line);
    std::string device, mount_point, type;
    if (!(fields >> device >> mount_point >> type)) continue;
    mount_point = unescape_mount_field(mount_point);
    const bool contains = real_path == mount_point || mount_point == "/" ||
                          (real_path.compare(0, mount_point.size(), mount_point) == 0 &&
                           real_path.size() > mount_point.size() && real_path[mount_point.size()] == '/');
    if (contains && mount_point.size() >= best_length) {  // later lines mount over earlier ones
      best_length = mount_point.size();
      best_type = type;
    }
  }
  return best_type;
}

}  // namespace

FileSystemType file_system_type(const std::string& path) {
  struct statfs info {};
  if (::statfs(path.c_str(), &info) != 0)
    throw RuntimeError("data path " + path + ": cannot tell its file system (statfs: " + std::strerror(errno) + ")");
  FileSystemType out;
  const auto magic = static_cast<int64_t>(static_cast<uint32_t>(info.f_type));
  for (int64_t m : kNetworkMagics) out.network = out.network || magic == m;
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real)) out.name = mount_table_type(real);
  if (out.name.empty()) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(magic));
    out.name = hex;
  }
  return out;
}

}  // namespace ts
