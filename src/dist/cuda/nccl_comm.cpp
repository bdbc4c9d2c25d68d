// The NCCL communicator (see nccl_comm.h).
#include "dist/cuda/nccl_comm.h"

#include <algorithm>

#include "core/error.h"
#include "dist/cuda/device_check.h"
#include "dist/cuda/device_exchange.h"
#include "dist/mpi_comm.h"

namespace ts {
namespace {

// "" when every rank of `comm` can have a GPU of its own, else why not (the same on every rank).
std::string device_shortage(Communicator& comm, int devices) {
  const int shortage_here = devices == 0 ? 2 : comm.local_size() > devices ? 1 : 0;
  int shortage = 0;
  TS_MPI(MPI_Allreduce(&shortage_here, &shortage, 1, MPI_INT, MPI_MAX, mpi_comm(comm)));
  if (shortage == 0) return "";
  if (shortage == 2) return "nccl needs a CUDA device on every rank, and a rank found none";
  return "nccl needs one GPU per rank (NCCL refuses two ranks on one GPU), and a node runs more ranks than it has "
         "visible devices (this node: " + std::to_string(comm.local_size()) + " rank(s), " + std::to_string(devices) +
         " device(s)); start at most one rank per GPU, or use an MPI algorithm (mpi, ring, tree, ps, shm), which "
         "stages device memory through the host";
}

}  // namespace

int visible_cuda_devices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: clear the sticky error
    return 0;
  }
  return n;
}

std::string nccl_device_missing_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) return "";
  (void)cudaGetLastError();
  return std::string("nccl needs a CUDA device, and no CUDA device was found (cudaGetDeviceCount: ") +
         (e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)) + ")";
}

NcclCommunicator::NcclCommunicator(Communicator& comm, int device) {
  const int devices = visible_cuda_devices();
  const std::string shortage = device_shortage(comm, devices);
  if (!shortage.empty()) throw ConfigError("dist.allreduce: " + shortage);
  device_ = device >= 0 ? device : comm.local_rank() % devices;
  ncclUniqueId id{};
  if (comm.rank() == 0) TS_NCCL(ncclGetUniqueId(&id));
  TS_MPI(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, mpi_comm(comm)));
  TS_DIST_CUDA(cudaSetDevice(device_));
  TS_DIST_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  TS_NCCL(ncclCommInitRank(&comm_, comm.size(), id, comm.rank()));
}

NcclCommunicator::~NcclCommunicator() {
  // No throwing from here: errors at teardown are ignored (the job is ending).
  if (comm_) ncclCommDestroy(comm_);
  if (stream_) cudaStreamDestroy(stream_);
}

NcclCommunicator& nccl_of(Communicator& comm, int device) {
  auto& impl = CommunicatorAccess::impl(comm);
  if (!impl.nccl) impl.nccl = std::make_shared<NcclCommunicator>(comm, device);
  return *impl.nccl;
}

}  // namespace ts
