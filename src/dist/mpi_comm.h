// dist-internal: the MPI side of a Communicator, for the other files of dist/ (allreduce.cpp,
// allreduce_bench.cpp). Never include this outside src/dist: MPI types stay in dist/.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/scratch_memory.h"
#include "dist/watchdog.h"

namespace ts {

// Throws RuntimeError "file:line: call failed on rank R (host): what" (rank -1, host "?" before
// MPI_Init): a failed MPI, CUDA or NCCL call (dist/cuda/device_check.h).
[[noreturn]] void throw_call_error(const char* call, const char* file, int line, const std::string& what);
// Throws RuntimeError naming the MPI call, file:line, rank and the library's error text.
void check_mpi(int rc, const char* call, const char* file, int line);

#define TS_MPI(call) ::ts::check_mpi((call), #call, __FILE__, __LINE__)

// MPI counts are int: larger transfers are split into segments of at most 1 Gi elements.
constexpr int64_t kMpiMaxCount = int64_t{1} << 30;

// dist.allreduce: mpi on one segment: MPI_Allreduce in place with MPI_SUM (mpi_sum.cpp).
// trainscale-sim links dist/smpi/modelled_mpi_sum.cpp instead: a user operation that charges the
// simulated node the sum's memory time, as the hand-written algorithms' add_into does, so the
// library's all-reduce gets the gamma term the model gives it.
void mpi_allreduce_sum_in_place(MPI_Comm comm, float* data, int count);

class NcclCommunicator;  // dist/cuda/nccl_comm.h (CUDA builds)

struct Communicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm node = MPI_COMM_NULL;  // the ranks of this rank's node (MPI_COMM_TYPE_SHARED)
  // Reusable receive buffer of the hand-written collectives (grown, never shrunk), so a timed
  // loop does not allocate.
  ScratchFloats scratch;
  // The NCCL communicator over the same ranks, created on first use (nccl_of); destroyed with
  // this communicator. A shared_ptr, so that this header needs no NCCL type.
  std::shared_ptr<NcclCommunicator> nccl;
  // Bounds the blocking exchanges (arm_watchdog); null on a world of one rank.
  std::unique_ptr<ExchangeWatchdog> watchdog;
};

struct CommunicatorAccess {
  static Communicator::Impl& impl(Communicator& c) { return *c.impl_; }
  // A Communicator over a duplicate of `base` (our traffic never mixes with the library's),
  // errors returned rather than fatal.
  static std::unique_ptr<Communicator> duplicate(MPI_Comm base);
};

inline MPI_Comm mpi_comm(Communicator& c) { return CommunicatorAccess::impl(c).comm; }

// The watchdog guard of one blocking exchange on `c` (dist/watchdog.h).
inline ExchangeWatchdog* watchdog_of(Communicator& c) { return CommunicatorAccess::impl(c).watchdog.get(); }

}  // namespace ts
