// The link to host arenas, and what every link shares (see arena_link.h).
#include "dist/arena_link.h"

#include "core/error.h"
#include "dist/bucket_plan.h"
#ifdef TRAINSCALE_HAVE_NCCL
#include "dist/cuda/device_exchange.h"
#endif

namespace ts {
namespace {

// Host arenas: the MPI algorithms work on them where they are.
class HostArenaLink final : public ArenaLink {
 public:
  explicit HostArenaLink(const ModelArenas& arenas) : arenas_(arenas) {}
  ArenaTransport transport() const override { return ArenaTransport::host; }
  float* host(Arena a) override {
    return a == Arena::params ? arenas_.params : a == Arena::grads ? arenas_.grads : arenas_.state;
  }
  void mark(size_t) override {}
  size_t now_mark() override { return 0; }
  void wait(size_t) override {}
  void pull(Arena, int64_t, int64_t, size_t) override {}
  void push(Arena, int64_t, int64_t) override {}
  void order_compute_after_pushes() override {}

 private:
  const ModelArenas arenas_;
};

}  // namespace

void ArenaLink::average(Communicator& comm, AllreduceAlgorithm algorithm, Arena a, int64_t offset, int64_t count,
                        size_t slot, PsTimings* ps) {
  if (count == 0) return;
  pull(a, offset, count, slot);
  average_over_ranks(comm, algorithm, host(a) + offset, count, ps);
  push(a, offset, count);
}

void ArenaLink::broadcast(Communicator& comm, Arena a, int64_t offset, int64_t count, int root, size_t slot) {
  if (count == 0) return;
  if (comm.rank() == root) pull(a, offset, count, slot);
  comm.broadcast(host(a) + offset, count, root);
  if (comm.rank() != root) push(a, offset, count);
}

void ArenaLink::broadcast_model(Communicator& comm, const ModelArenas& arenas) {
  const size_t now = now_mark();
  broadcast(comm, Arena::params, 0, arenas.param_count, 0, now);
  broadcast(comm, Arena::state, 0, arenas.state_count, 0, now);
  order_compute_after_pushes();
}

void ArenaLink::average_state(Communicator& comm, AllreduceAlgorithm algorithm, const ModelArenas& arenas) {
  average(comm, algorithm, Arena::state, 0, arenas.state_count, now_mark());
  order_compute_after_pushes();
}

std::unique_ptr<ArenaLink> make_arena_link(const ModelArenas& arenas, const ExchangeOptions& options, size_t marks) {
  if (arenas.device.host_accessible) return std::make_unique<HostArenaLink>(arenas);
#ifdef TRAINSCALE_HAVE_NCCL
  const bool cuda_aware = options.cuda_aware_mpi && options.algorithm == AllreduceAlgorithm::mpi &&
                          mpi_library().cuda_aware;
  return make_cuda_arena_link(arenas, cuda_aware, marks);
#else
  throw RuntimeError("exchange strategy: the model's arenas are device memory, and this build of dist/ has no CUDA "
                     "support; configure with -DTRAINSCALE_CUDA=ON");
#endif
}

}  // namespace ts
