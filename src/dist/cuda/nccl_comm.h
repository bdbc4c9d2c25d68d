// dist-internal (CUDA builds): the NCCL communicator of a Communicator, bootstrapped over MPI
// (docs/strategies.md "GPUs: NCCL and device arenas"):
//   device   local_rank() % visible devices (MPI_COMM_TYPE_SHARED), the rule of CudaBackend;
//   id       rank 0 calls ncclGetUniqueId and broadcasts it with MPI_Bcast;
//   init     every rank calls ncclCommInitRank on its device.
// Created on first use (nccl_of), once per Communicator, which owns it and destroys it with
// itself. Collectives are queued on the communicator's own stream (non-blocking with respect to
// the legacy stream); callers order them against their compute stream with events.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "dist/communicator.h"

namespace ts {

class NcclCommunicator {
 public:
  // Collective over `comm`. ConfigError when this node's ranks outnumber its visible devices
  // (NCCL refuses two ranks on one GPU) or there is no device, on every rank alike. `device`:
  // the rank's CUDA device (-1: local_rank() % visible devices, the backend's rule on a
  // communicator of every rank; a communicator of some ranks passes their arenas' device).
  explicit NcclCommunicator(Communicator& comm, int device = -1);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }

 private:
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

// The NCCL communicator of `comm`, created on the first call (collective then: every rank calls
// it at the same point, from the thread that makes the communicator's MPI calls).
NcclCommunicator& nccl_of(Communicator& comm, int device = -1);

// CUDA devices this process sees (0 when there is no driver or no device).
int visible_cuda_devices();

}  // namespace ts
