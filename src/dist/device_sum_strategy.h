// dist-internal: `sync` gradient averaging with dist.hetero_allreduce device (docs/heterogeneous.md
// "Where mixed ranks sum gradients"), the device-side aggregation of heterogeneous CPU + GPU
// data parallelism: the gradients travel to a GPU and are summed there, instead of the GPU's
// gradients travelling to the host (dist.hetero_allreduce host, SyncExchange).
//
// Per bucket, as backward produces it (overlap: on the communication thread):
//   host rank  -- its bucket (MPI_Send) -->  its node's GPU rank ("summer", dist/group_sum.h)
//   summer     grads += each member's bucket (copied to the GPU and added there), then the
//              sum over the summers (NCCL), x 1/N  -- the mean (MPI_Send) -->  its host ranks
// The loss and the non-finite count travel in a 2-float all-reduce over every rank after the
// tail bucket. Every rank then applies the same update with its own backend.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "dist/group_sum.h"
#include "dist/linked_exchange.h"

namespace ts {

// Makes a summer's GroupSum over `summers` for `members` host ranks, buckets of at most
// `capacity` floats (CUDA builds: dist/cuda/cuda_group_sum.cpp; tests: make_host_group_sum).
using MakeGroupSum = std::function<std::unique_ptr<GroupSum>(Communicator& summers, size_t members, int64_t capacity)>;

class DeviceSumExchange : public PipelinedExchange {
 public:
  // Collective over `comm` (splits off the summers' communicator). `groups` as sum_groups_of
  // gives them; `make_sum` runs on the summers only.
  DeviceSumExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options, SumGroups groups,
                    const MakeGroupSum& make_sum);

  const char* name() const override { return "sync"; }
  ArenaTransport transport() const override { return ArenaTransport::device_sum; }
  // A summer's sums are done on its device (scale_to_outbox waited for them): the update
  // queued next reads the means.
  StepVerdict finish_step(bool /*every step exchanges*/) override { return finish_averaged_step(verdict_); }

 private:
  void reduce_bucket(size_t index) override;
  void sum_as_summer(int64_t offset, int64_t count);
  void exchange_verdict();

  const SumGroups groups_;
  const std::vector<int> members_;       // a summer's host ranks (empty elsewhere)
  std::unique_ptr<Communicator> summers_;  // the summers' communicator (the others' on a host rank)
  std::unique_ptr<GroupSum> sum_;        // summers only
  VerdictStaging verdict_;               // [loss, non-finite] only
};

}  // namespace ts
