// The trainer's view of the other ranks. Owns every byte that crosses ranks (docs/architecture.md:
// dist/ owns communication). A world of size 1 is an ordinary communicator, so the trainer
// has no single-process special case. No MPI types leak out of dist/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ts {

// The 16-bit float formats of Communicator::allreduce_sum_half (dist/half_codec.h).
enum class HalfFormat { fp16, bf16 };

// The MPI library this binary is linked against.
struct MpiLibrary {
  std::string flavor;   // "openmpi" | "mpich" | "intel" | "unknown"
  std::string version;  // e.g. "4.1.4" (first line of MPI_Get_library_version, trimmed)
  std::string full;     // the library's own version string
  // The MPI library's tuning settings in this process's environment (Open MPI: OMPI_MCA_*;
  // MPICH: MPIR_CVAR_*, MPICH_*; both: UCX_*), "NAME=value" sorted: they change what a run or
  // a benchmark measures (e.g. Open MPI's vader single-copy mechanism), so run and bench files
  // record them.
  std::vector<std::string> tuning;
  // The library can read and write CUDA device memory (Open MPI's and MPICH's
  // MPIX_Query_cuda_support(), asked at run time; false where the header lacks it).
  bool cuda_aware = false;
};

// Initialises MPI for the process lifetime and finalises it. Create exactly one, in main.
// Asks for MPI_THREAD_SERIALIZED: the gradient exchange's communication thread calls MPI
// while the main thread computes, never at the same time as it (dist/comm_thread.h).
// A library that provides less is accepted here; mpi_threads_serialized() tells, and
// dist.overlap (which needs it) is refused with a clear error.
// Leaving: a barrier, then MPI_Finalize with a deadline (dist/bounded_finalize.h); past it the
// process exits with the code given to set_exit_code (0 unless told; 1 while an exception
// unwinds).
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  // The command's exit code, for a finalize that has to be abandoned; returns `code`.
  int set_exit_code(int code) { return exit_code_ = code; }

 private:
  int exit_code_ = 0;
};

// What a rank's watchdog found when one of its exchanges did not complete within the timeout
// (Communicator::arm_watchdog, dist/watchdog.h).
struct ExchangeTimeout {
  // One line: this rank and host, what it waited in and for how long, the state of every rank
  // of its host (running, stopped, gone), and what to do.
  std::string reason;
  bool rank0_answering = false;  // rank 0 runs on this host and is neither stopped nor gone
};
// Runs on the watchdog's thread before it ends the job (writes the FAILED marker); must not
// call MPI.
using TimeoutReport = std::function<void(const ExchangeTimeout&)>;

class Communicator {
 public:
  // MPI_COMM_WORLD (duplicated, so library traffic never mixes with ours).
  static std::unique_ptr<Communicator> world();
  // MPI_COMM_SELF (duplicated): a world of one rank, e.g. a reference run inside an MPI job.
  static std::unique_ptr<Communicator> self();
  // The ranks of this communicator that pass the same `color`, in rank order (MPI_Comm_split):
  // async_ps's workers and servers. Collective; the result's watchdog is disarmed.
  std::unique_ptr<Communicator> split(int color);
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // This rank's index among the ranks of its node, and their number
  // (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)): a GPU backend computes on device
  // local_rank() % visible devices.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  std::string host() const;  // this rank's processor name

  // In-place element-wise sum over all ranks (MPI_Allreduce).
  void allreduce_sum(float* data, int64_t count);
  void allreduce_sum(double* data, int64_t count);
  // In-place sum of 16-bit floats over all ranks (MPI_Allreduce with a user operation that adds
  // two values in fp32 and rounds the sum back to `format`; the gradient compressors fp16/bf16).
  void allreduce_sum_half(uint16_t* data, int64_t count, HalfFormat format);
  // Every rank's `bytes` bytes from `local` (the same count on all ranks), concatenated in rank
  // order into `all` (size() * bytes) on every rank (MPI_Allgather; qsgd and topk).
  void allgather_bytes(const void* local, int64_t bytes, void* all);
  // Every rank's `local` (same length on all ranks) concatenated in rank order, on rank 0
  // only (other ranks get an empty vector).
  std::vector<float> gather_to_root(const std::vector<float>& local);
  // Every rank's string, on rank 0 only.
  std::vector<std::string> gather_strings_to_root(const std::string& local);
  // Large messages of any size, rank by rank (point to point, in chunks below MPI's int
  // counts): a checkpoint's state of every rank, which can hold a whole model each.
  // gather: every rank's `local`, on rank 0 only (in rank order).
  std::vector<std::string> gather_blobs_to_root(const std::string& local);
  // The same one rank at a time, so that rank 0 never holds every rank's message: gather hands
  // each other rank's message to `take(rank, message)` on rank 0 as it arrives (rank 0's own is
  // not passed); scatter asks `make(rank)` for each other rank's message just before sending it
  // and returns make(0) on rank 0 (`make` is not called elsewhere).
  void gather_blobs_to_root(const std::string& local, const std::function<void(int, std::string&&)>& take);
  std::string scatter_blobs_from_root(const std::function<std::string(int)>& make);
  // `count` floats of every rank, concatenated in rank order into `all` (size() * count
  // floats) on rank 0; `all` is not touched (may be null) elsewhere. Rank 0's own block is
  // copied locally.
  void gather_to_root(const float* local, int64_t count, float* all);
  // `count` floats to rank `dest` / from rank `source` (MPI_Send / MPI_Recv, in chunks below
  // MPI's int counts), matched in the order they are posted: dist.hetero_allreduce device's
  // buckets between a host rank and the GPU rank that sums for it. Guarded by the watchdog.
  void send_floats(const float* data, int64_t count, int dest);
  void receive_floats(float* data, int64_t count, int source);
  void broadcast(double* data, int64_t count, int root);
  void broadcast(float* data, int64_t count, int root);
  void barrier();
  // MPI_Barrier over the ranks of this rank's node only (local_rank() 0 .. local_size() - 1),
  // bounded by the watchdog like the others: e.g. while the node's first rank stages data.
  void node_barrier();
  // Ends every rank of the job with `exit_code` (MPI_Abort): for a failure on one rank while
  // others may be blocked in a collective.
  [[noreturn]] void abort_all(int exit_code);

  // Bounds every blocking exchange of this communicator (the collectives above, allreduce_sum,
  // shm's waits) to `timeout_s` seconds (0: unbounded, the default): a rank whose exchange waits
  // longer, because another rank died, stopped or lost its node, reports and ends the job
  // (exit 1, dist/watchdog.h). Collective: the ranks exchange their process ids and hosts, which
  // the report uses to say which rank of its host stopped answering. No-op on one rank.
  void arm_watchdog(double timeout_s);
  double watchdog_timeout() const;
  // "0 n1:4321, 1 n1:4322, ...": every rank's host and process id once armed ("" before), so a
  // launcher's notice about a PID (MPICH names no rank) can be traced to its rank.
  std::string rank_processes() const;
  // What a timeout records before the job ends (the FAILED marker); replaces an earlier one.
  void set_timeout_report(TimeoutReport report);
  bool has_timeout_report() const;

 private:
  Communicator() = default;
  struct Impl;  // defined in the dist-internal dist/mpi_comm.h
  friend struct CommunicatorAccess;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1;
  int local_rank_ = 0, local_size_ = 1;
};

MpiLibrary mpi_library();

// True when MPI was initialised with at least MPI_THREAD_SERIALIZED (MPI_Query_thread).
bool mpi_threads_serialized();

}  // namespace ts
