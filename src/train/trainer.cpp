// The training loop (see trainer.h). Phases are timed per step on every rank and buffered
// locally; rank 0 gathers them once at the end, so recording adds no synchronisation.
#include "train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <ostream>
#include <set>
#include <sstream>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/host_info.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/datasets.h"
#include "data/loader.h"
#include "dist/allreduce.h"
#include "dist/gradient_exchange.h"
#include "metrics/run_result.h"
#include "nn/lr_schedule.h"
#include "nn/models.h"
#include "nn/optimizer.h"
#include "train/summary.h"

namespace ts {
namespace {

// Timing phases of /timing/<phase>, in file order; the parameter-server phases only for ps.
const std::vector<std::string> kPhases = {"data_wait", "forward", "backward", "comm",
                                          "comm_wait", "optimizer", "step"};
const std::vector<std::string> kPsPhases = {"gather", "average", "broadcast"};

std::string iso8601_now() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The run's data set as two sample sources, read per batch by the loaders; synthetic data is
// shaped for the model.
DataSplits load_data(const RunConfig& r) {
  const auto& d = r.dataset;
  const ModelInput in = model_expected_input(r.model);
  return open_dataset({.name = d.name, .format = d.format, .root = d.root, .storage = d.storage, .seed = r.seed,
                       .synthetic_samples = d.synthetic_samples,
                       .synthetic = {in.sample, std::max<int64_t>(in.outputs, 1), 0}});
}

ModelInput input_of(const SampleSource& d) {
  return {d.spec().sample, d.spec().classes > 0 ? d.spec().classes : d.spec().outputs};
}

// Accuracy contributions of one evaluated batch: classification = argmax hits; regression =
// predictions within 0.5 of the target (the single-neuron task's threshold rule).
int64_t count_correct(const Net& net, const Batch& b) {
  const float* out = net.output();
  int64_t k = net.output_shape().numel();
  int64_t correct = 0;
  for (int64_t i = 0; i < b.size; ++i) {
    const float* row = out + i * k;
    if (net.is_classifier()) {
      int64_t arg = std::max_element(row, row + k) - row;
      correct += arg == b.labels[i];
    } else {
      bool ok = true;
      for (int64_t j = 0; j < k; ++j) ok = ok && std::fabs(row[j] - b.targets[i * k + j]) < 0.5f;
      correct += ok;
    }
  }
  return correct;
}

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  int s = static_cast<int>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", s / 3600, s / 60 % 60);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ds", s);
  return buf;
}

void prepare_out_dir(const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw ConfigError("--out " + out_dir + ": cannot create the output directory (" + ec.message() +
                            "); choose a writable directory");
  std::string probe = out_dir + "/.write-probe-" + std::to_string(::getpid());
  std::ofstream f(probe);
  if (!f) throw ConfigError("--out " + out_dir + ": the output directory is not writable; choose another with --out");
  f.close();
  std::filesystem::remove(probe, ec);
}

}  // namespace

namespace {
// The all-reduce algorithms this binary's dist/allreduce.h knows, "mpi, ring, ...".
std::string accepted_allreduce_names() {
  std::string list;
  for (AllreduceAlgorithm a : all_allreduce_algorithms()) list += (list.empty() ? "" : ", ") + std::string(allreduce_algorithm_name(a));
  return list;
}
}  // namespace

