// Staging, page cache and file system of the run's data (see input_preparation.h).
#include "train/input_preparation.h"

#include <cstdlib>
#include <exception>

#include "core/error.h"
#include "core/preemption_signal.h"
#include "core/strings.h"
#include "core/timer.h"
#include "data/blob_storage.h"
#include "data/file_system_type.h"
#include "data/node_stage.h"
#include "data/page_cache.h"
#include "data/storage.h"

namespace ts {
namespace {

bool is_posix_storage(const std::string& name) { return name == "local" || name == "nfs"; }

// What the node's first rank does before the others may read: stage, then drop or warm.
void prepare_on_node(const DatasetConfig& d, InputPreparation& p) {
  if (d.stage == "node_local") {
    const StageResult staged = stage_tree(*make_storage({d.storage, d.endpoint, d.blob_deadline_s, d.blob_min_kib_s}), d.root, stage_dir_of(d));
    p.text["stage_result"] = std::string(staged.reused ? "reused" : "copied") + " " + std::to_string(staged.files) +
                             " files (" + std::to_string(staged.bytes) + " bytes)";
    p.numbers["stage_bytes"] = static_cast<double>(staged.bytes);
  }
  if (!is_posix_storage(p.storage)) {  // object storage: no page cache here to warm or drop
    p.text["cache_result"] = "not applicable: storage " + p.storage + " has no page cache on this node";
    return;
  }
  const auto storage = make_storage({p.storage, ""});
  if (!storage->exists(p.root)) {  // opening the data set says what is missing and what to do
    p.text["cache_result"] = "not applicable: " + p.root + " does not exist";
    return;
  }
  const std::vector<TreeFile> files = list_tree(*storage, p.root);
  CacheResult cache;
  cache = d.cache == "warm" ? warm_page_cache(*storage, files) : drop_page_cache(files);
  p.text["cache_result"] = cache.note;
  p.numbers["cache_ok"] = cache.ok ? 1.0 : 0.0;
  if (!cache.ok) p.warnings.push_back("dataset.cache cold: the page cache was not dropped (" + cache.note + ")");
}

// The file system of a POSIX storage's root; warns when nfs names a local directory.
void check_file_system(const DatasetConfig& d, InputPreparation& p) {
  if (!is_posix_storage(d.storage) || !make_storage({d.storage, ""})->exists(d.root)) return;
  const FileSystemType fs = file_system_type(d.root);
  p.text["file_system"] = fs.name;
  p.numbers["file_system_network"] = fs.network ? 1.0 : 0.0;
  if (d.storage == "nfs" && !fs.network)
    p.warnings.push_back("dataset.storage nfs: dataset.root " + d.root + " is on a " + fs.name +
                         " file system, not a network mount; the run reads local storage under the name nfs");
}

// s3:// roots: the S3 API the run reached and where that came from (dataset.endpoint, the
// environment's AWS_ENDPOINT_URL, or AWS's regional endpoint), so the run file says what it read.
void record_s3_endpoint(const DatasetConfig& d, InputPreparation& p) {
  if (d.storage != "blob" || d.root.rfind("s3://", 0) != 0) return;
  const BlobOptions o = blob_options_from_environment(d.endpoint);
  p.text["endpoint"] = o.endpoint.empty() ? "https://s3." + o.region + ".amazonaws.com" : o.endpoint;
  p.text["endpoint_source"] = !d.endpoint.empty() ? "dataset.endpoint" : !o.endpoint.empty() ? "AWS_ENDPOINT_URL" : "default";
}

// blob storage: the deadline every request had (data/blob_retry.h), set or by default.
void record_blob_deadline(const DatasetConfig& d, InputPreparation& p) {
  if (d.storage != "blob") return;
  p.numbers["blob_deadline_s"] = d.blob_deadline_s;
  p.numbers["blob_min_kib_s"] = d.blob_min_kib_s;
}

// Every node's staging result on rank 0, "host: copied N files (B bytes); host: ...", in the
// order of the nodes' first ranks: the run file shows that each node made its own copy.
std::string gather_stage_results(const InputPreparation& p, Communicator& comm) {
  const auto it = p.text.find("stage_result");
  const std::string mine = comm.local_rank() == 0 && it != p.text.end() ? comm.host() + ": " + it->second : "";
  std::vector<std::string> nodes;
  for (std::string& s : comm.gather_strings_to_root(mine))
    if (!s.empty()) nodes.push_back(std::move(s));
  return join(nodes, "; ");
}

}  // namespace

std::string stage_dir_of(const DatasetConfig& dataset) {
  if (!dataset.stage_dir.empty()) return dataset.stage_dir;
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir && *tmpdir ? tmpdir : "/tmp";
}

InputPreparation prepare_input(const DatasetConfig& d, Communicator& comm) {
  InputPreparation p;
  p.root = d.root;
  p.storage = d.storage;
  p.text["storage"] = d.storage;
  p.text["stage"] = d.stage;
  p.text["cache"] = d.cache;
  record_s3_endpoint(d, p);
  record_blob_deadline(d, p);
  if (d.format == "synthetic") {  // generated in memory: nothing to stage or cache
    p.text["cache_result"] = "not applicable: synthetic data has no files";
    return p;
  }
  check_file_system(d, p);
  if (d.stage == "node_local") {
    p.root = staged_root(d.storage, d.root, stage_dir_of(d));
    p.storage = "local";
    p.text["stage_dir"] = stage_dir_of(d);
    p.text["staged_root"] = p.root;
  }
  const double t0 = now_seconds();
  std::string error;
  if (comm.local_rank() == 0) {
    try {
      prepare_on_node(d, p);
    } catch (const StoppedDuringStartup&) {
      throw;  // as it is: train() ends every rank (the others wait for this one below)
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  comm.node_barrier();  // the node's other ranks wait until its first rank is done
  double failed = error.empty() ? 0.0 : 1.0;
  comm.allreduce_sum(&failed, 1);
  if (!error.empty()) throw RuntimeError(error);
  if (failed > 0)
    throw RuntimeError("preparing the data set (dataset.stage / dataset.cache) failed on " +
                       std::to_string(static_cast<int>(failed)) + " node(s); their first rank's log names the file");
  if (d.stage == "node_local") {
    p.stage_seconds = now_seconds() - t0;
    const std::string per_node = gather_stage_results(p, comm);
    if (comm.rank() == 0) p.text["stage_hosts"] = per_node;
  }
  p.numbers["stage_seconds"] = p.stage_seconds;
  return p;
}

}  // namespace ts
