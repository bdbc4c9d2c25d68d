// Waiting for transfers without holding a core (see request_wait.h).
#include "dist/request_wait.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <time.h>

#include "dist/mpi_comm.h"

namespace ts {
namespace {

// Spin this long first: a small message's round trip between hosts, and within a host.
constexpr double kSpinSeconds = 50e-6;
// Then sleep between tests, doubling from the first to the longest sleep: 200 us holds 25 KB of
// a 1 Gbit/s link and 625 KB of 25 Gbit/s, far below the megabytes a socket buffer holds.
constexpr long kFirstSleepNs = 5'000, kLongestSleepNs = 200'000;
// A pairwise exchange goes as slices of this size, all in flight at once: Open MPI's TCP
// transport stalls once per message when both directions of its one connection to a peer carry
// bulk data, and slices overlap those stalls (docs/multihost.md "All-reduce across hosts").
constexpr int kSliceBytes = 1 << 20;

}  // namespace

void wait_all_requests(int count, MPI_Request* requests) {
  int done = 0;
  const double start = MPI_Wtime();
  while (true) {
    TS_MPI(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE));
    if (done) return;
    if (MPI_Wtime() - start > kSpinSeconds) break;
  }
  long sleep_ns = kFirstSleepNs;
  while (true) {
    const timespec pause{0, sleep_ns};
    nanosleep(&pause, nullptr);
    TS_MPI(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE));
    if (done) return;
    sleep_ns = std::min(kLongestSleepNs, sleep_ns * 2);
  }
}

void sendrecv_patiently(const void* send, int send_count, MPI_Datatype send_type, int dest, int send_tag, void* recv,
                        int recv_count, MPI_Datatype recv_type, int source, int recv_tag, MPI_Comm comm) {
  int send_size = 0, recv_size = 0;
  TS_MPI(MPI_Type_size(send_type, &send_size));
  TS_MPI(MPI_Type_size(recv_type, &recv_size));
  const int send_slice = std::max(1, kSliceBytes / std::max(1, send_size));
  const int recv_slice = std::max(1, kSliceBytes / std::max(1, recv_size));
  std::vector<MPI_Request> r;
  // Slices of one (source, tag, communicator) match in the order they are posted.
  for (int off = 0; off < recv_count || (off == 0 && recv_count == 0); off += recv_slice) {
    r.emplace_back();
    TS_MPI(MPI_Irecv(static_cast<char*>(recv) + static_cast<int64_t>(off) * recv_size, std::min(recv_slice, recv_count - off),
                     recv_type, source, recv_tag, comm, &r.back()));
    if (recv_count == 0) break;
  }
  for (int off = 0; off < send_count || (off == 0 && send_count == 0); off += send_slice) {
    r.emplace_back();
    TS_MPI(MPI_Isend(static_cast<const char*>(send) + static_cast<int64_t>(off) * send_size,
                     std::min(send_slice, send_count - off), send_type, dest, send_tag, comm, &r.back()));
    if (send_count == 0) break;
  }
  wait_all_requests(static_cast<int>(r.size()), r.data());
}

void send_patiently(const void* data, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  MPI_Request r;
  TS_MPI(MPI_Isend(data, count, type, dest, tag, comm, &r));
  wait_all_requests(1, &r);
}

void recv_patiently(void* data, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm) {
  MPI_Request r;
  TS_MPI(MPI_Irecv(data, count, type, source, tag, comm, &r));
  wait_all_requests(1, &r);
}

}  // namespace ts
