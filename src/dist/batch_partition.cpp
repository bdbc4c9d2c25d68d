// Per-worker shares of the global batch (see batch_partition.h).
#include "dist/batch_partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/enum_names.h"
#include "core/error.h"

namespace ts {
namespace {

using P = PartitionKind;
constexpr EnumName<P> kKinds[] = {
    {P::equal, "equal"}, {P::static_, "static"}, {P::measured, "measured"}, {P::adaptive, "adaptive"}};

}  // namespace

const char* partition_kind_name(PartitionKind kind) { return name_in(kKinds, kind); }
std::vector<PartitionKind> all_partition_kinds() { return values_in(kKinds); }

std::vector<int64_t> shares_by_speed(const std::vector<double>& samples_per_s, int64_t global_batch, int64_t quantum) {
  const int64_t world = static_cast<int64_t>(samples_per_s.size());
  TS_CHECK(world > 0 && quantum > 0 && global_batch % quantum == 0 && global_batch >= world * quantum,
           "shares_by_speed: the global batch must be a multiple of the quantum and hold one quantum per rank");
  // A rank that measured nothing usable counts as the slowest one that did (never as infinitely fast).
  double slowest = 0;
  for (double v : samples_per_s)
    if (std::isfinite(v) && v > 0) slowest = slowest == 0 ? v : std::min(slowest, v);
  std::vector<double> speed(samples_per_s.size(), 1.0);
  for (size_t r = 0; r < speed.size(); ++r) {
    const double v = samples_per_s[r];
    speed[r] = std::isfinite(v) && v > 0 ? v : (slowest > 0 ? slowest : 1.0);
  }
  const double total = std::accumulate(speed.begin(), speed.end(), 0.0);
  // In quanta: the ideal shares rounded down, at least one each; what is left goes to the
  // largest remainders (ties to the lower rank, so every rank computes the same result); a
  // rank raised to its one quantum has no remainder left (it got more than its ideal), and any
  // excess is paid for by the largest shares.
  const int64_t units = global_batch / quantum;
  std::vector<int64_t> whole(speed.size());
  std::vector<std::pair<double, int64_t>> remainders;
  int64_t given = 0;
  for (int64_t r = 0; r < world; ++r) {
    const double ideal = static_cast<double>(units) * speed[static_cast<size_t>(r)] / total;
    whole[static_cast<size_t>(r)] = std::max<int64_t>(1, std::min<int64_t>(units, static_cast<int64_t>(std::floor(ideal))));
    given += whole[static_cast<size_t>(r)];
    remainders.emplace_back(-std::max(0.0, ideal - static_cast<double>(whole[static_cast<size_t>(r)])), r);
  }
  std::sort(remainders.begin(), remainders.end());
  for (size_t i = 0; given < units; i = (i + 1) % remainders.size(), ++given) ++whole[static_cast<size_t>(remainders[i].second)];
  while (given > units) {
    --*std::max_element(whole.begin(), whole.end());
    --given;
  }
  std::vector<int64_t> shares(speed.size());
  for (size_t r = 0; r < shares.size(); ++r) shares[r] = whole[r] * quantum;
  return shares;
}

std::vector<int64_t> equal_shares(int64_t global_batch, int world) {
  std::vector<int64_t> shares(static_cast<size_t>(world), global_batch / world);
  for (int64_t r = 0; r < global_batch % world; ++r) ++shares[static_cast<size_t>(r)];
  return shares;
}

std::vector<int64_t> share_offsets(const std::vector<int64_t>& shares) {
  std::vector<int64_t> offsets(shares.size(), 0);
  for (size_t r = 1; r < shares.size(); ++r) offsets[r] = offsets[r - 1] + shares[r - 1];
  return offsets;
}

std::string shares_text(const std::vector<int64_t>& shares) {
  std::string text;
  for (size_t r = 0; r < shares.size(); ++r) text += (r ? "," : "") + std::to_string(shares[r]);
  return text;
}

}  // namespace ts
