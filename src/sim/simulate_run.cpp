// One simulated run (see simulate_run.h).
#include "sim/simulate_run.h"

#include <algorithm>
#include <chrono>
#include <ostream>

#include "core/error.h"
#include "core/strings.h"
#include "core/timer.h"
#include "dist/smpi/simulation.h"
#include "metrics/run_result.h"
#include "sim/mpi_selection.h"
#include "sim/platform.h"
#include "sim/sim_rank.h"
#include "sim/sim_run_file.h"
#include "sim/simulation.h"
#include "sim/workload.h"

namespace ts::sim {
namespace {

void check_simulable(const SimRunRequest& q) {
  const RunConfig& r = q.cfg.run;
  if (r.dist.allreduce == AllreduceAlgorithm::shm)
    throw ConfigError(q.cfg.locate("dist.allreduce") +
                      ": shm is not simulated (its ranks synchronise by polling shared memory, which a SimGrid "
                      "simulation cannot schedule); simulate ring, tree, ps or mpi, or measure shm with trainscale run");
  if (r.dist.allreduce == AllreduceAlgorithm::nccl)
    throw ConfigError(q.cfg.locate("dist.allreduce") +
                      ": nccl is not simulated (NCCL runs on GPUs, not through MPI); simulate ring, tree, ps or mpi");
  if (q.steps < 1) throw ConfigError("--steps " + std::to_string(q.steps) + ": simulate at least 1 step");
}

// The run's ranks, with the arenas in one block of SMPI shared memory.
RankJob rank_job(const SimRunRequest& q, const Workload& w) {
  RankJob job;
  job.workload = &w;
  job.options = exchange_options_for(q.cfg.run.dist);
  job.steps = q.steps;
  job.average_period = std::max<int64_t>(1, q.cfg.run.dist.period);
  const int64_t floats = std::max<int64_t>({w.param_count, w.state_count, 1});
  float* block = static_cast<float*>(simulated_shared_block(static_cast<size_t>(floats) * sizeof(float)));
  job.params = job.grads = job.state = block;
  job.records.resize(static_cast<size_t>(q.cfg.run.workers));
  return job;
}

// RuntimeError naming the first rank that failed, or the stall, if any rank did not finish.
void check_ranks(const RankJob& job) {
  for (size_t r = 0; r < job.records.size(); ++r)
    if (!job.records[r].error.empty())
      throw RuntimeError("simulated rank " + std::to_string(r) + ": " + job.records[r].error);
  for (size_t r = 0; r < job.records.size(); ++r)
    if (static_cast<int64_t>(job.records[r].step_end.size()) != job.steps)
      throw RuntimeError("the simulation stalled: rank " + std::to_string(r) + " finished " +
                         std::to_string(job.records[r].step_end.size()) + " of " + std::to_string(job.steps) +
                         " steps (a rank waits for a message no rank sends)");
}

std::string seconds_text(double s) { return format_number("%.4g s", s); }

}  // namespace

void simulate_run(const SimRunRequest& q, std::ostream& log) {
  check_simulable(q);
  const auto wall0 = std::chrono::steady_clock::now();
  const std::string start_time = utc_timestamp();
  const int64_t workers = q.cfg.run.workers;
  const Workload w = model_workload(q.cfg, q.cluster, workers, q.workers_per_node);
  const MpiSelection mpi = select_mpi(q.cfg.run, q.cluster, q.coll_selector);
  const SimulationSettings settings{q.network_model, mpi.coll_selector, mpi.allreduce, mpi.extra};
  set_simulated_memory_bandwidth(q.cluster.gamma_s_per_byte() > 0 ? 3.0 / q.cluster.gamma_s_per_byte() : 0.0);

  Simulation simulation(settings);
  const Platform platform = build_platform(q.cluster, w.point.placement);
  RankJob job = rank_job(q, w);
  log << "simulating " << workers << " ranks of " << q.cfg.run.model << " (batch " << w.batch_per_worker
      << " per worker, " << q.steps << " steps) on " << q.cluster.name << ": " << platform.description << "; MPI "
      << mpi.flavor << " (" << mpi.reason << ")\n";
  log.flush();
  simulation.run(platform.rank_hosts, [&job](int rank, int argc, char** argv) { run_rank(job, rank, argc, argv); });
  check_ranks(job);

  const std::vector<std::string> config = simulation_config(settings);
  SimulatedRun run;
  run.request = &q;
  run.workload = &w;
  run.job = &job;
  run.start_time = start_time;
  run.platform = platform.description + "; simulator: SimGrid " + simgrid_version() + ", " + join(config, ", ");
  run.mpi_flavor = mpi.flavor;
  run.mpi_version = "SimGrid " + simgrid_version() + " SMPI" +
                    (mpi.coll_selector.empty() ? "" : ", coll-selector " + mpi.coll_selector) +
                    (mpi.allreduce.empty() ? "" : ", allreduce " + mpi.allreduce);
  run.mpi_tuning = join(config, "; ");
  RunResult result = simulated_run_result(run);
  // The model's prediction of the same step, beside the simulated one (docs/model.md).
  result.summary["predicted_step_time"] = w.point.step.step;
  result.summary["predicted_comm"] = w.point.step.comm;
  result.summary["predicted_exposed_comm"] = w.point.step.exposed_comm;
  write_run_file(q.run_path, result);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  log << "simulated step " << seconds_text(result.summary.at("step_time_median")) << " (model "
      << seconds_text(w.point.step.step) << "), " << result.summary.at("images_per_s") << " images/s; "
      << "wrote " << q.run_path << " in " << seconds_text(wall) << " of wall time\n";
}

}  // namespace ts::sim
