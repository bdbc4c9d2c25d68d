// The input-pipeline benchmark (see input_bench.h).
#include "train/input_bench.h"

#include <cstdio>
#include <memory>

#include "core/build_info.h"
#include "core/error.h"
#include "core/host_info.h"
#include "core/timer.h"
#include "data/file_system_type.h"
#include "data/loader.h"
#include "data/node_stage.h"
#include "data/page_cache.h"
#include "data/storage.h"
#include "train/phase_options.h"

namespace ts {
namespace {

bool is_posix_storage(const std::string& name) { return name == "local" || name == "nfs"; }

// The page cache of the files before a pass: dropped (cold) or read once (warm).
CacheResult set_cache(const std::string& mode, const InputPreparation& where, bool has_files) {
  if (!has_files) return {0, 0, true, "not applicable: synthetic data has no files"};
  if (!is_posix_storage(where.storage))  // object storage: no page cache here to warm or drop
    return {0, 0, false, "not applicable: storage " + where.storage + " has no page cache on this node"};
  const auto storage = make_storage({where.storage, ""});
  const std::vector<TreeFile> files = list_tree(*storage, where.root);
  return mode == "warm" ? warm_page_cache(*storage, files) : drop_page_cache(files);
}

// One timed pass: the training split opened, `batches` batches taken from a fresh loader.
void time_pass(const ResolvedConfig& cfg, const InputPreparation& where, const std::string& mode,
               const InputBenchOptions& o, IoBenchResult& out, std::ostream& log) {
  const RunConfig& r = cfg.run;
  const CacheResult cache = set_cache(mode, where, r.dataset.format != "synthetic");
  if (!cache.ok) log << "warning: cache " << mode << ": " << cache.note << "\n";
  const double t_open = now_seconds();
  const std::unique_ptr<SampleSource> source = open_split(data_options_of(r, where), Split::train);
  const double t0 = now_seconds();
  LoaderOptions lo;
  lo.batch = r.batch_for(1);
  lo.shuffle = r.dataset.shuffle;
  lo.seed = r.seed;
  lo.threads = r.dataset.loader_threads;
  lo.prefetch = r.dataset.prefetch;
  int64_t bytes = 0;
  double read_seconds = 0;
  {
    Loader loader(*source, lo);
    Batch batch;
    for (int64_t i = 0; i < o.batches; ++i) {
      loader.next(batch);
      const ReadCounts reads = loader.last_read_counts();
      bytes += reads.bytes;
      read_seconds += reads.seconds;
    }
  }  // the workers stop (they may be reading ahead: not counted, not timed)
  const double seconds = now_seconds() - t0;
  out.cache.push_back(mode);
  out.seconds.push_back(seconds);
  out.open_seconds.push_back(t0 - t_open);
  out.samples_per_s.push_back(static_cast<double>(o.batches * lo.batch) / seconds);
  out.mb_per_s.push_back(static_cast<double>(bytes) / 1e6 / seconds);
  out.read_bytes.push_back(bytes);
  out.read_seconds.push_back(read_seconds);
  char line[160];
  std::snprintf(line, sizeof line, "%-5s %10.1f samples/s %9.2f MB/s  %8.3f s  (open %.3f s)\n", mode.c_str(),
                out.samples_per_s.back(), out.mb_per_s.back(), seconds, out.open_seconds.back());
  log << line;
  log.flush();
}

void describe(const ResolvedConfig& cfg, const InputPreparation& where, const InputBenchOptions& o, IoBenchResult& out) {
  const DatasetConfig& d = cfg.run.dataset;
  out.text = {{"version", TRAINSCALE_VERSION}, {"git_sha", TRAINSCALE_GIT_SHA}, {"host", host_name()},
              {"cpu_model", host_cpu_model()}, {"start_time", utc_timestamp()}, {"config", cfg.yaml},
              {"format", d.format}, {"storage", d.storage}, {"stage", d.stage}, {"dataset", d.name}};
  out.text["file_system"] = d.format == "synthetic" || !is_posix_storage(d.storage) ? "" : file_system_type(d.root).name;
  if (d.stage == "node_local") out.text["staged_root"] = where.root;
  out.counts = {{"loader_threads", d.loader_threads}, {"prefetch", d.prefetch}, {"batch", cfg.run.batch_for(1)},
                {"batches", o.batches}, {"repeats", o.repeats}};
  out.config = cfg.flat;
}

}  // namespace

IoBenchResult bench_input(const ResolvedConfig& cfg, const InputBenchOptions& o, std::ostream& log) {
  if (o.repeats < 1 || o.batches < 1)
    throw ConfigError("bench io: --repeats and --steps must be at least 1 (got " + std::to_string(o.repeats) + " and " +
                      std::to_string(o.batches) + ")");
  const DatasetConfig& d = cfg.run.dataset;
  InputPreparation where;
  where.root = d.root;
  where.storage = d.storage;
  if (d.stage == "node_local" && d.format != "synthetic") {  // staged once, outside the timed passes
    const StageResult staged = stage_tree(*make_storage({d.storage, d.endpoint}), d.root, stage_dir_of(d));
    where.root = staged.root;
    where.storage = "local";
    log << "staged " << staged.files << " files to " << staged.root << (staged.reused ? " (reused)" : "") << "\n";
  }
  IoBenchResult out;
  describe(cfg, where, o, out);
  log << "bench io: " << d.name << " " << d.format << " on " << d.storage
      << (out.text["file_system"].empty() ? "" : " (" + out.text["file_system"] + ")") << ", " << d.loader_threads
      << " loader thread(s), batch " << cfg.run.batch_for(1) << ", " << o.batches << " batches per pass\n";
  for (int rep = 0; rep < o.repeats; ++rep)
    for (const char* mode : {"cold", "warm"}) time_pass(cfg, where, mode, o, out, log);
  return out;
}

}  // namespace ts
