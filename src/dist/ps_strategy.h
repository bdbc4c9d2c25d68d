// dist-internal: the parameter server of the SHM-Learn-Dist paper (`sync` with dist.allreduce
// ps, docs/strategies.md): rank 0 gathers every rank's gradient buckets (during backward with
// overlap), averages them, applies the optimizer (no other rank runs it) and broadcasts the
// weights. Timed as gather, average (rank 0's summation; 0 elsewhere) and broadcast. Device
// arenas are staged through pinned host memory (dist/arena_link.h): the gathered sums are on the
// host anyway.
#pragma once

#include <memory>
#include <vector>

#include "dist/linked_exchange.h"
#include "dist/scratch_memory.h"

namespace ts {

class ParameterServerExchange : public PipelinedExchange {
 public:
  ParameterServerExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options);

  const char* name() const override { return "ps"; }
  StepVerdict finish_step(bool average_weights) override;
  bool replicas_identical() const override { return true; }

 private:
  void reduce_bucket(size_t index) override;  // gathers the bucket to rank 0
  void broadcast_weights();

  VerdictStaging staging_;       // the tail bucket + [loss, non-finite]
  ScratchFloats gathered_;       // rank 0: world x (largest bucket + extras)
};

}  // namespace ts
