// How the host all-reduce algorithms (ring, tree, butterfly) wait for their point-to-point
// transfers. MPI's blocking calls spin in the library's progress loop, holding a core in system
// calls; where the network stack needs that core (TCP between hosts that share cores, a
// software-shaped link: the test bed of docs/multihost.md), the transfer then runs at about half
// the link's rate, and no MPI setting changes it (Open MPI's mpi_yield_when_idle, btl_tcp_links
// tried). These waits spin for a short while, which covers the latency of small messages, and
// then test the requests between short sleeps, which keeps a large transfer's socket buffers
// drained (megabytes, milliseconds of a link) while the kernel moves the bytes.
// trainscale-sim compiles dist/smpi/simulated_request_wait.cpp instead (MPI_Waitall: a sleep
// there would be real time, not simulated time).
#pragma once

#include <mpi.h>

namespace ts {

// Waits until every request of `requests[0..count)` completed (MPI_Waitall's contract; the
// statuses are ignored).
void wait_all_requests(int count, MPI_Request* requests);

// MPI_Sendrecv through wait_all_requests: the receive is posted first.
void sendrecv_patiently(const void* send, int send_count, MPI_Datatype send_type, int dest, int send_tag, void* recv,
                        int recv_count, MPI_Datatype recv_type, int source, int recv_tag, MPI_Comm comm);
// MPI_Send / MPI_Recv through wait_all_requests.
void send_patiently(const void* data, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
void recv_patiently(void* data, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm);

}  // namespace ts
