// A simulated run's result (see sim_run_file.h).
#include "sim/sim_run_file.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/build_info.h"
#include "core/host_info.h"
#include "core/strings.h"
#include "core/timer.h"
#include "train/summary.h"

namespace ts::sim {
namespace {

void fill_record(RunRecord& a, const SimulatedRun& run) {
  const SimRunRequest& q = *run.request;
  const RunConfig& r = q.cfg.run;
  a.run_id = q.run_id;
  a.config_id = q.config_id;
  a.campaign = q.campaign;
  a.status = RunStatus::ok;
  a.config_yaml = q.cfg.yaml;
  a.version = TRAINSCALE_VERSION;
  a.git_sha = TRAINSCALE_GIT_SHA;
  a.start_time = run.start_time;
  a.end_time = utc_timestamp();
  a.world_size = static_cast<int64_t>(run.job->records.size());
  std::set<std::string> hosts;
  for (const RankRecord& rec : run.job->records) hosts.insert(rec.host);
  a.hosts = join({hosts.begin(), hosts.end()}, ",");
  a.mpi_flavor = run.mpi_flavor;
  a.mpi_version = run.mpi_version;
  a.mpi_tuning = run.mpi_tuning;
  a.dist_transport = run.job->transport;
  a.backend = backend_kind_name(r.backend);
  a.device = "simulated";
  a.device_name = q.cluster.name + (q.cluster.node.gpus > 0 ? " GPU" : " node") + " (simulated)";
  a.device_generation = "none";
  a.isa = "simulated";
  a.device_libraries = "";
  a.device_memory_bytes = static_cast<int64_t>(q.cluster.node.memory_gb * 1e9);
  a.cpu_model = host_cpu_model();  // where the simulation ran
  a.threads = r.threads;
  a.precision = precision_name(r.precision);
  a.seed = static_cast<int64_t>(r.seed);
  a.simulated = 1;
  a.sim_cluster = perf::cluster_yaml(q.cluster);
  a.sim_platform = run.platform;
}

// /timing/<phase> [S, R] from the ranks' [phase][S] records.
void fill_timing(RunResult& res, const RankJob& job, int64_t steps) {
  const int64_t world = static_cast<int64_t>(job.records.size());
  for (Phase phase : recorded_phases(job.ps_phases, false)) {
    const size_t p = static_cast<size_t>(phase);
    std::vector<float> sr(static_cast<size_t>(steps * world));
    for (int64_t rk = 0; rk < world; ++rk)
      for (int64_t s = 0; s < steps; ++s)
        sr[static_cast<size_t>(s * world + rk)] = job.records[static_cast<size_t>(rk)].seconds[p][static_cast<size_t>(s)];
    res.timing[phase_name(static_cast<Phase>(p))] = std::move(sr);
  }
}

}  // namespace

RunResult simulated_run_result(const SimulatedRun& run) {
  const RunConfig& r = run.request->cfg.run;
  const RankJob& job = *run.job;
  const int64_t steps = job.steps, world = static_cast<int64_t>(job.records.size());
  const int64_t global_batch = run.workload->batch_per_worker * world;
  RunResult res;
  fill_record(res.record, run);
  res.config = run.request->cfg.flat;
  // No data pass through a simulated net: epochs count synthetic samples where the data set
  // says how many there are, and the loss is not computed (NaN).
  const double per_epoch = r.dataset.name == "synthetic" ? static_cast<double>(r.dataset.synthetic_samples) : 0.0;
  for (int64_t s = 1; s <= steps; ++s) {
    res.step.push_back(s);
    res.samples.push_back(s * global_batch);
    res.epoch.push_back(per_epoch > 0 ? static_cast<double>(s * global_batch) / per_epoch
                                      : std::numeric_limits<double>::quiet_NaN());
    double end = 0;
    for (const RankRecord& rec : job.records) end = std::max(end, rec.step_end[static_cast<size_t>(s - 1)]);
    res.time.push_back(end);
    res.loss.push_back(std::numeric_limits<float>::quiet_NaN());
    res.lr.push_back(static_cast<float>(r.lr));
  }
  fill_timing(res, job, steps);
  SummaryInput in;
  const std::vector<float>& step_time = res.timing.at(phase_name(Phase::step));
  for (int64_t s = 0; s < steps; ++s) {
    const auto row = step_time.begin() + s * world;
    in.step_time.push_back(static_cast<double>(*std::max_element(row, row + world)));
    in.step_samples.push_back(global_batch);
  }
  in.loss = res.loss;
  in.world_size = static_cast<int>(world);
  in.target_accuracy = r.eval.target_accuracy;
  res.summary = compute_summary(in);
  res.summary["skipped_steps"] = 0;
  res.summary["loss_scale_final"] = 1;
  res.model_name = r.model;
  res.model_parameters = run.workload->param_count;
  res.model_flops_per_sample = run.workload->flops_per_sample;
  for (const LayerInfo& li : run.workload->table)
    res.layers.push_back({li.name, li.kind, li.descriptor, li.parameters, li.flops});
  return res;
}

}  // namespace ts::sim
