// Node-local staging (dataset.stage: node_local): the data set's directory is copied from its
// storage to node-local scratch once, and the run reads the copy. What is copied is the whole
// tree under dataset.root (every format keeps a data set's files there), read through the
// source Storage, so any storage (local, nfs, blob) can be staged. The copy goes to a temp
// directory and is renamed into place after its completion stamp is written; the stamp lists
// every source file's path, size and mtime, so a later run on the node reuses a copy that still
// matches and copies again when the source changed. No MPI here: train/ picks the rank that
// stages (the node's first) and makes the others wait.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/storage.h"

namespace ts {

struct StageResult {
  std::string root;      // the staged copy, to read with the local storage
  bool reused = false;   // a complete copy of the same source files was there already
  int64_t files = 0;     // files in the data set's tree
  int64_t bytes = 0;     // their bytes (copied, unless reused)
};

// Where `root` of storage `source_name` is staged under `stage_dir`:
// <stage_dir>/trainscale-stage/<last path part of root>-<12 hex digits of SHA-256(storage, root)>.
std::string staged_root(const std::string& source_name, const std::string& root, const std::string& stage_dir);

// Copies (or reuses) the tree under `root` of `source` into staged_root(...). RuntimeError
// naming the file for a failed read or write (a full scratch disk included); nothing partial
// is ever left under the final name.
StageResult stage_tree(const Storage& source, const std::string& root, const std::string& stage_dir);

// Every file under `root` (recursively, sorted), as storage paths, with size and mtime.
struct TreeFile {
  std::string path;      // storage path of the file
  std::string relative;  // path below root
  int64_t size = 0, mtime_ns = 0;
};
// Each directory of a POSIX tree is read once: a symlink loop, a second link to a directory, or a
// directory link out of the root is a RuntimeError naming the link.
std::vector<TreeFile> list_tree(const Storage& storage, const std::string& root);

}  // namespace ts
