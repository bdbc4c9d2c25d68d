// Run-time capability checks (see capabilities.h).
#include "train/capabilities.h"

#include <algorithm>
#include <functional>
#include <string>

#include "backend/backend_factory.h"
#include "config/rules.h"
#include "core/error.h"
#include "core/strings.h"
#include "data/storage.h"
#include "dist/communicator.h"
#include "dist/exchange_strategy.h"
#include "train/device_check.h"

namespace ts {
namespace {

using Locate = std::function<std::string(const std::string&)>;

std::string built_allreduce_names() {
  std::vector<std::string> names;
  for (AllreduceAlgorithm a : known_allreduce_algorithms())
    if (allreduce_algorithm_built(a)) names.push_back(allreduce_algorithm_name(a));
  return join(names);
}

// The MPI world: async_ps's is the workers plus the servers, every other strategy's the workers.
void check_world_size(const ResolvedConfig& cfg, int world_size) {
  const RunConfig& r = cfg.run;
  const int ranks = r.workers + r.dist.servers;
  if (r.dist.strategy == DistStrategy::async_ps && ranks != world_size)
    throw ConfigError(cfg.locate("workers") + ": dist.strategy async_ps runs " + std::to_string(r.workers) +
                      " worker(s) plus " + std::to_string(r.dist.servers) + " server(s) (dist.servers) = " +
                      std::to_string(ranks) + " ranks, but this MPI world has " + std::to_string(world_size) +
                      "; launch with `mpirun -np " + std::to_string(ranks) + " trainscale ...`");
  if (r.dist.strategy != DistStrategy::async_ps && r.workers != world_size)
    throw ConfigError(cfg.locate("workers") + ": the config expects " + std::to_string(r.workers) +
                      " workers but this MPI world has " + std::to_string(world_size) +
                      " rank(s); launch with `mpirun -np " + std::to_string(r.workers) +
                      " trainscale ...` (a launcher that starts independent single-rank jobs gives 1)");
}


// What one backend of this binary cannot do here for `cfg`'s precision ("" when it can).
std::string backend_cannot(const ResolvedConfig& cfg, BackendKind kind, const Locate& locate) {
  const std::string name = backend_kind_name(kind);
  const auto built = available_backends();
  if (std::find(built.begin(), built.end(), name) == built.end())
    return locate("backend") + ": backend '" + name + "' is not built into this binary (available: " + join(built) + ")";
  std::unique_ptr<Backend> backend;
  try {
    backend = make_backend(name);
  } catch (const NoDeviceError& e) {
    return locate("backend") + ": backend '" + name + "' has no device on this machine (" + e.reason + ")";
  }
  for (Op op : {Op::conv, Op::fc})
    if (!backend->supports(op, cfg.run.precision))
      return locate("precision") + ": backend '" + name + "' cannot compute in " + precision_name(cfg.run.precision) +
             " on this machine (" + backend->describe().isa + ")";
  return "";
}

}  // namespace

void check_run_capabilities(const ResolvedConfig& cfg, int world_size) {
  check_config_rules(cfg, cfg.flat, RuleScope::run);  // combinations the training loop cannot run
  // ranks.backend: each backend the ranks use passes the checks a run of that backend passes.
  if (!cfg.run.rank_backends.empty()) {
    for (BackendKind b : cfg.run.backends()) {
      ResolvedConfig one = cfg;
      one.run.rank_backends.clear();
      one.run.backend = b;
      one.where["backend"] = cfg.where.at("ranks.backend") + " (ranks.backend: " + backend_kind_name(b) + ")";
      check_run_capabilities(one, world_size);
    }
    return;
  }
  const RunConfig& r = cfg.run;
  check_world_size(cfg, world_size);
  const std::string backend = backend_kind_name(r.backend);
  const auto built = available_backends();
  if (std::find(built.begin(), built.end(), backend) == built.end())
    throw UnsupportedError(cfg.locate("backend") + ": backend '" + backend + "' is not built into this binary; available: " +
                      join(built) +
                      (r.backend == BackendKind::cuda
                           ? " (configure with -DTRAINSCALE_CUDA=ON on a machine with the CUDA toolkit)"
                           : ""));
  if (r.mpi_flavor != MpiFlavor::any) {
    const MpiLibrary lib = mpi_library();
    if (lib.flavor != mpi_flavor_name(r.mpi_flavor))
      throw ConfigError(cfg.locate("mpi_flavor") + ": expects '" + mpi_flavor_name(r.mpi_flavor) +
                        "' but this binary is linked with " + lib.flavor + " " + lib.version + "; run the binary built for " +
                        mpi_flavor_name(r.mpi_flavor) + ", set mpi_flavor: any, or simulate it (trainscale-sim run)");
  }
  const auto storages = storage_names();
  if (std::find(storages.begin(), storages.end(), r.dataset.storage) == storages.end())
    throw ConfigError(cfg.locate("dataset.storage") + ": storage '" + r.dataset.storage +
                      "' is a site mapping; single runs read dataset.root directly with one of: " + join(storages) +
                      ". Use a sweep with a site file to map other storage names");
  if (!allreduce_algorithm_built(r.dist.allreduce))
    throw ConfigError(cfg.locate("dist.allreduce") + ": " + allreduce_algorithm_missing_reason(r.dist.allreduce) +
                      "; accepted here: " + built_allreduce_names());
  // nccl needs no communication thread: its calls only queue work on NCCL's stream (with
  // dist.hetero_allreduce device, the host ranks' buckets travel over MPI on the thread).
  const bool queued_only = r.dist.allreduce == AllreduceAlgorithm::nccl && !r.dist.hetero_allreduce_device;
  if (r.dist.strategy == DistStrategy::sync && r.dist.overlap && !queued_only && !mpi_threads_serialized())
    throw ConfigError(cfg.locate("dist.overlap") + ": overlapping the all-reduce with backward needs a communication "
                      "thread, and this MPI library does not provide MPI_THREAD_SERIALIZED; set dist.overlap: false");
}

std::optional<std::string> unsupported_reason(const ResolvedConfig& cfg, bool this_machine) {
  // A sweep point: the key and its value say it (the point's config is no file with lines).
  const Locate key = [&cfg](const std::string& k) { return cfg.flat.count(k) ? k + " " + cfg.flat.at(k) : k; };
  if (std::string why = generation_lacks_precision(cfg.run.gpu, cfg.run.precision, key("precision"), key("gpu"));
      !why.empty())
    return why;
  if (!this_machine) return std::nullopt;
  for (BackendKind kind : cfg.run.backends())
    if (std::string why = backend_cannot(cfg, kind, key); !why.empty()) return why;
  return std::nullopt;
}

std::string checkpoint_refusal(const RunConfig& run) {
  // Every rank's backend (ranks.backend), not only this rank's: the ranks must agree.
  const bool cuda = run.backend == BackendKind::cuda ||
                    std::find(run.rank_backends.begin(), run.rank_backends.end(), BackendKind::cuda) != run.rank_backends.end();
  if (cuda && run.cuda_algorithms != AlgorithmChoice::deterministic)
    return std::string("backend cuda with cuda.algorithms ") + algorithm_choice_name(run.cuda_algorithms) +
           " is not checkpointed: a new process may choose other cuDNN algorithms (and some sum with atomics), so a "
           "resumed run would not be bit-identical to the uninterrupted one; set cuda.algorithms: deterministic "
           "(the best deterministic algorithms by cuDNN's ranking), or run without checkpoints";
  if (run.dist.strategy == DistStrategy::hogwild)
    return "dist.strategy hogwild is not checkpointed: its replicas race on the shared weights, so no resumed run "
           "could repeat the uninterrupted one; run without checkpoints";
  return "";
}

}  // namespace ts
