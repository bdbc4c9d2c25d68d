// dist-internal, for dist.hetero_allreduce device (dist/device_sum_strategy.h,
// docs/heterogeneous.md "Where mixed ranks sum gradients"): which rank sums whose gradients,
// and the summing rank's sums in the memory its arenas live in.
//
// Groups: on every node, each host rank (CPU backend) is assigned to one of the node's device
// ranks (CUDA backend) in turn; a device rank sums its own gradients and its host ranks', the
// device ranks ("summers") sum over each other, and each sends the mean back to its host ranks.
//   node A: rank 0 cpu, rank 1 cuda, rank 2 cpu  ->  summer 1 sums {1, 0, 2}
//   node B: rank 3 cuda, rank 4 cpu              ->  summer 3 sums {3, 4};  summers {1, 3}
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/allreduce.h"
#include "dist/communicator.h"

namespace ts {

// One rank as the groups see it: the node it runs on and whether its arenas are device memory.
struct RankPlace {
  uint64_t node = 0;  // the same for the ranks of one node (a hash of the host name)
  bool device = false;
};

struct SumGroups {
  std::vector<int> summer_of;  // for every rank, the rank that sums its buckets (itself: a summer)
  bool is_summer(int rank) const { return summer_of[static_cast<size_t>(rank)] == rank; }
  // The ranks `summer` sums for, other than itself, in rank order.
  std::vector<int> members_of(int summer) const;
  // The groups of `ranks` (rank order). ConfigError naming the node's ranks when a node has
  // host ranks but no device rank to sum them.
  static SumGroups of(const std::vector<RankPlace>& ranks);
};

// Collective: every rank's place (its host's name and whether `device_arenas`), gathered, and
// the groups of them (the same on every rank, so a refusal is every rank's).
SumGroups sum_groups_of(Communicator& comm, bool device_arenas);

// A summing rank's sums over ranges of its gradient arena, in the arena's own memory (a GPU's
// for a device rank). Members' buckets arrive in host memory (inbox), the mean leaves through
// host memory (outbox); both hold `capacity` floats (the largest bucket).
class GroupSum {
 public:
  virtual ~GroupSum() = default;
  virtual float* inbox(size_t member) = 0;
  virtual float* outbox() = 0;
  // grads[offset, offset + count) += inbox(member)[0, count) (may be queued).
  virtual void add(size_t member, int64_t offset, int64_t count) = 0;
  // In-place sum of grads[offset, offset + count) over the summers (may be queued).
  virtual void sum_over_summers(int64_t offset, int64_t count) = 0;
  // grads[offset, offset + count) *= factor and copied to outbox(); returns once the outbox
  // holds them (everything queued before is then done, and inboxes may be refilled).
  virtual void scale_to_outbox(int64_t offset, int64_t count, float factor) = 0;
};

// The sums in host memory: `grads` a host arena, the summers' sum with `algorithm` over
// `summers` (the communicator of the summing ranks). The protocol's reference (tests compare it
// with a plain all-reduce) and the stand-in for a GPU where there is none.
std::unique_ptr<GroupSum> make_host_group_sum(float* grads, Communicator& summers, AllreduceAlgorithm algorithm,
                                              size_t members, int64_t capacity);

}  // namespace ts