void check_run_capabilities(const ResolvedConfig& cfg, int world_size) {
  const RunConfig& r = cfg.run;
  if (r.workers != world_size)
    throw ConfigError(cfg.locate("workers") + ": the config expects " + std::to_string(r.workers) +
                      " workers but this MPI world has " + std::to_string(world_size) +
                      " rank(s); launch with `mpirun -np " + std::to_string(r.workers) +
                      " trainscale ...` (a launcher that starts independent single-rank jobs gives 1)");
  auto names = available_backends();
  if (std::find(names.begin(), names.end(), r.backend) == names.end()) {
    std::string list;
    for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw ConfigError(cfg.locate("backend") + ": backend '" + r.backend + "' is not built into this binary; available: " +
                      list + (r.backend == "cuda" ? " (configure with -DTRAINSCALE_CUDA=ON on a machine with the CUDA toolkit)" : ""));
  }
  if (r.gpu != "none")
    throw ConfigError(cfg.locate("gpu") + ": this run expects GPU generation '" + r.gpu +
                      "' but runs on the '" + r.backend + "' backend without a GPU; use gpu: none or backend: cuda on a GPU node");
  if (r.mpi_flavor != "any") {
    MpiLibrary lib = mpi_library();
    if (lib.flavor != r.mpi_flavor)
      throw ConfigError(cfg.locate("mpi_flavor") + ": expects '" + r.mpi_flavor + "' but this binary is linked with " +
                        lib.flavor + " " + lib.version + "; run the binary built for " + r.mpi_flavor + " or set mpi_flavor: any");
  }
  if (r.dataset.storage != "local")
    throw ConfigError(cfg.locate("dataset.storage") + ": storage '" + r.dataset.storage +
                      "' is a site mapping; single runs read dataset.root directly (storage: local). Use a sweep with a site file to map storage names");
  if (r.dist.allreduce == "nccl")
    throw ConfigError(cfg.locate("dist.allreduce") + ": nccl needs the cuda backend, which this build lacks; accepted here: " +
                      accepted_allreduce_names());
  try {
    parse_allreduce_algorithm(r.dist.allreduce);
  } catch (const ConfigError&) {
    throw ConfigError(cfg.locate("dist.allreduce") + ": '" + r.dist.allreduce +
                      "' is not built into this binary; accepted here: " + accepted_allreduce_names());
  }
  if (r.dist.strategy == "sync" && r.dist.overlap && !mpi_threads_serialized())
    throw ConfigError(cfg.locate("dist.overlap") + ": overlapping the all-reduce with backward needs a communication "
                      "thread, and this MPI library does not provide MPI_THREAD_SERIALIZED; set dist.overlap: false");
}

namespace {
RunOutcome train_checked(const ResolvedConfig& cfg, const RunIdentity& id, const std::string& out_dir,
                         Communicator& comm, std::ostream& log);
}  // namespace

RunOutcome train(const ResolvedConfig& cfg, const RunIdentity& id, const std::string& out_dir, Communicator& comm,
                 std::ostream& log) {
  check_run_capabilities(cfg, comm.size());
  if (comm.rank() == 0) prepare_out_dir(out_dir);
  try {
    return train_checked(cfg, id, out_dir, comm, log);
  } catch (const RuntimeError& e) {
    if (comm.rank() == 0) {
      std::ofstream marker(failed_marker_path(out_dir + "/" + id.run_id + ".h5"));
      marker << e.what() << "\n";
    }
    throw;
  }
}

