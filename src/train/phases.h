// The timing phases of a training step, /timing/<phase> in the run file (docs/hdf5-schema.md).
// Indexed by an enum: the timed loop stores each step's seconds by index, and names appear only
// when the run file is written.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace ts {

enum class Phase : size_t {
  data_wait,  // Loader::next waited for the batch
  forward,
  backward,
  comm,       // in communication calls (any thread)
  comm_wait,  // the training thread waited for communication after backward
  optimizer,
  step,       // the whole step
  gather,     // parameter-server phases: only for strategies that time them
  average,
  broadcast,
  compress,    // compressed exchanges: encoding (part of comm)
  decompress,  // compressed exchanges: decoding (part of comm)
};
inline constexpr size_t kPhaseCount = 12;
inline constexpr size_t kCommonPhaseCount = 7;  // data_wait .. step: every run has these

const char* phase_name(Phase phase);
// The phases a run file holds: the common ones, the parameter-server phases when the strategy
// times them, compress and decompress when it compresses.
std::vector<Phase> recorded_phases(bool ps_phases, bool compression);

// Seconds of one step per phase (zeros for phases a strategy does not time).
using PhaseSeconds = std::array<double, kPhaseCount>;

inline double& at(PhaseSeconds& s, Phase p) { return s[static_cast<size_t>(p)]; }
inline double at(const PhaseSeconds& s, Phase p) { return s[static_cast<size_t>(p)]; }

}  // namespace ts
