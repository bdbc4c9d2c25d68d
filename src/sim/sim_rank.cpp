// One simulated rank (see sim_rank.h).
#include "sim/sim_rank.h"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>

#include <algorithm>
#include <exception>

#include "core/rng.h"
#include "dist/communicator.h"
#include "sim/platform.h"

namespace ts::sim {
namespace {

namespace s4u = simgrid::s4u;

double now() { return s4u::Engine::get_clock(); }

// Modelled compute: `seconds` of one core of this rank's host.
void compute(double seconds) {
  if (seconds > 0) s4u::this_actor::execute(seconds * kCoreSpeed);
}

void record(RankRecord& rec, Phase phase, double seconds) {
  rec.seconds[static_cast<size_t>(phase)].push_back(static_cast<float>(seconds));
}

// Backward: the whole pass computes in the background while this rank reaches each layer's
// boundary (sleeping until it, or later when a reduction held it) and hands the layer's
// gradients on. `pace`: this step's compute noise (1: the modelled time). Returns the time
// backward's compute ended.
double backward(ExchangeStrategy& exchange, const Workload& w, double start, double pace) {
  double total = 0;
  for (const BackwardLayer& l : w.backward) total += l.seconds * pace;
  s4u::ExecPtr pass = s4u::this_actor::get_host()->exec_async(total * kCoreSpeed);
  double boundary = start;
  for (const BackwardLayer& l : w.backward) {
    boundary += l.seconds * pace;
    if (now() < boundary) s4u::this_actor::sleep_until(boundary);
    if (l.count > 0) exchange.gradients_ready(l.offset, l.count);
  }
  pass->wait();
  return start + total;
}

void simulated_step(ExchangeStrategy& exchange, const Workload& w, bool average, double origin, double pace,
                    RankRecord& rec) {
  const double t0 = now();
  compute(w.data_s);
  const double t1 = now();
  compute(w.forward_s * pace);
  const double t2 = now();
  const double per_float = w.param_count > 0 ? w.update_s / static_cast<double>(w.param_count) : 0.0;
  exchange.begin_step(0.0f, [per_float](int64_t, int64_t count) { compute(per_float * static_cast<double>(count)); });
  const double t3 = backward(exchange, w, t2, pace);
  const StepVerdict v = exchange.finish_step(average);
  const double t4 = now();
  record(rec, Phase::data_wait, t1 - t0);
  record(rec, Phase::forward, t2 - t1);
  record(rec, Phase::backward, t3 - t2);
  record(rec, Phase::comm, v.times.comm);
  record(rec, Phase::comm_wait, std::max(0.0, t4 - t3 - v.times.optimizer));
  record(rec, Phase::optimizer, v.times.optimizer);
  record(rec, Phase::step, t4 - t0);
  record(rec, Phase::gather, v.times.gather);
  record(rec, Phase::average, v.times.average);
  record(rec, Phase::broadcast, v.times.broadcast);
  rec.step_end.push_back(t4 - origin);
}

}  // namespace

void run_rank(RankJob& job, int rank, int argc, char** argv) {
  RankRecord& rec = job.records.at(static_cast<size_t>(rank));
  try {
    MpiSession mpi(&argc, &argv);
    auto comm = Communicator::world();
    const Workload& w = *job.workload;
    ModelArenas arenas{job.params, job.grads, w.param_count, job.state, w.state_count, {}};
    auto exchange = make_exchange_strategy(*comm, arenas, job.options);
    exchange->broadcast_model();
    comm->barrier();  // the steps start together, as after the trainer's set-up
    const double origin = now();
    Rng noise(0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(rank));  // the same draws every simulation
    for (int64_t step = 1; step <= job.steps; ++step) {
      const bool average = step % job.average_period == 0 || step == job.steps;
      const double pace = w.compute_noise_cv > 0 ? std::max(0.1, 1.0 + w.compute_noise_cv * noise.normal()) : 1.0;
      simulated_step(*exchange, w, average, origin, pace, rec);
    }
    rec.host = comm->host();
    if (rank == 0) {
      job.transport = arena_transport_name(exchange->transport());
      job.ps_phases = exchange->times_ps_phases();
    }
  } catch (const std::exception& e) {
    rec.error = e.what();
  }
}

}  // namespace ts::sim
