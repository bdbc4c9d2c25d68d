// Sum groups and the host GroupSum (see group_sum.h).
#include "dist/group_sum.h"

#include <map>

#include "core/error.h"
#include "core/strings.h"
#include "dist/bucket_plan.h"

namespace ts {

std::vector<int> SumGroups::members_of(int summer) const {
  std::vector<int> members;
  for (size_t r = 0; r < summer_of.size(); ++r)
    if (summer_of[r] == summer && static_cast<int>(r) != summer) members.push_back(static_cast<int>(r));
  return members;
}

SumGroups SumGroups::of(const std::vector<RankPlace>& ranks) {
  // Per node, in order of first appearance: its device ranks and its host ranks.
  std::vector<uint64_t> nodes;
  std::map<uint64_t, std::pair<std::vector<int>, std::vector<int>>> kinds;
  for (size_t r = 0; r < ranks.size(); ++r) {
    auto [it, fresh] = kinds.try_emplace(ranks[r].node);
    if (fresh) nodes.push_back(ranks[r].node);
    (ranks[r].device ? it->second.first : it->second.second).push_back(static_cast<int>(r));
  }
  SumGroups groups;
  groups.summer_of.assign(ranks.size(), -1);
  for (uint64_t node : nodes) {
    const auto& [device, host] = kinds[node];
    if (device.empty()) {
      std::string list;
      for (int r : host) list += (list.empty() ? "" : ", ") + std::to_string(r);
      throw ConfigError("dist.hetero_allreduce: device sums every rank's gradients on a GPU of its node, and the node "
                        "of rank(s) " + list + " runs no CUDA rank; give every node a rank with backend: cuda "
                        "(ranks: [...]), or use dist.hetero_allreduce: host");
    }
    for (int r : device) groups.summer_of[static_cast<size_t>(r)] = r;
    for (size_t i = 0; i < host.size(); ++i)
      groups.summer_of[static_cast<size_t>(host[i])] = device[i % device.size()];
  }
  return groups;
}

SumGroups sum_groups_of(Communicator& comm, bool device_arenas) {
  struct Wire {
    uint64_t node;
    uint64_t device;
  };
  const Wire mine{fnv1a64(comm.host()), device_arenas ? 1u : 0u};  // the same key for one host on every rank
  std::vector<Wire> all(static_cast<size_t>(comm.size()));
  comm.allgather_bytes(&mine, sizeof(Wire), all.data());
  std::vector<RankPlace> places;
  for (const Wire& w : all) places.push_back({w.node, w.device != 0});
  return SumGroups::of(places);
}

namespace {

class HostGroupSum : public GroupSum {
 public:
  HostGroupSum(float* grads, Communicator& summers, AllreduceAlgorithm algorithm, size_t members, int64_t capacity)
      : grads_(grads),
        summers_(summers),
        algorithm_(algorithm),
        inboxes_(members, std::vector<float>(static_cast<size_t>(capacity))),
        outbox_(static_cast<size_t>(capacity)) {}

  float* inbox(size_t member) override { return inboxes_[member].data(); }
  float* outbox() override { return outbox_.data(); }
  void add(size_t member, int64_t offset, int64_t count) override {
    add_into(grads_ + offset, inboxes_[member].data(), count);
  }
  void sum_over_summers(int64_t offset, int64_t count) override {
    if (summers_.size() > 1) allreduce_sum(summers_, algorithm_, grads_ + offset, count);
  }
  void scale_to_outbox(int64_t offset, int64_t count, float factor) override {
    scale(grads_ + offset, count, factor);
    copy_floats(outbox_.data(), grads_ + offset, count);
  }

 private:
  float* grads_;
  Communicator& summers_;
  const AllreduceAlgorithm algorithm_;
  std::vector<std::vector<float>> inboxes_;
  std::vector<float> outbox_;
};

}  // namespace

std::unique_ptr<GroupSum> make_host_group_sum(float* grads, Communicator& summers, AllreduceAlgorithm algorithm,
                                              size_t members, int64_t capacity) {
  return std::make_unique<HostGroupSum>(grads, summers, algorithm, members, capacity);
}

}  // namespace ts
