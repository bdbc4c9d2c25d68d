// `sync` with dist.hetero_allreduce device (see device_sum_strategy.h).
#include "dist/device_sum_strategy.h"

#include "core/error.h"
#include "core/timer.h"

namespace ts {
namespace {

// Weights, state and the state's averages go through the arena link with MPI (set-up and
// evaluation only); the buckets never do.
ExchangeOptions link_options(ExchangeOptions options) {
  options.algorithm = AllreduceAlgorithm::mpi;
  return options;
}

}  // namespace

DeviceSumExchange::DeviceSumExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options,
                                     SumGroups groups, const MakeGroupSum& make_sum)
    : PipelinedExchange(comm, arenas, BucketPlan::tile(arenas.param_count, options.bucket_elements),
                        link_options(options)),
      groups_(std::move(groups)),
      members_(groups_.is_summer(comm.rank()) ? groups_.members_of(comm.rank()) : std::vector<int>{}),
      summers_(comm.split(groups_.is_summer(comm.rank()) ? 0 : 1)),
      verdict_(0) {
  TS_CHECK(static_cast<int>(groups_.summer_of.size()) == comm.size(),
           "dist.hetero_allreduce device: groups of " + std::to_string(groups_.summer_of.size()) + " ranks for " +
               std::to_string(comm.size()));
  summers_->arm_watchdog(comm.watchdog_timeout());  // collective over each half of the split
  if (!groups_.is_summer(comm.rank()))
    TS_CHECK(arenas.device.host_accessible, "dist.hetero_allreduce device: a rank with device arenas must sum");
  else
    sum_ = make_sum(*summers_, members_.size(), plan_.largest());
}

// One bucket: a host rank hands it to its summer and takes the mean back; a summer sums.
void DeviceSumExchange::reduce_bucket(size_t i) {
  const auto [offset, count] = plan_.buckets[i];
  const bool tail = i + 1 == plan_.buckets.size();
  if (comm_.size() == 1) {  // nothing to sum: only the verdict's loss is recorded
    if (tail) verdict_.set_loss(local_loss_.value());
    return;
  }
  link_->wait(i);  // device arenas: backward up to this bucket is compute, not communication
  const double t0 = now_seconds();
  if (sum_) {
    sum_as_summer(offset, count);
  } else {
    const int summer = groups_.summer_of[static_cast<size_t>(comm_.rank())];
    comm_.send_floats(arenas_.grads + offset, count, summer);
    comm_.receive_floats(arenas_.grads + offset, count, summer);
  }
  if (tail) exchange_verdict();
  times_.wire_bytes += static_cast<double>(count) * sizeof(float);
  times_.comm += now_seconds() - t0;
}

// grads = (own + members') summed over the summers, x 1/N; the mean back to the members.
void DeviceSumExchange::sum_as_summer(int64_t offset, int64_t count) {
  for (size_t m = 0; m < members_.size(); ++m) {
    comm_.receive_floats(sum_->inbox(m), count, members_[m]);
    sum_->add(m, offset, count);
  }
  sum_->sum_over_summers(offset, count);
  sum_->scale_to_outbox(offset, count, 1.0f / static_cast<float>(comm_.size()));
  for (int member : members_) comm_.send_floats(sum_->outbox(), count, member);
}

void DeviceSumExchange::exchange_verdict() {
  verdict_.set_loss(local_loss_.value());
  comm_.allreduce_sum(verdict_.data(), verdict_.size());
}

}  // namespace ts
