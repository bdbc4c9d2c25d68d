// Gathering and writing a run's results (see run_output.h).
#include "train/run_output.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>

#include "backend/plan_choices.h"
#include "core/build_info.h"
#include "core/float_environment.h"
#include "core/host_info.h"
#include "core/memory_limits.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "core/timer.h"
#include "data/blob_storage.h"
#include "dist/async_ps_worker.h"
#include "metrics/utilisation.h"
#include "train/summary.h"

namespace ts {
namespace {

// Every rank's [S] `mine` on rank 0, in the file's layout [S][R] (gathered rank-major [R][S]);
// empty elsewhere.
std::vector<float> gather_step_major(const std::vector<float>& mine, int64_t steps, Communicator& comm) {
  const std::vector<float> all = comm.gather_to_root(mine);
  if (comm.rank() != 0) return {};
  const int world = comm.size();
  std::vector<float> sr(all.size());
  for (int rk = 0; rk < world; ++rk)
    for (int64_t s = 0; s < steps; ++s)
      sr[static_cast<size_t>(s * world + rk)] = all[static_cast<size_t>(rk * steps + s)];
  return sr;
}

std::string libraries_text(const DeviceDescription& d) {
  std::vector<std::string> items;
  for (const auto& [name, version] : d.libraries) items.push_back(name + " " + version);
  return join(items);
}

void fill_record(RunRecord& a, const RunRecording& rec, const ResolvedConfig& cfg, const RunIdentity& id,
                 const RunSetup& setup, const std::string& start_time) {
  const RunConfig& r = cfg.run;
  a.run_id = id.run_id;
  a.config_id = id.config_id;
  a.campaign = id.campaign;
  a.status = rec.diverged ? RunStatus::diverged : RunStatus::ok;
  a.message = rec.message;
  a.warnings = join(rec.warnings, "\n");
  a.config_yaml = cfg.yaml;
  a.version = TRAINSCALE_VERSION;
  a.git_sha = TRAINSCALE_GIT_SHA;
  a.start_time = start_time;
  a.end_time = utc_timestamp();
  const MpiLibrary lib = mpi_library();
  a.mpi_flavor = lib.flavor;
  a.mpi_version = lib.version;
  a.mpi_tuning = join(lib.tuning, "; ");
  a.dist_transport = arena_transport_name(setup.exchange->transport());
  a.loss_reads = loss_reads_name(setup.loss_reads);
  const DeviceDescription d = setup.backend->describe();
  // ranks.backend mixing backends: all of them ("cpu+cuda"); the device facts are rank 0's.
  a.backend = r.mixed_backends() ? join(r.backend_names(), "+") : backend_kind_name(r.backend);
  a.device = d.device;
  a.device_name = d.name;
  a.device_generation = d.generation;
  a.isa = d.isa;
  a.device_libraries = libraries_text(d);
  a.device_memory_bytes = d.memory_bytes;
  if (const PlanChoices* choices = capability<PlanChoices>(*setup.backend)) {
    a.device_plans = join(choices->plan_notes(), "\n");
    a.device_workspace_bytes = static_cast<int64_t>(choices->workspace_bytes());
  }
  a.cpu_model = host_cpu_model();
  a.threads = r.threads;
  a.precision = precision_name(r.precision);
  a.flush_denormals = denormals_flushed() ? 1 : 0;  // what the threads did, not only what was asked
  a.seed = static_cast<int64_t>(r.seed);
}

std::map<std::string, double> summary_of(const RunResult& res, const RunRecording& rec, const ResolvedConfig& cfg,
                                         const RunPlan& plan) {
  const int world = static_cast<int>(res.record.world_size);
  const std::vector<float>& step_time = res.timing.at(phase_name(Phase::step));
  SummaryInput in;
  for (int64_t s = 0; s < rec.steps(); ++s) {
    const auto row = step_time.begin() + s * world;
    in.step_time.push_back(static_cast<double>(*std::max_element(row, row + world)));  // the slowest rank
    in.step_samples.push_back(plan.global_batch);
  }
  in.loss = res.loss;
  in.eval_time = rec.eval_time;
  in.eval_accuracy = rec.eval_accuracy;
  in.world_size = world;
  in.target_accuracy = cfg.run.eval.target_accuracy;
  in.diverged = rec.diverged;
  return compute_summary(in);
}

// /partition's attributes and the share changes (the per-step arrays come from gather_partition).
void fill_partition(PartitionRecord& p, const DistConfig& dist, const ShareBalancer& shares, int64_t steps) {
  p.kind = partition_kind_name(dist.partition);
  p.emulate_slowdown_rank = dist.emulate_slowdown_rank;
  p.emulate_slowdown_factor = dist.emulate_slowdown_rank >= 0 ? dist.emulate_slowdown_factor : 1.0;
  for (const ShareChange& c : shares.changes()) {
    if (c.step > steps) continue;  // decided, but the run ended before it applied
    p.change_step.push_back(c.step);
    p.change_shares.insert(p.change_shares.end(), c.shares.begin(), c.shares.end());
  }
}

// The wall times of this attempt, after NaN for what earlier attempts of a resumed run recorded
// (their wall times are not in the checkpoint).
std::vector<double> padded_front(const std::vector<double>& mine, size_t total) {
  std::vector<double> out(total - std::min(total, mine.size()), std::numeric_limits<double>::quiet_NaN());
  out.insert(out.end(), mine.end() - static_cast<std::ptrdiff_t>(std::min(total, mine.size())), mine.end());
  return out;
}

void add_wall_times(RunResult& res, const RunRecording& rec) {
  res.record.setup_start_unix = rec.setup_start_wall;
  res.record.train_start_unix = rec.loop_start_wall;
  res.wall_time = padded_front(rec.step_wall, rec.step.size());
  res.eval_wall_time = padded_front(rec.eval_wall, rec.eval_step.size());
  res.eval_seconds = padded_front(rec.eval_seconds, rec.eval_step.size());
  res.checkpoint_step = rec.checkpoint_step;
  res.checkpoint_wall_time = rec.checkpoint_wall;
  res.checkpoint_seconds = rec.checkpoint_duration;
  res.checkpoint_bytes = rec.checkpoint_bytes;
}

// 1e9 bytes per second of this attempt's checkpoints (their files over their seconds), NaN without one.
double checkpoint_gbps(const RunRecording& rec) {
  double bytes = 0, seconds = 0;
  for (size_t c = 0; c < rec.checkpoint_step.size(); ++c) {
    bytes += static_cast<double>(rec.checkpoint_bytes[c]);
    seconds += rec.checkpoint_duration[c];
  }
  return seconds > 0 ? bytes / seconds / 1e9 : std::numeric_limits<double>::quiet_NaN();
}

// /utilisation and its /summary figures, over the steps after warm-up (metrics/utilisation.h).
void add_utilisation(RunResult& res, double threshold) {
  const int64_t world = res.record.world_size;
  const int64_t warmup = warmup_steps_for(static_cast<int64_t>(res.step.size()));
  const std::vector<RankUtilisation> ranks = rank_utilisation(res.timing, world, warmup);
  for (const RankUtilisation& u : ranks) {
    res.au.push_back(u.au);
    res.data_wait_share.push_back(u.data_wait_share);
  }
  res.au_threshold = threshold;
  for (const auto& [key, value] : utilisation_summary(ranks, threshold)) res.summary[key] = value;
}

// SHA-256 of the final parameters (rank 0's; every rank holds the same after the last step).
std::string final_params_sha256(RunSetup& setup) {
  Net& net = *setup.net;
  std::vector<float> params(static_cast<size_t>(net.param_count()));
  if (!params.empty()) setup.backend->copy_to_host(params.data(), net.params(), params.size() * sizeof(float));
  return sha256_hex_of_floats(params.data(), net.param_count());
}

// /io/read_bytes and /io/read_seconds [S, R]: every rank's counts (int64 through the blob
// gather: byte counts exceed float precision). A resumed run's recording lacks the steps of
// the earlier attempts: they are -1 / NaN ("not measured").
void gather_reads(const RunRecording& rec, RunResult& res, Communicator& comm) {
  const int world = comm.size();
  const int64_t S = rec.steps();
  const std::string mine(reinterpret_cast<const char*>(rec.read_bytes.data()), rec.read_bytes.size() * sizeof(int64_t));
  const std::vector<std::string> bytes = comm.gather_blobs_to_root(mine);
  const std::vector<float> seconds = comm.gather_to_root(rec.read_seconds);
  // Retried blob requests, counted per process (training, evaluation and staging reads alike).
  const std::vector<float> retries =
      comm.gather_to_root(std::vector<float>{static_cast<float>(blob_retries_in_process())});
  if (comm.rank() != 0) return;
  for (float r : retries) res.blob_retries += static_cast<int64_t>(r);
  const int64_t measured = static_cast<int64_t>(rec.read_seconds.size());
  const int64_t first = S - measured;  // earlier attempts' steps
  res.read_bytes.assign(static_cast<size_t>(S * world), -1);
  res.read_seconds.assign(static_cast<size_t>(S * world), std::numeric_limits<float>::quiet_NaN());
  for (int rk = 0; rk < world; ++rk) {
    const auto* counts = reinterpret_cast<const int64_t*>(bytes[static_cast<size_t>(rk)].data());
    for (int64_t s = 0; s < measured; ++s) {
      const size_t at_sr = static_cast<size_t>((first + s) * world + rk);
      std::memcpy(&res.read_bytes[at_sr], counts + s, sizeof(int64_t));
      res.read_seconds[at_sr] = seconds[static_cast<size_t>(rk * measured + s)];
    }
  }
}

// /bucket_timing [N, R, B] from every rank's spans: B is the most buckets any recorded step of
// any rank exchanged, and a bucket a step did not exchange is NaN (weight_avg between averages).
// Each rank sends its own width, then start and end of each step's buckets.
void gather_bucket_timing(const RunRecording& rec, RunResult& res, Communicator& comm) {
  size_t width = 0;
  for (const auto& spans : rec.bucket_spans) width = std::max(width, spans.size());
  const size_t N = rec.bucket_step.size();
  std::vector<float> mine(1 + 2 * N * width, std::numeric_limits<float>::quiet_NaN());
  mine[0] = static_cast<float>(width);
  for (size_t n = 0; n < N; ++n)
    for (size_t b = 0; b < rec.bucket_spans[n].size(); ++b) {
      mine[1 + n * width + b] = static_cast<float>(rec.bucket_spans[n][b].start);
      mine[1 + (N + n) * width + b] = static_cast<float>(rec.bucket_spans[n][b].end);
    }
  const std::string blob(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(float));
  const std::vector<std::string> all = comm.gather_blobs_to_root(blob);
  if (comm.rank() != 0) return;
  size_t B = 0;
  for (const std::string& r : all) B = std::max(B, static_cast<size_t>(reinterpret_cast<const float*>(r.data())[0]));
  if (B == 0 || N == 0) return;  // no strategy exchange timed (hogwild, nccl)
  const size_t R = all.size();
  res.bucket_step = rec.bucket_step;
  res.bucket_count = static_cast<int64_t>(B);
  res.bucket_stride = rec.bucket_stride;
  res.bucket_start.assign(N * R * B, std::numeric_limits<float>::quiet_NaN());
  res.bucket_end = res.bucket_start;
  for (size_t rk = 0; rk < R; ++rk) {
    const float* r = reinterpret_cast<const float*>(all[rk].data());
    const size_t w = static_cast<size_t>(r[0]);
    TS_CHECK(all[rk].size() == (1 + 2 * N * w) * sizeof(float), "rank " + std::to_string(rk) +
             " recorded the buckets of another number of steps than rank 0 (" + std::to_string(N) + ")");
    for (size_t n = 0; n < N; ++n)
      for (size_t b = 0; b < w; ++b) {
        res.bucket_start[(n * R + rk) * B + b] = r[1 + n * w + b];
        res.bucket_end[(n * R + rk) * B + b] = r[1 + (N + n) * w + b];
      }
  }
}

// /partition's per-step arrays [S, R] from every rank's shares and compute seconds: idle is
// the slowest rank's compute less the rank's own (what it waits before the all-reduce).
void gather_partition(PartitionRecord& p, const RunRecording& rec, Communicator& comm) {
  const int world = comm.size();
  const int64_t S = rec.steps();
  const std::vector<float> shares = gather_step_major(rec.share, S, comm);
  p.compute = gather_step_major(rec.compute, S, comm);
  if (comm.rank() != 0) return;
  p.idle.resize(p.compute.size());
  for (const float v : shares) p.shares.push_back(static_cast<int64_t>(v));
  for (int64_t s = 0; s < S; ++s) {
    const auto row = p.compute.begin() + s * world;
    const float slowest = *std::max_element(row, row + world);
    for (int rk = 0; rk < world; ++rk) p.idle[static_cast<size_t>(s * world + rk)] = slowest - row[rk];
  }
}

// Runs with a /partition group (heterogeneous workers, no-op otherwise): each rank's backend,
// threads and device name into result.partition on rank 0.
void gather_rank_kinds(const RunSetup& setup, const RunConfig& run, Communicator& comm, RunResult& result) {
  if (!setup.shares->active()) return;  // no /partition
  const std::string mine = std::string(backend_kind_name(run.backend)) + "\t" + std::to_string(run.threads) + "\t" +
                           setup.backend->describe().name;
  const std::vector<std::string> all = comm.gather_strings_to_root(mine);
  if (comm.rank() != 0) return;
  std::vector<std::string> backends, threads, devices;
  for (const std::string& rank : all) {
    const std::vector<std::string> parts = split(rank, '\t');
    backends.push_back(parts.at(0));
    threads.push_back(parts.at(1));
    devices.push_back(parts.size() > 2 ? parts[2] : "");
  }
  PartitionRecord& p = result.partition;
  p.rank_backends = join(backends, ",");
  p.rank_threads = join(threads, ",");
  p.rank_devices = join(devices, "; ");
}

// dist.strategy async_ps (no-op otherwise): every worker's AsyncPsRecord (dist/async_ps_worker.h)
// into result.async_ps on rank 0.
void gather_async_ps_record(const ExchangeStrategy& exchange, const DistConfig& dist, Communicator& comm,
                            RunResult& result) {
  const auto* worker = dynamic_cast<const AsyncPsWorkerExchange*>(&exchange);
  if (!worker) return;
  const AsyncPsRecord& mine = worker->record();
  // Counts and seconds travel as floats: exact for counts below 2^24 gradients per bin.
  std::vector<float> local(mine.staleness_histogram.begin(), mine.staleness_histogram.end());
  local.push_back(static_cast<float>(mine.bound_wait_s));
  local.push_back(static_cast<float>(mine.pull_wait_s));
  local.push_back(static_cast<float>(mine.max_staleness));
  const std::vector<float> all = comm.gather_to_root(local);
  if (comm.rank() != 0) return;
  RunResult::AsyncPsRecord& a = result.async_ps;
  a.workers = comm.size();
  a.servers = dist.servers;
  a.staleness = dist.staleness;
  const size_t bins = mine.staleness_histogram.size(), row = bins + 3;
  for (int w = 0; w < comm.size(); ++w) {
    const float* r = all.data() + static_cast<size_t>(w) * row;
    for (size_t k = 0; k < bins; ++k) a.staleness_histogram.push_back(static_cast<int64_t>(r[k]));
    a.bound_wait_s.push_back(r[bins]);
    a.pull_wait_s.push_back(r[bins + 1]);
    a.max_staleness.push_back(static_cast<int64_t>(r[bins + 2]));
  }
}

}  // namespace

RunResult gather_recording(const RunRecording& rec, const RunSetup& setup, const RunConfig& run, Communicator& comm) {
  const bool compression = setup.exchange->records_compression(), partition = setup.shares->active();
  const int world = comm.size();
  const int64_t S = rec.steps();
  RunResult res;
  for (Phase p : recorded_phases(setup.exchange->times_ps_phases(), compression)) {
    std::vector<float> timing = gather_step_major(rec.seconds[static_cast<size_t>(p)], S, comm);
    if (comm.rank() == 0) res.timing[phase_name(p)] = std::move(timing);
  }
  if (compression) {
    std::vector<float> wire_bytes = gather_step_major(rec.wire_bytes, S, comm);
    if (comm.rank() == 0) res.compression["wire_bytes"] = std::move(wire_bytes);
  }
  gather_reads(rec, res, comm);
  gather_bucket_timing(rec, res, comm);
  const std::vector<float> losses = comm.gather_to_root(rec.local_loss);
  const std::vector<std::string> hosts = comm.gather_strings_to_root(comm.host());
  const std::vector<std::string> local_ranks = comm.gather_strings_to_root(std::to_string(comm.local_rank()));
  if (partition) gather_partition(res.partition, rec, comm);
  gather_async_ps_record(*setup.exchange, run.dist, comm, res);
  gather_rank_kinds(setup, run, comm, res);
  if (comm.rank() != 0) return res;
  for (int64_t s = 0; s < S; ++s) {  // mean over ranks, summed in double in rank order
    double sum = 0, samples = 0;
    for (int rk = 0; rk < world; ++rk) {
      // Unequal shares: the mean over the global batch's samples (equal ones weigh 1, exactly).
      const double share =
          partition ? static_cast<double>(res.partition.shares[static_cast<size_t>(s * world + rk)]) : 1.0;
      sum += static_cast<double>(losses[static_cast<size_t>(rk * S + s)]) * share;
      samples += share;
    }
    res.loss.push_back(static_cast<float>(sum / samples));
  }
  const std::set<std::string> unique_hosts(hosts.begin(), hosts.end());
  res.record.hosts = join({unique_hosts.begin(), unique_hosts.end()}, ",");
  res.record.rank_hosts = join(hosts, ",");
  res.record.local_ranks = join(local_ranks, ",");
  res.record.world_size = world;
  return res;
}

void write_run_output(RunResult& res, const RunRecording& rec, const ResolvedConfig& cfg, const RunIdentity& id,
                      RunSetup& setup, const std::string& start_time, const std::string& run_path,
                      int64_t resumed_from_step) {
  fill_record(res.record, rec, cfg, id, setup, start_time);
  res.record.attempt = id.attempt;
  res.record.resumed_from_step = resumed_from_step;
  res.config = cfg.flat;
  recording_series(res) = recording_series(rec);
  add_wall_times(res, rec);
  res.record.train_split_samples = setup.data->train_count;
  res.record.eval_split_samples = setup.data->test_count;
  res.summary = summary_of(res, rec, cfg, setup.plan);
  res.summary["skipped_steps"] = static_cast<double>(setup.scaler->skipped_steps());
  res.summary["loss_scale_final"] = static_cast<double>(setup.scaler->scale());
  res.summary["checkpoints"] = static_cast<double>(rec.checkpoint_step.size());
  res.summary["checkpoint_seconds"] =
      std::accumulate(rec.checkpoint_duration.begin(), rec.checkpoint_duration.end(), 0.0);
  res.summary["checkpoint_gbps"] = checkpoint_gbps(rec);
  // Staging is outside the step times but inside the run's total (the MLPerf HPC rule).
  const InputPreparation& prepared = setup.data->prepared;
  res.summary["stage_seconds"] = prepared.stage_seconds;
  res.summary["total_seconds"] = prepared.stage_seconds + (rec.time.empty() ? 0.0 : rec.time.back());
  res.io_text = prepared.text;
  res.io_numbers = prepared.numbers;
  if (cfg.run.dataset.storage == "blob") res.io_numbers["blob_retries"] = static_cast<double>(res.blob_retries);
  if (res.compression.count("wire_bytes")) {  // fp32 bytes of every rank's buckets / the bytes sent
    double sent = 0;
    for (float b : res.compression.at("wire_bytes")) sent += static_cast<double>(b);
    const double fp32 = 4.0 * static_cast<double>(setup.net->param_count()) *
                        static_cast<double>(res.compression.at("wire_bytes").size());
    res.summary["compression_ratio"] = sent > 0 ? fp32 / sent : std::numeric_limits<double>::quiet_NaN();
  }
  add_utilisation(res, cfg.run.au_threshold);
  res.params_sha256 = final_params_sha256(setup);
  if (setup.shares->active()) fill_partition(res.partition, cfg.run.dist, *setup.shares, rec.steps());
  res.diverged = rec.diverged;
  res.memory = setup.memory.named();
  res.memory["limit_bytes"] = setup.memory_bound.bytes;
  res.memory["peak_rss_bytes"] = process_memory().peak_rss;  // VmHWM: the estimate's counterpart
  res.memory_limit_source = setup.memory_bound.source;
  if (setup.memory.device.applies) {  // the device's counterparts (train/device_memory_estimate.h)
    res.memory["device_limit_bytes"] = setup.memory_bound.device.bytes;
    res.memory["device_peak_bytes"] = setup.device_peak;
  }
  const Net& net = *setup.net;
  res.model_name = cfg.run.model;
  res.model_parameters = net.param_count();
  res.model_flops_per_sample = net.flops_per_sample();
  for (const auto& li : net.layer_table()) res.layers.push_back({li.name, li.kind, li.descriptor, li.parameters, li.flops});
  write_run_file(run_path, res);
}

}  // namespace ts
