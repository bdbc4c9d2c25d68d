// Strategy names and the factory (see exchange_strategy.h). A new strategy adds its name here
// and one line to make_exchange_strategy.
#include "dist/exchange_strategy.h"

#include "core/enum_names.h"
#include "core/error.h"
#include "dist/async_ps_worker.h"
#include "dist/comm_thread.h"
#include "dist/hogwild_strategy.h"
#include "dist/ps_strategy.h"
#include "dist/sync_strategy.h"
#include "dist/weight_avg_strategy.h"
#ifdef TRAINSCALE_HAVE_NCCL
#include "dist/cuda/device_exchange.h"
#endif

namespace ts {
namespace {

using T = ArenaTransport;
constexpr EnumName<DistStrategy> kStrategies[] = {{DistStrategy::sync, "sync"},
                                                  {DistStrategy::weight_avg, "weight_avg"},
                                                  {DistStrategy::async_ps, "async_ps"},
                                                  {DistStrategy::hogwild, "hogwild"}};
constexpr EnumName<T> kTransports[] = {{T::host, "host"}, {T::staged, "staged"}, {T::cuda_aware_mpi, "cuda_aware_mpi"},
                                       {T::nccl, "nccl"}, {T::device_sum, "device_sum"}};

}  // namespace

const char* dist_strategy_name(DistStrategy strategy) { return name_in(kStrategies, strategy); }
std::vector<DistStrategy> all_dist_strategies() { return values_in(kStrategies); }
const char* arena_transport_name(ArenaTransport transport) { return name_in(kTransports, transport); }

namespace {

// nccl reduces device memory with the sync strategy only.
void check_nccl_arenas(const ModelArenas& arenas, const ExchangeOptions& options) {
  if (arenas.device.host_accessible)
    throw ConfigError("dist.allreduce: nccl reduces GPU memory, and this model's arenas are host memory; use backend: "
                      "cuda, or an MPI algorithm (mpi, ring, tree, ps, shm) with a CPU backend");
  if (options.strategy != DistStrategy::sync)
    throw ConfigError(std::string("dist.allreduce: nccl runs dist.strategy sync, not ") +
                      dist_strategy_name(options.strategy) + "; " + dist_strategy_name(options.strategy) +
                      " on GPUs averages through an MPI algorithm (mpi, ring, tree, ps, shm: staged through host memory)");
}

// Compression is part of sync's bucket path; the parameter server and weight averaging have none.
void check_compression(const ExchangeOptions& options) {
  if (!options.compression.enabled()) return;
  const std::string kind = compression_kind_name(options.compression.kind);
  if (options.strategy != DistStrategy::sync)
    throw ConfigError("dist.compression: " + kind + " compresses the gradients of dist.strategy sync, not " +
                      dist_strategy_name(options.strategy) + "; set dist.compression: none or dist.strategy: sync");
  if (options.algorithm == AllreduceAlgorithm::ps || options.algorithm == AllreduceAlgorithm::nccl)
    throw ConfigError("dist.compression: " + kind + " is not implemented with dist.allreduce " +
                      allreduce_algorithm_name(options.algorithm) +
                      "; use dist.allreduce mpi, ring, tree or shm, or dist.compression: none");
}

// A communication thread (`threaded`) calls MPI beside the caller's thread.
void check_overlap(bool threaded) {
  if (threaded && !CommThread::can_call_mpi())
    throw ConfigError("dist.overlap: the communication thread needs MPI_THREAD_SERIALIZED, which this MPI library "
                      "did not provide; set dist.overlap: false");
}

}  // namespace

std::unique_ptr<ExchangeStrategy> make_exchange_strategy(Communicator& comm, ModelArenas arenas,
                                                         const ExchangeOptions& options) {
  TS_CHECK(arenas.param_count >= 0 && arenas.state_count >= 0, "exchange strategy: negative arena size");
  if (!allreduce_algorithm_built(options.algorithm))
    throw ConfigError("dist.allreduce: " + allreduce_algorithm_missing_reason(options.algorithm));
  check_compression(options);
  if (options.device_sum) {
    if (options.strategy != DistStrategy::sync || options.algorithm != AllreduceAlgorithm::nccl)
      throw ConfigError("dist.hetero_allreduce: device sums the gradients of dist.strategy sync on the GPUs with "
                        "NCCL; set dist.strategy: sync and dist.allreduce: nccl, or dist.hetero_allreduce: host");
    check_overlap(options.overlap);
#ifdef TRAINSCALE_HAVE_NCCL
    return make_device_sum_exchange(comm, arenas, options);
#endif
  }
  if (options.algorithm == AllreduceAlgorithm::nccl) {
    check_nccl_arenas(arenas, options);
#ifdef TRAINSCALE_HAVE_NCCL
    return make_nccl_sync_exchange(comm, arenas, options);  // queues on NCCL's stream: no thread
#endif
  }
  check_overlap(options.strategy == DistStrategy::sync && options.overlap);
  if (options.strategy == DistStrategy::hogwild)
    return std::make_unique<HogwildExchange>(arenas, options.hogwild.total_steps, options.hogwild.after_last_step);
  if (options.strategy == DistStrategy::async_ps) return std::make_unique<AsyncPsWorkerExchange>(comm, arenas, options);
  if (options.strategy == DistStrategy::weight_avg)
    return std::make_unique<WeightAveragingExchange>(comm, arenas, options);
  if (options.algorithm == AllreduceAlgorithm::ps)
    return std::make_unique<ParameterServerExchange>(comm, arenas, options);
  return std::make_unique<SyncExchange>(comm, arenas, options);
}

}  // namespace ts
