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
#include "backend/cpu/cpu_info.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "metrics/run_result.h"
#include "nn/lr_schedule.h"
#include "nn/models.h"
#include "nn/optimizer.h"
#include "train/summary.h"

namespace ts {
namespace {

// Timing phases of /timing/<phase>, in file order.
const std::vector<std::string> kPhases = {"data_wait", "forward", "backward", "comm",
                                          "comm_wait", "optimizer", "step"};

std::string iso8601_now() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown";
}

struct DataSplits {
  Dataset train, test;
};

DataSplits load_data(const RunConfig& r) {
  const auto& d = r.dataset;
  DataSplits s;
  if (d.name == "fashion_mnist" || d.name == "mnist") {
    s.train = read_idx_dataset(d.root, Split::train, d.name);
    s.test = read_idx_dataset(d.root, Split::test, d.name);
  } else if (d.name == "cifar10") {
    s.train = read_cifar10_dataset(d.root, Split::train);
    s.test = read_cifar10_dataset(d.root, Split::test);
  } else if (d.name == "neuron") {
    s.train = make_neuron_dataset(d.synthetic_samples, seed_mix(r.seed, 11));
    s.test = make_neuron_dataset(std::min<int64_t>(d.synthetic_samples, 1024), seed_mix(r.seed, 12));
  } else {  // synthetic: shaped for the model
    ModelInput in = model_expected_input(r.model);
    int64_t classes = std::max<int64_t>(in.outputs, 1);
    s.train = make_synthetic_dataset(in.sample, classes, d.synthetic_samples, seed_mix(r.seed, 21));
    s.test = make_synthetic_dataset(in.sample, classes, std::min<int64_t>(d.synthetic_samples, 1024),
                                    seed_mix(r.seed, 22));
  }
  return s;
}

ModelInput input_of(const Dataset& d) {
  ModelInput in;
  in.sample = d.sample;
  in.outputs = d.classes > 0 ? d.classes : static_cast<int64_t>(d.targets.size() / std::max<int64_t>(d.count, 1));
  return in;
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
    throw ConfigError(cfg.locate("dist.allreduce") + ": nccl needs the cuda backend, which this build lacks; accepted here: mpi");
  if (world_size > 1) {
    // This build exchanges gradients with the library's MPI_Allreduce after backward.
    if (r.dist.strategy != "sync")
      throw ConfigError(cfg.locate("dist.strategy") + ": '" + r.dist.strategy +
                        "' with more than one worker is not implemented in this build; accepted: sync");
    if (r.dist.allreduce != "mpi")
      throw ConfigError(cfg.locate("dist.allreduce") + ": '" + r.dist.allreduce +
                        "' with more than one worker is not implemented in this build; accepted: mpi");
    if (r.dist.overlap)
      throw ConfigError(cfg.locate("dist.overlap") + ": overlapping the all-reduce with backward is not implemented in this build; set dist.overlap: false");
  }
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
  auto net = build_model(r.model, *backend, input_of(data.train), r.seed, r.dropout);
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
  if (data.train.count / world < batch)
    throw ConfigError(cfg.locate(r.batch_per_worker > 0 ? "batch_per_worker" : "global_batch") + ": batch " +
                      std::to_string(batch) + " per worker exceeds the " + std::to_string(data.train.count / world) +
                      " training samples each worker gets; use a smaller batch");
  Loader train_loader(data.train, train_opts);
  const int64_t steps_per_epoch = train_loader.batches_per_epoch();
  int64_t total_steps = r.steps > 0           ? r.steps
                        : r.train_samples > 0 ? (r.train_samples + global_batch - 1) / global_batch
                                              : static_cast<int64_t>(std::ceil(r.epochs * static_cast<double>(steps_per_epoch)));
  total_steps = std::max<int64_t>(total_steps, 1);

  LoaderOptions eval_opts;
  eval_opts.batch = std::min<int64_t>(r.eval.batch, std::max<int64_t>(data.test.count / world, 1));
  eval_opts.shuffle = false;
  eval_opts.threads = r.dataset.loader_threads;
  eval_opts.prefetch = r.dataset.prefetch;
  eval_opts.rank = comm.rank();
  eval_opts.world = world;
  eval_opts.drop_last = false;
  Loader eval_loader(data.test, eval_opts);

  double base_lr = r.lr;
  if (r.lr_schedule.scale == "linear") {
    int64_t base_batch = r.lr_schedule.base_batch > 0 ? r.lr_schedule.base_batch : global_batch;
    base_lr = r.lr * static_cast<double>(global_batch) / static_cast<double>(base_batch);
  }
  LrScheduleOptions sched_opts;
  sched_opts.kind = r.lr_schedule.kind;
  sched_opts.warmup_epochs = r.lr_schedule.warmup_epochs;
  sched_opts.step_epochs = r.lr_schedule.step_epochs;
  sched_opts.gamma = r.lr_schedule.gamma;
  sched_opts.final_lr_fraction = r.lr_schedule.final_lr_fraction;
  LrSchedule schedule(base_lr, sched_opts, steps_per_epoch, total_steps);
  SgdOptions sgd_opts;
  sgd_opts.momentum = r.momentum;
  sgd_opts.weight_decay = r.weight_decay;
  sgd_opts.nesterov = r.nesterov;
  Sgd sgd(*backend, net->param_count(), sgd_opts);

  const int64_t eval_period = r.eval.every_epochs > 0
                                  ? std::max<int64_t>(1, static_cast<int64_t>(std::llround(r.eval.every_epochs * static_cast<double>(steps_per_epoch))))
                                  : 0;
  if (root) {
    log << "trainscale " << TRAINSCALE_VERSION << " run " << id.run_id << ": model " << r.model << " ("
        << net->param_count() << " parameters), " << r.dataset.name << " " << data.train.count << "/"
        << data.test.count << " samples, " << world << " worker(s) x batch " << batch << ", " << total_steps
        << " steps (" << steps_per_epoch << "/epoch), backend " << r.backend << " " << r.precision << ", "
        << r.threads << " thread(s)\n";
    log.flush();
  }

  // ---- the timed loop ----
  std::map<std::string, std::vector<float>> timing;
  for (const auto& p : kPhases) timing[p].reserve(static_cast<size_t>(total_steps));
  std::vector<double> step_time_local;
  bool diverged = false;
  std::string message;
  double train_clock = 0;  // training time, evaluation excluded
  const float inv_world = 1.0f / static_cast<float>(world);

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
    net->backward();
    double t3 = now_seconds();
    // Gradient averaging (sync SGD) with the library all-reduce; the loss rides along so every
    // rank sees the same divergence verdict and the mean loss.
    double loss_sum = loss;
    comm.allreduce_sum(net->grads(), net->param_count());
    comm.allreduce_sum(&loss_sum, 1);
    if (world > 1) {
      float* g = net->grads();
      for (int64_t i = 0; i < net->param_count(); ++i) g[i] *= inv_world;
    }
    double t4 = now_seconds();
    double mean_loss = loss_sum / world;
    double lr = schedule.at(step - 1);
    if (!std::isfinite(mean_loss)) {
      diverged = true;
      message = "loss became " + std::string(std::isnan(mean_loss) ? "NaN" : "Inf") + " at step " + std::to_string(step);
    } else {
      sgd.step(net->params(), net->grads(), lr);
    }
    double t5 = now_seconds();
    samples += global_batch;
    double step_s = t5 - t0;
    train_clock += step_s;

    timing["data_wait"].push_back(static_cast<float>(t_data));
    timing["forward"].push_back(static_cast<float>(t2 - t1));
    timing["backward"].push_back(static_cast<float>(t3 - t2));
    timing["comm"].push_back(static_cast<float>(t4 - t3));
    timing["comm_wait"].push_back(static_cast<float>(t4 - t3));  // blocking: all of comm is waited for
    timing["optimizer"].push_back(static_cast<float>(t5 - t4));
    timing["step"].push_back(static_cast<float>(step_s));
    step_time_local.push_back(step_s);
    double epoch = static_cast<double>(step) / static_cast<double>(steps_per_epoch);
    res.step.push_back(step);
    res.epoch.push_back(epoch);
    res.samples.push_back(samples);
    res.time.push_back(train_clock);
    res.loss.push_back(static_cast<float>(mean_loss));
    res.lr.push_back(static_cast<float>(lr));

    if (diverged) {
      if (root) log << "diverged: " << message << "; stopping\n";
      break;
    }
    if (root && (step % r.log_every == 0 || step == total_steps)) {
      size_t n = step_time_local.size();
      std::vector<double> recent(step_time_local.begin() + static_cast<long>(n - std::min<size_t>(n, 50)), step_time_local.end());
      double med = percentile(recent, 50);
      log << std::fixed << "step " << step << "/" << total_steps << " epoch " << std::setprecision(2) << epoch
          << " loss " << std::setprecision(4) << mean_loss << " lr " << std::setprecision(5) << lr
          << " img/s " << std::setprecision(1) << static_cast<double>(global_batch) / med << " eta "
          << format_eta(med * static_cast<double>(total_steps - step)) << "\n";
      log.flush();
    }
    if (eval_period > 0 && (step % eval_period == 0 || step == total_steps)) {
      if (res.eval_step.empty() || res.eval_step.back() != step) evaluate(step, epoch);
    }
  }

  // ---- gather per-rank timings and write the run file ----
  const int64_t S = static_cast<int64_t>(res.step.size());
  for (const auto& p : kPhases) {
    std::vector<float> all = comm.gather_to_root(timing[p]);
    if (root) {  // gathered rank-major [R][S] -> file layout [S][R]
      std::vector<float> sr(all.size());
      for (int rk = 0; rk < world; ++rk)
        for (int64_t s = 0; s < S; ++s) sr[static_cast<size_t>(s * world + rk)] = all[static_cast<size_t>(rk * S + s)];
      res.timing[p] = std::move(sr);
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
               {"device", "cpu"},
               {"cpu_model", cpu_model_name()},
               {"isa", onednn_isa()},
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
