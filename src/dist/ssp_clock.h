// The stale-synchronous-parallel bound of one parameter-server shard (docs/async.md):
// which worker may get its fresh weights now, and how stale
// each applied gradient was. Pure bookkeeping, no MPI: dist/async_ps_server.h drives it.
//
// A worker's clock is the number of gradients it has pushed. The round is the smallest clock
// over the workers still training (a worker that left holds nobody back). The reply to a
// worker's push (its fresh weights) may go once round >= clock - staleness: its next gradient
// is then computed on weights that hold every worker's gradients up to that round. With
// staleness 0 that is bulk synchronous: every worker's gradient of step c is applied before any
// worker computes step c + 1. A push marked final (a worker's last step) waits for round ==
// clock whatever the bound, so every worker ends with the same, final weights.
// The staleness of an applied gradient is how far its worker was ahead of the weights it was
// computed on: the steps the worker had pushed when the reply carrying them went, less the round
// they held (the steps of the other workers they lack), 0..staleness. The fastest worker meets
// the bound; the slowest computes on weights that hold every worker's steps up to its own: 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ts {

class SspClock {
 public:
  // `workers` >= 1, `staleness` >= 0.
  SspClock(int workers, int64_t staleness);

  // Worker `worker` pushed a gradient (final: its last); returns that gradient's staleness.
  int64_t on_push(int worker, bool final);
  // Worker `worker` stops pushing (its run ended or diverged): it no longer holds others back,
  // and a reply it still waits for is dropped.
  void on_leave(int worker);
  // The workers whose replies may go now (each awaiting one), in worker order; each is marked
  // answered, as of the current round.
  std::vector<int> take_ready();

  // A resumed run: every worker has pushed `steps` gradients and holds the weights after them.
  void start_at(int64_t steps);

  int64_t round() const;
  int64_t newest() const;  // the most gradients any worker has pushed
  int64_t clock(int worker) const { return clock_[static_cast<size_t>(worker)]; }
  bool all_left() const;
  int workers() const { return static_cast<int>(clock_.size()); }
  int64_t staleness() const { return staleness_; }

 private:
  int64_t staleness_;
  std::vector<int64_t> clock_;        // gradients pushed, per worker
  std::vector<int64_t> sent_round_;   // the round when the worker's weights were sent
  std::vector<char> awaiting_, final_, left_;
};

}  // namespace ts
