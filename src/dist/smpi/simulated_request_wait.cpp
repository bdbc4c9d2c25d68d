// trainscale-sim's waits for transfers (see dist/request_wait.h): MPI_Waitall, whose time SMPI
// simulates; the real build's sleeps between tests would pass real, not simulated, time.
#include "dist/mpi_comm.h"
#include "dist/request_wait.h"

namespace ts {

void wait_all_requests(int count, MPI_Request* requests) { TS_MPI(MPI_Waitall(count, requests, MPI_STATUSES_IGNORE)); }

void sendrecv_patiently(const void* send, int send_count, MPI_Datatype send_type, int dest, int send_tag, void* recv,
                        int recv_count, MPI_Datatype recv_type, int source, int recv_tag, MPI_Comm comm) {
  TS_MPI(MPI_Sendrecv(send, send_count, send_type, dest, send_tag, recv, recv_count, recv_type, source, recv_tag, comm,
                      MPI_STATUS_IGNORE));
}

void send_patiently(const void* data, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  TS_MPI(MPI_Send(data, count, type, dest, tag, comm));
}

void recv_patiently(void* data, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm) {
  TS_MPI(MPI_Recv(data, count, type, source, tag, comm, MPI_STATUS_IGNORE));
}

}  // namespace ts