namespace {
RunOutcome train_checked(const ResolvedConfig& cfg, const RunIdentity& id, const std::string& out_dir,
                         Communicator& comm, std::ostream& log) {
  const RunConfig& r = cfg.run;
  const bool root = comm.rank() == 0;
  const int world = comm.size();

  RunResult res;
  const std::string run_path = out_dir + "/" + id.run_id + ".h5";
  const std::string start_time = iso8601_now();

  // ---- set-up (not timed as training) ----
  auto backend = make_backend(r.backend);
  backend->set_threads(r.threads);
  Precision precision = r.precision == "bf16" ? Precision::bf16
                        : r.precision == "fp16" ? Precision::fp16
                        : r.precision == "tf32" ? Precision::tf32
                                                : Precision::fp32;
  for (Op op : {Op::conv, Op::fc})
    if (!backend->supports(op, precision)) {
      std::string ok, elsewhere;
      for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16, Precision::tf32})
        if (backend->supports(op, p)) ok += (ok.empty() ? "" : ", ") + std::string(precision_name(p));
      for (const std::string& other : available_backends())
        if (other != r.backend && make_backend(other)->supports(op, precision)) elsewhere += " " + other;
      if (precision == Precision::fp16 || precision == Precision::tf32) elsewhere += " cuda (GPU builds)";
      throw ConfigError(cfg.locate("precision") + ": '" + r.precision + "' is not supported by backend '" + r.backend +
                        "' (it computes in: " + ok + "); backends that compute in " + r.precision + ":" +
                        (elsewhere.empty() ? " none in this build" : elsewhere));
    }
  backend->set_precision(precision);
  DataSplits data = load_data(r);
  const int64_t batch = r.batch_for(world);
  const int64_t global_batch = batch * world;
  auto net = build_model(r.model, *backend, input_of(*data.train), r.seed, r.dropout);
  net->set_batch(batch);

  LoaderOptions train_opts;
  train_opts.batch = batch;
  train_opts.shuffle = r.dataset.shuffle;
  train_opts.seed = seed_mix(r.seed, 1);
  train_opts.threads = r.dataset.loader_threads;
  train_opts.prefetch = r.dataset.prefetch;
  train_opts.rank = comm.rank();
  train_opts.world = world;
  train_opts.drop_last = true;
  if (data.train->count() < global_batch)
    throw ConfigError(cfg.locate(r.batch_per_worker > 0 ? "batch_per_worker" : "global_batch") + ": the global batch of " +
                      std::to_string(world) + " worker(s) x " + std::to_string(batch) + " exceeds the " +
                      std::to_string(data.train->count()) + " training samples; use a smaller batch");
  Loader train_loader(*data.train, train_opts);
  const int64_t steps_per_epoch = train_loader.batches_per_epoch();
  int64_t total_steps = r.steps > 0           ? r.steps
                        : r.train_samples > 0 ? (r.train_samples + global_batch - 1) / global_batch
                                              : static_cast<int64_t>(std::ceil(r.epochs * static_cast<double>(steps_per_epoch)));
  total_steps = std::max<int64_t>(total_steps, 1);

  LoaderOptions eval_opts;
  eval_opts.batch = std::min<int64_t>(r.eval.batch, std::max<int64_t>(data.test->count() / world, 1));
  eval_opts.shuffle = false;
  eval_opts.threads = r.dataset.loader_threads;
  eval_opts.prefetch = r.dataset.prefetch;
  eval_opts.rank = comm.rank();
  eval_opts.world = world;
  eval_opts.drop_last = false;
  Loader eval_loader(*data.test, eval_opts);

  // lr_schedule.scale linear (Goyal et al.): the peak LR is lr * k, k = global_batch / base_batch,
  // and the warm-up ramps linearly from lr (the base batch's LR) to lr * k instead of from ~0.
  const bool scaled_lr = r.lr_schedule.scale == "linear";
  const double lr_factor =
      scaled_lr ? static_cast<double>(global_batch) /
                      static_cast<double>(r.lr_schedule.base_batch > 0 ? r.lr_schedule.base_batch : global_batch)
                : 1.0;
  const double base_lr = r.lr * lr_factor;
  LrScheduleOptions sched_opts;
  sched_opts.kind = r.lr_schedule.kind;
  sched_opts.warmup_epochs = r.lr_schedule.warmup_epochs;
  sched_opts.step_epochs = r.lr_schedule.step_epochs;
  sched_opts.gamma = r.lr_schedule.gamma;
  sched_opts.final_lr_fraction = r.lr_schedule.final_lr_fraction;
  LrSchedule schedule(base_lr, sched_opts, steps_per_epoch, total_steps);
  const int64_t warmup_steps =
      static_cast<int64_t>(std::llround(r.lr_schedule.warmup_epochs * static_cast<double>(steps_per_epoch)));
  auto lr_at = [&](int64_t step0) {  // 0-based step
    if (scaled_lr && step0 < warmup_steps)
      return r.lr + (base_lr - r.lr) * static_cast<double>(step0) / static_cast<double>(warmup_steps);
    return schedule.at(step0);
  };
  SgdOptions sgd_opts;
  sgd_opts.momentum = r.momentum;
  sgd_opts.weight_decay = r.weight_decay;
  sgd_opts.nesterov = r.nesterov;
  Sgd sgd(*backend, net->param_count(), sgd_opts);

  // Gradient / weight exchange (dist/gradient_exchange.h): every rank starts from rank 0's model.
  ExchangeOptions exchange_opts;
  exchange_opts.strategy = parse_dist_strategy(r.dist.strategy);
  exchange_opts.algorithm = parse_allreduce_algorithm(r.dist.allreduce);
  exchange_opts.bucket_elements =
      std::max<int64_t>(1, static_cast<int64_t>(r.dist.bucket_mb * 1024.0 * 1024.0 / sizeof(float)));
  exchange_opts.overlap = r.dist.overlap;
  exchange_opts.sharded_update = r.dist.update == "sharded";
  if (world > 1 && exchange_opts.algorithm == AllreduceAlgorithm::shm && exchange_opts.strategy == DistStrategy::sync) {
    // The gradient arena in node shared memory: shm sums the buckets in place (no copy-in).
    // Sharded: also one node-wide copy of the weights, which each rank updates its share of;
    // rank 0's initial weights go in (every rank reads them only after the barrier).
    const int nodes = allreduce_node_count(comm);
    if (exchange_opts.sharded_update && nodes != 1)
      throw ConfigError(cfg.locate("dist.update") + ": sharded works on one node only; this job spans " +
                        std::to_string(nodes) + " nodes; set dist.update: replicated");
    float* grads = allocate_shared_floats(comm, net->param_count());
    float* weights =
        exchange_opts.sharded_update ? allocate_shared_floats(comm, net->param_count(), /*node_wide=*/true) : nullptr;
    net->use_arena_storage(weights, grads, /*copy_params=*/comm.rank() == 0);
    if (weights) comm.barrier();
  }
  GradientExchange exchange(comm, {net->params(), net->grads(), net->param_count(), net->state(), net->state_count()},
                            exchange_opts);
  exchange.broadcast_model();
  const bool weight_avg = exchange_opts.strategy == DistStrategy::weight_avg;
  std::vector<std::string> phases = kPhases;
  if (exchange_opts.algorithm == AllreduceAlgorithm::ps) phases.insert(phases.end(), kPsPhases.begin(), kPsPhases.end());

  const int64_t eval_period = r.eval.every_epochs > 0
                                  ? std::max<int64_t>(1, static_cast<int64_t>(std::llround(r.eval.every_epochs * static_cast<double>(steps_per_epoch))))
                                  : 0;
  if (root) {
    log << "trainscale " << TRAINSCALE_VERSION << " run " << id.run_id << ": model " << r.model << " ("
        << net->param_count() << " parameters), " << r.dataset.name << " " << data.train->count() << "/"
        << data.test->count() << " samples, " << world << " worker(s) x batch " << batch << ", " << total_steps
        << " steps (" << steps_per_epoch << "/epoch), backend " << r.backend << " " << r.precision << ", "
        << r.threads << " thread(s), dist " << r.dist.strategy
        << (weight_avg ? " period " + std::to_string(r.dist.period) : std::string()) << " " << r.dist.allreduce
        << (r.dist.overlap && !weight_avg ? " overlap" : "") << " (" << exchange.buckets().size() << " bucket(s))\n";
    log.flush();
  }

  // ---- the timed loop ----
  std::map<std::string, std::vector<float>> timing;
  for (const auto& p : phases) timing[p].reserve(static_cast<size_t>(total_steps));
  std::vector<float> local_loss;  // this rank's loss per step; /train/loss is their mean over ranks
  local_loss.reserve(static_cast<size_t>(total_steps));
  bool diverged = false;
  std::string message;
  double train_clock = 0;  // training time, evaluation excluded

  auto evaluate = [&](int64_t step, double epoch) {
    double sums[3] = {0, 0, 0};  // loss * n, correct, n
    Batch b;
    while (eval_loader.next(b)) {
      if (b.size != net->batch()) net->set_batch(b.size);
      float l = net->forward(b.images, b.labels, b.targets, Mode::inference);
      sums[0] += static_cast<double>(l) * static_cast<double>(b.size);
      sums[1] += static_cast<double>(count_correct(*net, b));
      sums[2] += static_cast<double>(b.size);
    }
    net->set_batch(batch);
    comm.allreduce_sum(sums, 3);
    double loss = sums[0] / std::max(sums[2], 1.0), acc = sums[1] / std::max(sums[2], 1.0);
    res.eval_step.push_back(step);
    res.eval_epoch.push_back(epoch);
    res.eval_time.push_back(train_clock);
    res.eval_loss.push_back(loss);
    res.eval_accuracy.push_back(acc);
    if (root) {
      log << std::fixed << std::setprecision(4) << "eval  step " << step << " epoch " << std::setprecision(2) << epoch
          << " test_loss " << std::setprecision(4) << loss << " accuracy " << acc << " (train time "
          << std::setprecision(1) << train_clock << " s)\n";
      log.flush();
    }
  };

  int64_t samples = 0;
  for (int64_t step = 1; step <= total_steps; ++step) {
    double t0 = now_seconds();
    Batch b;
    train_loader.next(b);
    double t_data = train_loader.last_wait_seconds();
    double t1 = now_seconds();
    float loss = net->forward(b.images, b.labels, b.targets, Mode::train);
    double t2 = now_seconds();
    // Backward hands each layer's finished gradients to the exchange, which reduces them in
    // buckets (overlapped with the rest of backward when dist.overlap is on).
    const double lr = lr_at(step - 1);
    exchange.begin_step(loss, [&, lr](int64_t offset, int64_t count) {  // kept by the exchange: lr by value
      sgd.step_range(net->params(), net->grads(), lr, offset, count);
    });
    net->backward([&](ParamRange range) { exchange.gradients_ready(range.offset, range.count); });
    double t3 = now_seconds();
    const bool eval_now = eval_period > 0 && (step % eval_period == 0 || step == total_steps);
    // weight_avg averages every `period` steps, and before evaluations and at the end, so that
    // the evaluated and final model is the averaged one.
    const bool average_now = step % r.dist.period == 0 || step == total_steps || eval_now;
    StepVerdict verdict = exchange.finish_step(average_now);
    double t4 = now_seconds();
    samples += global_batch;
    double step_s = t4 - t0;
    train_clock += step_s;
    if (verdict.diverged) {
      diverged = true;
      message = std::isnan(verdict.loss)   ? "loss became NaN at step " + std::to_string(step)
                : std::isinf(verdict.loss) ? "loss became Inf at step " + std::to_string(step)
                                           : "a worker's loss became NaN/Inf by step " + std::to_string(step) +
                                                 " (weight_avg checks at each weight average)";
    }

    const ExchangeTimes& xt = verdict.times;
    timing["data_wait"].push_back(static_cast<float>(t_data));
    timing["forward"].push_back(static_cast<float>(t2 - t1));
    timing["backward"].push_back(static_cast<float>(t3 - t2));
    timing["comm"].push_back(static_cast<float>(xt.comm));
    timing["comm_wait"].push_back(static_cast<float>(xt.comm_wait));
    timing["optimizer"].push_back(static_cast<float>(xt.optimizer));
    timing["step"].push_back(static_cast<float>(step_s));
    if (timing.count("gather")) {
      timing["gather"].push_back(static_cast<float>(xt.gather));
      timing["average"].push_back(static_cast<float>(xt.average));
      timing["broadcast"].push_back(static_cast<float>(xt.broadcast));
    }
    local_loss.push_back(loss);
    double epoch = static_cast<double>(step) / static_cast<double>(steps_per_epoch);
    res.step.push_back(step);
    res.epoch.push_back(epoch);
    res.samples.push_back(samples);
    res.time.push_back(train_clock);
    res.lr.push_back(static_cast<float>(lr));

    if (diverged) {
      if (root) log << "diverged: " << message << "; stopping\n";
      break;
    }
    if (root && (step % r.log_every == 0 || step == total_steps)) {
      const std::vector<float>& steps_s = timing["step"];  // the last 50 steps' times
      const size_t n = steps_s.size();
      std::vector<double> recent(steps_s.begin() + static_cast<long>(n - std::min<size_t>(n, 50)), steps_s.end());
      double med = percentile(recent, 50);
      log << std::fixed << "step " << step << "/" << total_steps << " epoch " << std::setprecision(2) << epoch
          << " loss " << std::setprecision(4) << verdict.loss << (verdict.exchanged ? "" : " (rank 0)") << " lr "
          << std::setprecision(5) << lr
          << " img/s " << std::setprecision(1) << static_cast<double>(global_batch) / med << " eta "
          << format_eta(med * static_cast<double>(total_steps - step)) << "\n";
      log.flush();
    }
    if (eval_now && (res.eval_step.empty() || res.eval_step.back() != step)) {
      exchange.average_state();  // BN running statistics are per worker during training
      evaluate(step, epoch);
    }
  }

  // ---- gather per-rank timings and write the run file ----
  const int64_t S = static_cast<int64_t>(res.step.size());
  for (const auto& p : phases) {
    std::vector<float> all = comm.gather_to_root(timing[p]);
    if (root) {  // gathered rank-major [R][S] -> file layout [S][R]
      std::vector<float> sr(all.size());
      for (int rk = 0; rk < world; ++rk)
        for (int64_t s = 0; s < S; ++s) sr[static_cast<size_t>(s * world + rk)] = all[static_cast<size_t>(rk * S + s)];
      res.timing[p] = std::move(sr);
    }
  }
  {
    std::vector<float> all = comm.gather_to_root(local_loss);
    if (root)  // mean over ranks of each step's loss, summed in double in rank order
      for (int64_t s = 0; s < S; ++s) {
        double sum = 0;
        for (int rk = 0; rk < world; ++rk) sum += static_cast<double>(all[static_cast<size_t>(rk * S + s)]);
        res.loss.push_back(static_cast<float>(sum / world));
      }
  }
  std::vector<std::string> hosts = comm.gather_strings_to_root(comm.host());
  if (!root) return {diverged ? kExitDiverged : kExitOk, ""};

  SummaryInput sin;
  for (int64_t s = 0; s < S; ++s) {
    double slowest = 0;
    for (int rk = 0; rk < world; ++rk) slowest = std::max(slowest, static_cast<double>(res.timing["step"][static_cast<size_t>(s * world + rk)]));
    sin.step_time.push_back(slowest);
    sin.step_samples.push_back(global_batch);
  }
  sin.loss = res.loss;
  sin.eval_time = res.eval_time;
  sin.eval_accuracy = res.eval_accuracy;
  sin.world_size = world;
  sin.target_accuracy = r.eval.target_accuracy;
  sin.diverged = diverged;
  res.summary = compute_summary(sin);
  res.diverged = diverged;

  std::set<std::string> unique_hosts(hosts.begin(), hosts.end());
  std::string host_list;
  for (const auto& h : unique_hosts) host_list += (host_list.empty() ? "" : ",") + h;
  MpiLibrary lib = mpi_library();
  const DeviceDescription device = backend->describe();
  res.attrs = {{"schema", "trainscale-run/1"},
               {"run_id", id.run_id},
               {"config_id", id.config_id},
               {"campaign", id.campaign},
               {"status", diverged ? "diverged" : "ok"},
               {"message", message},
               {"config", cfg.yaml},
               {"version", TRAINSCALE_VERSION},
               {"git_sha", TRAINSCALE_GIT_SHA},
               {"start_time", start_time},
               {"end_time", iso8601_now()},
               {"hosts", host_list},
               {"mpi_flavor", lib.flavor},
               {"mpi_version", lib.version},
               {"backend", r.backend},
               {"device", device.device},
               {"cpu_model", host_cpu_model()},
               {"isa", device.isa},
               {"precision", r.precision}};
  res.world_size = world;
  res.threads = r.threads;
  res.seed = static_cast<int64_t>(r.seed);
  res.config = cfg.flat;
  res.model_name = r.model;
  res.model_parameters = net->param_count();
  res.model_flops_per_sample = net->flops_per_sample();
  for (const auto& li : net->layer_table()) res.layers.push_back({li.name, li.kind, li.descriptor, li.parameters, li.flops});
  write_run_file(run_path, res);

  const auto& s = res.summary;
  log << std::fixed << std::setprecision(1) << "summary: " << (diverged ? "DIVERGED" : "ok") << ", " << S
      << " steps in " << train_clock << " s training time, " << s.at("images_per_s") << " img/s (median after "
      << static_cast<int64_t>(s.at("warmup_steps")) << " warm-up steps), best accuracy " << std::setprecision(4)
      << s.at("best_accuracy") << ", time to " << r.eval.target_accuracy << ": "
      << (std::isnan(s.at("time_to_target")) ? std::string("never") : format_eta(s.at("time_to_target")).c_str())
      << "\nrun file: " << run_path << "\n";
  log.flush();
  return {diverged ? kExitDiverged : kExitOk, run_path};
}
}  // namespace

}  // namespace ts
