// Gathering and writing a run's results (see run_output.h).
#include "train/run_output.h"

#include <algorithm>
#include <set>

#include "core/build_info.h"
#include "core/host_info.h"
#include "core/memory_limits.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "core/timer.h"
#include "dist/async_ps_worker.h"
#include "train/summary.h"

namespace ts {
namespace {

// Gathered rank-major [R][S] -> the file's layout [S][R].
std::vector<float> step_major(const std::vector<float>& all, int world, int64_t steps) {
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
  const DeviceDescription d = setup.backend->describe();
  a.backend = backend_kind_name(r.backend);
  a.device = d.device;
  a.device_name = d.name;
  a.device_generation = d.generation;
  a.isa = d.isa;
  a.device_libraries = libraries_text(d);
  a.device_memory_bytes = d.memory_bytes;
  a.device_plans = join(setup.backend->plan_notes(), "\n");
  a.device_workspace_bytes = static_cast<int64_t>(setup.backend->workspace_bytes());
  a.cpu_model = host_cpu_model();
  a.threads = r.threads;
  a.precision = precision_name(r.precision);
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

// SHA-256 of the final parameters (rank 0's; every rank holds the same after the last step).
std::string final_params_sha256(RunSetup& setup) {
  Net& net = *setup.net;
  std::vector<float> params(static_cast<size_t>(net.param_count()));
  if (!params.empty()) setup.backend->copy_to_host(params.data(), net.params(), params.size() * sizeof(float));
  return sha256_hex_of_floats(params.data(), net.param_count());
}

}  // namespace

RunResult gather_recording(const RunRecording& rec, bool ps_phases, Communicator& comm) {
  const int world = comm.size();
  const int64_t S = rec.steps();
  RunResult res;
  const size_t phases = ps_phases ? kPhaseCount : kCommonPhaseCount;
  for (size_t p = 0; p < phases; ++p) {
    const std::vector<float> all = comm.gather_to_root(rec.seconds[p]);
    if (comm.rank() == 0) res.timing[phase_name(static_cast<Phase>(p))] = step_major(all, world, S);
  }
  const std::vector<float> losses = comm.gather_to_root(rec.local_loss);
  const std::vector<std::string> hosts = comm.gather_strings_to_root(comm.host());
  if (comm.rank() != 0) return res;
  for (int64_t s = 0; s < S; ++s) {  // mean over ranks, summed in double in rank order
    double sum = 0;
    for (int rk = 0; rk < world; ++rk) sum += static_cast<double>(losses[static_cast<size_t>(rk * S + s)]);
    res.loss.push_back(static_cast<float>(sum / world));
  }
  const std::set<std::string> unique_hosts(hosts.begin(), hosts.end());
  res.record.hosts = join({unique_hosts.begin(), unique_hosts.end()}, ",");
  res.record.world_size = world;
  return res;
}

void gather_async_ps_record(const ExchangeStrategy& exchange, const DistConfig& dist, Communicator& comm,
                            RunResult& result) {
  const auto* worker = dynamic_cast<const AsyncPsWorkerExchange*>(&exchange);
  if (!worker) return;
  const AsyncPsRecord& mine = worker->record();
  // Counts and seconds travel as floats: exact for counts below 2^24 gradients per bin.
  std::vector<float> local(mine.staleness_histogram.begin(), mine.staleness_histogram.end());
  local.push_back(static_cast<float>(mine.bound_wait_s));
  local.push_back(static_cast<float>(mine.pull_wait_s));
  const std::vector<float> all = comm.gather_to_root(local);
  if (comm.rank() != 0) return;
  RunResult::AsyncPsRecord& a = result.async_ps;
  a.workers = comm.size();
  a.servers = dist.servers;
  a.staleness = dist.staleness;
  const size_t bins = mine.staleness_histogram.size(), row = bins + 2;
  for (int w = 0; w < comm.size(); ++w) {
    const float* r = all.data() + static_cast<size_t>(w) * row;
    for (size_t k = 0; k < bins; ++k) a.staleness_histogram.push_back(static_cast<int64_t>(r[k]));
    a.bound_wait_s.push_back(r[bins]);
    a.pull_wait_s.push_back(r[bins + 1]);
  }
}

void write_run_output(RunResult& res, const RunRecording& rec, const ResolvedConfig& cfg, const RunIdentity& id,
                      RunSetup& setup, const std::string& start_time, const std::string& run_path,
                      int64_t resumed_from_step) {
  fill_record(res.record, rec, cfg, id, setup, start_time);
  res.record.attempt = id.attempt;
  res.record.resumed_from_step = resumed_from_step;
  res.config = cfg.flat;
  res.step = rec.step;
  res.epoch = rec.epoch;
  res.samples = rec.samples;
  res.time = rec.time;
  res.lr = rec.lr;
  res.eval_step = rec.eval_step;
  res.eval_epoch = rec.eval_epoch;
  res.eval_time = rec.eval_time;
  res.eval_loss = rec.eval_loss;
  res.eval_accuracy = rec.eval_accuracy;
  res.summary = summary_of(res, rec, cfg, setup.plan);
  res.summary["skipped_steps"] = static_cast<double>(setup.scaler->skipped_steps());
  res.summary["loss_scale_final"] = static_cast<double>(setup.scaler->scale());
  res.summary["checkpoints"] = static_cast<double>(rec.checkpoints);
  res.summary["checkpoint_seconds"] = rec.checkpoint_seconds;
  res.params_sha256 = final_params_sha256(setup);
  res.diverged = rec.diverged;
  res.memory = setup.memory.named();
  res.memory["limit_bytes"] = setup.memory_bound.bytes;
  res.memory["peak_rss_bytes"] = process_memory().peak_rss;  // VmHWM: the estimate's counterpart
  res.memory_limit_source = setup.memory_bound.source;
  const Net& net = *setup.net;
  res.model_name = cfg.run.model;
  res.model_parameters = net.param_count();
  res.model_flops_per_sample = net.flops_per_sample();
  for (const auto& li : net.layer_table()) res.layers.push_back({li.name, li.kind, li.descriptor, li.parameters, li.flops});
  write_run_file(run_path, res);
}

}  // namespace ts
