// Which file system holds a path: `dataset.storage: nfs` expects a network (or FUSE network)
// mount and warns when the path is local, and every POSIX run records the file system it read,
// so a "storage" comparison can tell a real NFS mount from a directory that only has the name.
#pragma once

#include <string>

namespace ts {

struct FileSystemType {
  // The mount's type as the kernel lists it (/proc/self/mounts), e.g. "ext4", "tmpfs", "nfs4",
  // "fuse.sshfs"; the statfs magic in hex ("0x6969") when the mount table does not name it.
  std::string name;
  // statfs(2) f_type is a network or FUSE file system: NFS, CIFS/SMB, AFS, Ceph, Lustre,
  // GPFS, 9p, FUSE (sshfs, s3fs, gcsfuse, ...).
  bool network = false;
};

// The file system of existing `path`; RuntimeError naming the path when statfs fails.
FileSystemType file_system_type(const std::string& path);

}  // namespace ts
