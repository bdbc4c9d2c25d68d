// Per-worker shares of the global batch (docs/heterogeneous.md): how many
// of a step's global_batch samples each rank takes, and where its part starts. The shares of
// all ranks sum to the global batch; rank r takes the contiguous part [offset_r, offset_r +
// share_r) of the step's samples (offsets are prefix sums), so the ranks together see what one
// rank with the global batch sees. Pure arithmetic, the same on every rank for the same input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ts {

// How the shares are chosen (dist.partition):
//   equal     global_batch / world each (the default);
//   static    dist.shares, fixed;
//   measured  equal for the first dist.calibration_steps steps, then proportional to each rank's
//             measured samples/s over them, fixed from then on;
//   adaptive  as measured, re-measured and re-balanced every dist.rebalance_steps steps.
enum class PartitionKind { equal, static_, measured, adaptive };
const char* partition_kind_name(PartitionKind kind);  // "equal" | "static" | "measured" | "adaptive"
std::vector<PartitionKind> all_partition_kinds();

// Shares proportional to `samples_per_s` (one entry per rank, each > 0; a non-finite or
// non-positive entry counts as the slowest finite one), in multiples of `quantum`, each at least
// `quantum`, summing to `global_batch` (largest-remainder rounding of the ideal shares). Needs
// global_batch a multiple of quantum and at least world x quantum (the config checks).
std::vector<int64_t> shares_by_speed(const std::vector<double>& samples_per_s, int64_t global_batch, int64_t quantum);

// global_batch / world each; the first global_batch % world ranks take one more.
std::vector<int64_t> equal_shares(int64_t global_batch, int world);

// Where each rank's part starts: the prefix sums of `shares` (offsets[0] = 0).
std::vector<int64_t> share_offsets(const std::vector<int64_t>& shares);

// "96,32" (logs, the run file).
std::string shares_text(const std::vector<int64_t>& shares);

}  // namespace ts
