// Room for a run's FAILED marker, taken when the run starts (issue 35): a run that fails because
// its disk is full must still say so, and a marker written then needs blocks the disk may not
// have (the room a failed write frees can be taken by another process at once: 1 run in 8 left
// no marker). The reserve is a hidden file of kMarkerReserveBytes written in full beside the
// marker; write_marker (core/run_marker.h), when its normal write fails, writes the marker into
// the reserve's own blocks, shrinks it and renames it to the marker's name (no new block), and
// else frees the reserve and tries once more.
#pragma once

#include <string>

namespace ts {

constexpr long kMarkerReserveBytes = 16 * 1024;  // a marker is a few hundred bytes

// "<dir>/.<marker file name>.reserve".
std::string marker_reserve_path(const std::string& marker_path);

// Holds the reserve of `marker_path` from construction to destruction (then removes it, unless a
// marker was written into it). One left by a process that was killed is made again (the run's
// lock keeps a second live process out). A disk too full for it leaves none (a note on stderr).
class MarkerReserve {
 public:
  explicit MarkerReserve(const std::string& marker_path);
  ~MarkerReserve();
  MarkerReserve(const MarkerReserve&) = delete;
  MarkerReserve& operator=(const MarkerReserve&) = delete;

 private:
  std::string path_;
  bool owner_ = false;
};

// Writes `text` (cut to kMarkerReserveBytes) as the file `marker_path` through its reserve; false
// when there is no reserve or it could not be used (the reserve is then removed, freeing its room).
bool write_through_reserve(const std::string& marker_path, const std::string& text);

}  // namespace ts
