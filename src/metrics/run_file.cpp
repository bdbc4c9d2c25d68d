// Writes a RunResult as an HDF5 file of schema trainscale-run/1 (docs/hdf5-schema.md),
// atomically: everything goes to the temporary file of a core/file_io.h AtomicFile, which is
// flushed and renamed over `path` only once complete and closed, so a run file that exists is
// never half-written.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <string>

#include "core/error.h"
#include "metrics/hdf5_file.h"
#include "metrics/run_file_check.h"
#include "metrics/run_result.h"

namespace ts {
namespace {

// Summary attributes every run file has (NaN where the result lacks them).
constexpr const char* kSummaryKeys[] = {
    "images_per_s",     "images_per_s_per_worker", "step_time_median", "step_time_p90",
    "warmup_steps",     "final_train_loss",        "min_train_loss",   "final_accuracy",
    "best_accuracy",    "time_to_target"};

[[noreturn]] void bad_result(const std::string& path, const std::string& what) {
  throw RuntimeError("run file " + path + ": inconsistent result, not written: " + what);
}

// Shapes must agree before anything is written.
void validate(const std::string& path, const RunResult& r) {
  const size_t S = r.step.size();
  auto same = [&](size_t n, const char* name) {
    if (n != S)
      bad_result(path, std::string("/train/") + name + " has " + std::to_string(n) +
                           " entries, /train/step has " + std::to_string(S));
  };
  same(r.samples.size(), "samples");
  same(r.epoch.size(), "epoch");
  same(r.time.size(), "time");
  same(r.loss.size(), "loss");
  same(r.lr.size(), "lr");
  if (!r.wall_time.empty()) same(r.wall_time.size(), "wall_time");
  const int64_t R = r.record.world_size;
  if (R < 1) bad_result(path, "world_size " + std::to_string(R) + " < 1");
  const size_t SR = S * static_cast<size_t>(R);
  const auto steps_x_ranks = [&](size_t n, const std::string& name) {
    if (n != SR)
      bad_result(path, name + " has " + std::to_string(n) + " entries, expected steps x ranks = " + std::to_string(S) +
                           " x " + std::to_string(R));
  };
  for (const auto& [phase, v] : r.timing) {
    if (phase.empty() || phase.find('/') != std::string::npos)
      bad_result(path, "timing phase name '" + phase + "' is empty or contains '/'");
    steps_x_ranks(v.size(), "/timing/" + phase);
  }
  const PartitionRecord& p = r.partition;
  if (!p.kind.empty()) {
    if (p.shares.size() != SR || p.compute.size() != SR || p.idle.size() != SR ||
        p.change_shares.size() != p.change_step.size() * static_cast<size_t>(R))
      bad_result(path, "the /partition arrays are not steps x ranks (" + std::to_string(S) + " x " + std::to_string(R) +
                           ") and changes x ranks");
  }
  for (size_t n : {r.read_bytes.size(), r.read_seconds.size()})
    if (n != 0) steps_x_ranks(n, "/io/read_bytes or /io/read_seconds");
  if (!r.au.empty() && (r.au.size() != static_cast<size_t>(R) || r.data_wait_share.size() != r.au.size()))
    bad_result(path, "/utilisation/au and data_wait_share have " + std::to_string(r.au.size()) + " and " +
                         std::to_string(r.data_wait_share.size()) + " entries, expected ranks = " + std::to_string(R));
  for (const auto& [name, v] : r.compression) steps_x_ranks(v.size(), "/compression/" + name);
  const size_t NRB = r.bucket_step.size() * static_cast<size_t>(R) * static_cast<size_t>(std::max<int64_t>(0, r.bucket_count));
  if (r.bucket_count < 0 || r.bucket_stride < 1 || r.bucket_start.size() != NRB || r.bucket_end.size() != NRB)
    bad_result(path, "/bucket_timing start and end have " + std::to_string(r.bucket_start.size()) + " and " +
                         std::to_string(r.bucket_end.size()) + " entries, expected recorded steps x ranks x buckets = " +
                         std::to_string(r.bucket_step.size()) + " x " + std::to_string(R) + " x " +
                         std::to_string(r.bucket_count) + " (stride " + std::to_string(r.bucket_stride) + ")");
  const size_t E = r.eval_step.size();
  for (size_t n : {r.eval_epoch.size(), r.eval_time.size(), r.eval_loss.size(), r.eval_accuracy.size()})
    if (n != E)
      bad_result(path, "the /eval arrays differ in length (/eval/step has " + std::to_string(E) + ")");
  const size_t C = r.checkpoint_step.size();
  if (r.checkpoint_wall_time.size() != C || r.checkpoint_seconds.size() != C || r.checkpoint_bytes.size() != C)
    bad_result(path, "the /checkpoints arrays differ in length (/checkpoints/step has " + std::to_string(C) + ")");
  if (!r.eval_wall_time.empty() && (r.eval_wall_time.size() != E || r.eval_seconds.size() != E))
    bad_result(path, "/eval/wall_time or /eval/seconds differs in length from /eval/step (" + std::to_string(E) + ")");
}

void check_directory(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw RuntimeError("output directory " + dir.string() + " for run file " + path +
                       " does not exist; create it or pass another --out directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw RuntimeError("output directory " + dir.string() + " for run file " + path +
                       " is not writable (" + std::strerror(errno) +
                       "); fix its permissions or pass another --out directory");
}

const char* run_status_name(RunStatus status) {
  switch (status) {
    case RunStatus::ok: return "ok";
    case RunStatus::diverged: return "diverged";
    case RunStatus::failed: return "failed";
  }
  return "?";
}

// The root attributes (docs/hdf5-schema.md "/ (root group)").
void write_record(h5::File& file, const RunRecord& r) {
  file.set_attrs({{"run_id", r.run_id}, {"config_id", r.config_id}, {"campaign", r.campaign},
                  {"status", run_status_name(r.status)}, {"message", r.message}, {"warnings", r.warnings},
                  {"config", r.config_yaml}, {"version", r.version}, {"git_sha", r.git_sha},
                  {"start_time", r.start_time}, {"end_time", r.end_time}, {"hosts", r.hosts},
                  {"rank_hosts", r.rank_hosts}, {"local_ranks", r.local_ranks}, {"world_size", r.world_size},
                  {"mpi_flavor", r.mpi_flavor}, {"mpi_version", r.mpi_version}, {"mpi_tuning", r.mpi_tuning},
                  {"dist_transport", r.dist_transport}});
  if (!r.loss_reads.empty()) file.set_attr("loss_reads", r.loss_reads);
  file.set_attrs({{"backend", r.backend}, {"device", r.device}, {"device_name", r.device_name},
                  {"device_generation", r.device_generation}, {"isa", r.isa}, {"device_libraries", r.device_libraries},
                  {"device_memory_bytes", r.device_memory_bytes}, {"device_plans", r.device_plans},
                  {"device_workspace_bytes", r.device_workspace_bytes}, {"cpu_model", r.cpu_model},
                  {"threads", r.threads}, {"precision", r.precision}, {"flush_denormals", r.flush_denormals},
                  {"seed", r.seed}, {"simulated", r.simulated}});
  if (r.simulated != 0) file.set_attrs({{"sim_cluster", r.sim_cluster}, {"sim_platform", r.sim_platform}});
  file.set_attrs({{"attempt", r.attempt}, {"resumed_from_step", r.resumed_from_step},
                  {"setup_start_unix", r.setup_start_unix}, {"train_start_unix", r.train_start_unix},
                  {"train_split_samples", r.train_split_samples}, {"eval_split_samples", r.eval_split_samples}});
}

// /partition (heterogeneous workers): shares, compute and idle seconds per step and rank.
void write_partition(h5::File& file, const PartitionRecord& p, int64_t steps, int64_t ranks) {
  h5::Group group = file.create_group("partition");
  group.set_attrs({{"kind", p.kind}, {"emulate_slowdown_rank", p.emulate_slowdown_rank},
                   {"emulate_slowdown_factor", p.emulate_slowdown_factor}, {"rank_backends", p.rank_backends},
                   {"rank_threads", p.rank_threads}, {"rank_devices", p.rank_devices}});
  const int64_t changes = static_cast<int64_t>(p.change_step.size());
  group.write_series({{"shares", p.shares, "samples", {steps, ranks}},
                      {"compute", p.compute, "seconds", {steps, ranks}},
                      {"idle", p.idle, "seconds", {steps, ranks}},
                      {"change_step", p.change_step, "steps"},
                      {"change_shares", p.change_shares, "samples", {changes, ranks}}});
}

// /train, /timing (and /partition), /compression and /eval: the run's series.
void write_series(h5::File& file, const RunResult& r) {
  const int64_t S = static_cast<int64_t>(r.step.size());
  {
    h5::Group train = file.create_group("train");
    train.write_series({{"step", r.step, "steps"}, {"epoch", r.epoch, "epochs"}, {"samples", r.samples, "samples"},
                        {"time", r.time, "seconds"}, {"loss", r.loss, "loss"}, {"lr", r.lr, "learning rate"}});
    if (!r.wall_time.empty()) train.write("wall_time", r.wall_time).set_attr("units", "seconds since 1970-01-01 UTC");
  }
  {
    h5::Group timing = file.create_group("timing");
    for (const auto& [phase, v] : r.timing)
      timing.write(phase, {S, r.record.world_size}, v.data()).set_attr("units", "seconds");
    if (!r.partition.kind.empty()) write_partition(file, r.partition, S, r.record.world_size);
  }
  if (r.bucket_count > 0) {
    const int64_t N = static_cast<int64_t>(r.bucket_step.size());
    h5::Group buckets = file.create_group("bucket_timing");
    buckets.set_attr("stride", r.bucket_stride);
    const std::vector<int64_t> dims = {N, r.record.world_size, r.bucket_count};
    buckets.write_series({{"step", r.bucket_step, "steps"},
                          {"start", r.bucket_start, "seconds from the step's start", dims},
                          {"end", r.bucket_end, "seconds from the step's start", dims}});
  }
  if (!r.compression.empty()) {
    h5::Group compression = file.create_group("compression");
    for (const auto& [name, v] : r.compression)
      compression.write(name, {S, r.record.world_size}, v.data()).set_attr("units", "bytes");
  }
  {
    h5::Group eval = file.create_group("eval");
    eval.write_series({{"step", r.eval_step, "steps"}, {"epoch", r.eval_epoch, "epochs"},
                       {"time", r.eval_time, "seconds"}, {"loss", r.eval_loss, "loss"},
                       {"accuracy", r.eval_accuracy, "fraction"}});
    if (!r.eval_wall_time.empty())
      eval.write_series({{"wall_time", r.eval_wall_time, "seconds since 1970-01-01 UTC"},
                         {"seconds", r.eval_seconds, "seconds"}});
  }
}

void write_contents(h5::File& file, const RunResult& r) {
  write_record(file, r.record);
  {
    h5::Group config = file.create_group("config");
    for (const auto& [key, value] : r.config) config.set_attr(key, value);
  }

  write_series(file, r);
  const int64_t S = static_cast<int64_t>(r.step.size());
  {
    h5::Group summary = file.create_group("summary");
    for (const char* key : kSummaryKeys)
      if (!r.summary.count(key)) summary.set_attr(key, std::numeric_limits<double>::quiet_NaN());
    for (const auto& [key, value] : r.summary) {
      if (key == "diverged") continue;
      summary.set_attr(key, value);
    }
    summary.set_attr("diverged", static_cast<int64_t>(r.diverged ? 1 : 0));
    if (!r.params_sha256.empty()) summary.set_attr("params_sha256", r.params_sha256);
  }
  if (!r.checkpoint_step.empty()) {
    h5::Group checkpoints = file.create_group("checkpoints");
    checkpoints.write_series({{"step", r.checkpoint_step, "steps"},
                              {"wall_time", r.checkpoint_wall_time, "seconds since 1970-01-01 UTC"},
                              {"seconds", r.checkpoint_seconds, "seconds"}, {"bytes", r.checkpoint_bytes, "bytes"}});
  }
  if (!r.au.empty()) {
    h5::Group utilisation = file.create_group("utilisation");
    utilisation.write_series({{"au", r.au, "fraction"}, {"data_wait_share", r.data_wait_share, "fraction"}});
    utilisation.set_attr("threshold", r.au_threshold);
  }
  if (!r.read_bytes.empty() || !r.io_text.empty() || !r.io_numbers.empty()) {
    h5::Group io = file.create_group("io");
    if (!r.read_bytes.empty()) io.write("read_bytes", {S, r.record.world_size}, r.read_bytes.data()).set_attr("units", "bytes");
    if (!r.read_seconds.empty())
      io.write("read_seconds", {S, r.record.world_size}, r.read_seconds.data()).set_attr("units", "seconds");
    for (const auto& [key, text] : r.io_text) io.set_attr(key, text);
    for (const auto& [key, value] : r.io_numbers) io.set_attr(key, value);
  }
  if (r.async_ps.workers > 0) {
    const RunResult::AsyncPsRecord& a = r.async_ps;
    h5::Group async = file.create_group("async_ps");
    async.set_attrs({{"servers", a.servers}, {"staleness", a.staleness}});
    async.write_series({{"staleness_histogram", a.staleness_histogram, "gradients", {a.workers, a.staleness + 1}},
                        {"max_staleness", a.max_staleness, "rounds"}, {"bound_wait", a.bound_wait_s, "seconds"},
                        {"pull_wait", a.pull_wait_s, "seconds"}});
  }
  if (!r.memory.empty()) {
    h5::Group memory = file.create_group("memory");
    for (const auto& [key, bytes] : r.memory) memory.set_attr(key, bytes);
    memory.set_attr("limit_source", r.memory_limit_source);
  }
  {
    h5::Group model = file.create_group("model");
    model.set_attrs({{"name", r.model_name}, {"parameters", r.model_parameters},
                     {"flops_per_sample", r.model_flops_per_sample}});
    using Layer = RunResult::LayerRow;
    model.write_table("layers", {h5::Column::of("name", r.layers, &Layer::name),
                                 h5::Column::of("kind", r.layers, &Layer::kind),
                                 h5::Column::of("descriptor", r.layers, &Layer::descriptor),
                                 h5::Column::of("parameters", r.layers, &Layer::parameters),
                                 h5::Column::of("flops", r.layers, &Layer::flops)});
  }
}

}  // namespace

const std::vector<std::string>& run_file_summary_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k(std::begin(kSummaryKeys), std::end(kSummaryKeys));
    k.push_back("diverged");
    return k;
  }();
  return keys;
}

void write_run_file(const std::string& path, const RunResult& result) {
  validate(path, result);
  check_directory(path);
  try {
    h5::write_file(path, kRunFileSchema, [&](h5::File& file) { write_contents(file, result); });
  } catch (const RuntimeError& e) {
    throw RuntimeError("run file " + path + " not written (no part of it is left): " + e.what());
  }
}

}  // namespace ts
