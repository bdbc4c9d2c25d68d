// train-internal: the data set made ready before the sources open it: node-local staging
// (dataset.stage), the page cache (dataset.cache), and the file system of a POSIX storage
// (dataset.storage nfs expects a network mount). The node's first rank stages and prepares the
// cache, the node's other ranks wait for it; all of it is recorded in the run file's /io.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/dataset_config.h"
#include "dist/communicator.h"

namespace ts {

struct InputPreparation {
  std::string root, storage;  // what the sources read: dataset.root, or the staged copy (local)
  double stage_seconds = 0;   // staging until every rank may read (0 without staging)
  std::vector<std::string> warnings;       // for the run log (rank 0)
  std::map<std::string, std::string> text; // /io string attributes
  std::map<std::string, double> numbers;   // /io float64 attributes
};

// Collective. RuntimeError when staging or warming failed on some rank (naming the file there);
// a failed cache drop is recorded, not thrown.
InputPreparation prepare_input(const DatasetConfig& dataset, Communicator& comm);

// dataset.stage_dir, or $TMPDIR, or /tmp.
std::string stage_dir_of(const DatasetConfig& dataset);

}  // namespace ts
