// MPI implementation of the Communicator (see communicator.h).
#include "dist/communicator.h"

#include <unistd.h>

#include <algorithm>

#include <mpi.h>
// Open MPI declares its CUDA extension (MPIX_Query_cuda_support) in mpi-ext.h; MPICH 4 in mpi.h.
#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <cstdlib>
#include <cstring>
#include <exception>
#include <numeric>

#include "core/error.h"
#include "dist/bounded_finalize.h"
#include "dist/half_codec.h"
#include "dist/mpi_comm.h"

namespace ts {

void throw_call_error(const char* call, const char* file, int line, const std::string& what) {
  int initialized = 0, rank = -1;
  MPI_Initialized(&initialized);
  char host[MPI_MAX_PROCESSOR_NAME] = "?";
  int host_len = 1;
  if (initialized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_processor_name(host, &host_len);
  }
  throw RuntimeError(source_location_string(file, line) + ": " + call + " failed on rank " + std::to_string(rank) +
                     " (" + std::string(host, static_cast<size_t>(host_len)) + "): " + what);
}

void check_mpi(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw_call_error(call, file, line, std::string(text, static_cast<size_t>(len)));
}

namespace {
constexpr int64_t kMaxChunk = kMpiMaxCount;

// In-place MPI_Allreduce of `count` elements of `type` with `op`, in pieces below MPI's int counts.
template <class T>
void allreduce_in_chunks(T* data, int64_t count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  for (int64_t off = 0; off < count; off += kMaxChunk)
    TS_MPI(MPI_Allreduce(MPI_IN_PLACE, data + off, static_cast<int>(std::min(kMaxChunk, count - off)), type, op, comm));
}
}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  TS_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
  // Errors come back as return codes so they become exceptions with context.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) finalize_mpi_bounded(std::uncaught_exceptions() > 0 ? kExitFailed : exit_code_);
}

std::unique_ptr<Communicator> CommunicatorAccess::duplicate(MPI_Comm base) {
  std::unique_ptr<Communicator> c(new Communicator());
  c->impl_ = std::make_unique<Communicator::Impl>();
  TS_MPI(MPI_Comm_dup(base, &c->impl_->comm));
  MPI_Comm_set_errhandler(c->impl_->comm, MPI_ERRORS_RETURN);
  TS_MPI(MPI_Comm_rank(c->impl_->comm, &c->rank_));
  TS_MPI(MPI_Comm_size(c->impl_->comm, &c->size_));
  MPI_Comm& node = c->impl_->node;
  TS_MPI(MPI_Comm_split_type(c->impl_->comm, MPI_COMM_TYPE_SHARED, c->rank_, MPI_INFO_NULL, &node));
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  TS_MPI(MPI_Comm_rank(node, &c->local_rank_));
  TS_MPI(MPI_Comm_size(node, &c->local_size_));
  if (c->size_ > 1) c->impl_->watchdog = std::make_unique<ExchangeWatchdog>(c->impl_->comm, c->rank_);
  return c;
}

std::unique_ptr<Communicator> Communicator::world() { return CommunicatorAccess::duplicate(MPI_COMM_WORLD); }

std::unique_ptr<Communicator> Communicator::self() { return CommunicatorAccess::duplicate(MPI_COMM_SELF); }

std::unique_ptr<Communicator> Communicator::split(int color) {
  MPI_Comm part = MPI_COMM_NULL;
  {
    ExchangeGuard guard(impl_->watchdog.get(), "MPI_Comm_split");
    TS_MPI(MPI_Comm_split(impl_->comm, color, rank_, &part));
  }
  std::unique_ptr<Communicator> c = CommunicatorAccess::duplicate(part);
  TS_MPI(MPI_Comm_free(&part));
  return c;
}

Communicator::~Communicator() {
  if (impl_) impl_->watchdog.reset();  // its thread may name the communicator in MPI_Abort
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (impl_ && impl_->node != MPI_COMM_NULL && !finalized) MPI_Comm_free(&impl_->node);
  if (impl_ && impl_->comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&impl_->comm);
}

std::string Communicator::host() const {
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  TS_MPI(MPI_Get_processor_name(name, &len));
  return std::string(name, static_cast<size_t>(len));
}

void Communicator::allreduce_sum(float* data, int64_t count) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Allreduce (float sum)");
  allreduce_in_chunks(data, count, MPI_FLOAT, MPI_SUM, impl_->comm);
}

void Communicator::allreduce_sum(double* data, int64_t count) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Allreduce (double sum)");
  allreduce_in_chunks(data, count, MPI_DOUBLE, MPI_SUM, impl_->comm);
}

namespace {

// MPI user operations: inout[i] = round(in[i] + inout[i]), the sum taken in fp32.
template <uint16_t (*Encode)(float), float (*Decode)(uint16_t)>
void sum_halves(void* in, void* inout, int* len, MPI_Datatype* /*uint16*/) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Encode(Decode(a[i]) + Decode(b[i]));
}

MPI_Op create_op(MPI_User_function* function) {
  MPI_Op op = MPI_OP_NULL;
  TS_MPI(MPI_Op_create(function, 1, &op));
  return op;
}

// Created once per process (after MPI_Init, on first use); freed by MPI_Finalize.
MPI_Op half_sum_op(HalfFormat format) {
  static const MPI_Op fp16_op = create_op(&sum_halves<fp16_from_float, float_from_fp16>);
  static const MPI_Op bf16_op = create_op(&sum_halves<bf16_from_float, float_from_bf16>);
  return format == HalfFormat::fp16 ? fp16_op : bf16_op;
}

}  // namespace

void Communicator::allreduce_sum_half(uint16_t* data, int64_t count, HalfFormat format) {
  const MPI_Op op = half_sum_op(format);
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Allreduce (16-bit float sum)");
  allreduce_in_chunks(data, count, MPI_UINT16_T, op, impl_->comm);
}

void Communicator::allgather_bytes(const void* local, int64_t bytes, void* all) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Allgather (compressed gradients)");
  TS_CHECK(bytes >= 0 && bytes < kMaxChunk, "allgather_bytes: " + std::to_string(bytes) +
                                                " bytes per rank exceed MPI's count limit; use smaller dist.bucket_mb");
  TS_MPI(MPI_Allgather(local, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, impl_->comm));
}

std::vector<float> Communicator::gather_to_root(const std::vector<float>& local) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Gather to rank 0");
  std::vector<float> all;
  if (rank_ == 0) all.resize(local.size() * static_cast<size_t>(size_));
  TS_CHECK(local.size() < static_cast<size_t>(kMaxChunk), "gather_to_root: buffer too large");
  TS_MPI(MPI_Gather(local.data(), static_cast<int>(local.size()), MPI_FLOAT, all.data(),
                    static_cast<int>(local.size()), MPI_FLOAT, 0, impl_->comm));
  return all;
}

std::vector<std::string> Communicator::gather_strings_to_root(const std::string& local) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Gatherv of strings to rank 0");
  int len = static_cast<int>(local.size());
  std::vector<int> lens(static_cast<size_t>(size_));
  TS_MPI(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, impl_->comm));
  std::vector<int> displs(static_cast<size_t>(size_), 0);
  if (rank_ == 0) std::exclusive_scan(lens.begin(), lens.end(), displs.begin(), 0);
  std::string all(rank_ == 0 ? static_cast<size_t>(displs.back() + lens.back()) : 0, '\0');
  TS_MPI(MPI_Gatherv(local.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
                     impl_->comm));
  std::vector<std::string> out;
  if (rank_ == 0)
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(lens[r])));
  return out;
}

namespace {
constexpr int kBlobTag = 0x7c4b;

void send_blob(const std::string& blob, int dest, MPI_Comm comm) {
  const int64_t size = static_cast<int64_t>(blob.size());
  TS_MPI(MPI_Send(&size, 1, MPI_INT64_T, dest, kBlobTag, comm));
  for (int64_t off = 0; off < size; off += kMaxChunk)
    TS_MPI(MPI_Send(blob.data() + off, static_cast<int>(std::min(kMaxChunk, size - off)), MPI_CHAR, dest, kBlobTag, comm));
}

std::string receive_blob(int source, MPI_Comm comm) {
  int64_t size = 0;
  TS_MPI(MPI_Recv(&size, 1, MPI_INT64_T, source, kBlobTag, comm, MPI_STATUS_IGNORE));
  TS_CHECK(size >= 0, "receive_blob: a negative size from rank " + std::to_string(source));
  std::string blob(static_cast<size_t>(size), '\0');
  for (int64_t off = 0; off < size; off += kMaxChunk)
    TS_MPI(MPI_Recv(blob.data() + off, static_cast<int>(std::min(kMaxChunk, size - off)), MPI_CHAR, source, kBlobTag,
                    comm, MPI_STATUS_IGNORE));
  return blob;
}
}  // namespace

std::vector<std::string> Communicator::gather_blobs_to_root(const std::string& local) {
  std::vector<std::string> all;
  if (rank_ == 0) all.push_back(local);
  gather_blobs_to_root(local, [&all](int, std::string&& blob) { all.push_back(std::move(blob)); });
  return all;
}

// The blobs' sends and receives wait for one peer like a collective: under the watchdog, or a
// checkpoint whose peer stopped after the agreement to write it would wait until the walltime.
// `take` and `make` (writing or reading a checkpoint part) run outside the guard.
void Communicator::gather_blobs_to_root(const std::string& local, const std::function<void(int, std::string&&)>& take) {
  if (rank_ != 0) {
    ExchangeGuard guard(impl_->watchdog.get(), "MPI_Send of a message to rank 0 (gather)");
    send_blob(local, 0, impl_->comm);
    return;
  }
  for (int r = 1; r < size_; ++r) {
    std::string blob;
    {
      ExchangeGuard guard(impl_->watchdog.get(), "MPI_Recv of a rank's message on rank 0 (gather)");
      blob = receive_blob(r, impl_->comm);
    }
    take(r, std::move(blob));
  }
}

std::string Communicator::scatter_blobs_from_root(const std::function<std::string(int)>& make) {
  if (rank_ != 0) {
    ExchangeGuard guard(impl_->watchdog.get(), "MPI_Recv of a message from rank 0 (scatter)");
    return receive_blob(0, impl_->comm);
  }
  for (int r = 1; r < size_; ++r) {
    const std::string blob = make(r);
    ExchangeGuard guard(impl_->watchdog.get(), "MPI_Send of rank 0's message to a rank (scatter)");
    send_blob(blob, r, impl_->comm);
  }
  return make(0);
}

void Communicator::gather_to_root(const float* local, int64_t count, float* all) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Gather to rank 0");
  TS_CHECK(count >= 0 && count * size_ < kMaxChunk, "gather_to_root: " + std::to_string(count) +
                                                        " floats per rank exceed MPI's count limit");
  if (rank_ == 0) {
    if (count > 0) std::memcpy(all, local, static_cast<size_t>(count) * sizeof(float));
    TS_MPI(MPI_Gather(MPI_IN_PLACE, static_cast<int>(count), MPI_FLOAT, all, static_cast<int>(count), MPI_FLOAT, 0,
                      impl_->comm));
  } else {
    TS_MPI(MPI_Gather(local, static_cast<int>(count), MPI_FLOAT, nullptr, static_cast<int>(count), MPI_FLOAT, 0,
                      impl_->comm));
  }
}

namespace {
constexpr int kFloatsTag = 0x7c4c;
}  // namespace

void Communicator::send_floats(const float* data, int64_t count, int dest) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Send of a gradient bucket to the rank that sums it");
  for (int64_t off = 0; off < count; off += kMaxChunk)
    TS_MPI(MPI_Send(data + off, static_cast<int>(std::min(kMaxChunk, count - off)), MPI_FLOAT, dest, kFloatsTag,
                    impl_->comm));
}

void Communicator::receive_floats(float* data, int64_t count, int source) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Recv of a gradient bucket from another rank");
  for (int64_t off = 0; off < count; off += kMaxChunk)
    TS_MPI(MPI_Recv(data + off, static_cast<int>(std::min(kMaxChunk, count - off)), MPI_FLOAT, source, kFloatsTag,
                    impl_->comm, MPI_STATUS_IGNORE));
}

void Communicator::broadcast(double* data, int64_t count, int root) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Bcast");
  TS_MPI(MPI_Bcast(data, static_cast<int>(count), MPI_DOUBLE, root, impl_->comm));
}

void Communicator::broadcast(float* data, int64_t count, int root) {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Bcast");
  for (int64_t off = 0; off < count; off += kMaxChunk) {
    int n = static_cast<int>(std::min(kMaxChunk, count - off));
    TS_MPI(MPI_Bcast(data + off, n, MPI_FLOAT, root, impl_->comm));
  }
}

void Communicator::barrier() {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Barrier");
  TS_MPI(MPI_Barrier(impl_->comm));
}

void Communicator::node_barrier() {
  ExchangeGuard guard(impl_->watchdog.get(), "MPI_Barrier of the node's ranks");
  TS_MPI(MPI_Barrier(impl_->node));
}

void Communicator::arm_watchdog(double timeout_s) {
  if (!impl_->watchdog) return;
  impl_->watchdog->set_timeout(timeout_s);
  // Every rank's pid and host, for the report (bounded by the timeout just set).
  struct Identity {
    long pid;
    char host[MPI_MAX_PROCESSOR_NAME];
  };
  Identity mine{};
  mine.pid = static_cast<long>(::getpid());
  int len = 0;
  TS_MPI(MPI_Get_processor_name(mine.host, &len));
  std::vector<Identity> all(static_cast<size_t>(size_));
  {
    ExchangeGuard guard(impl_->watchdog.get(), "MPI_Allgather of the ranks' process ids");
    TS_MPI(MPI_Allgather(&mine, sizeof(Identity), MPI_BYTE, all.data(), sizeof(Identity), MPI_BYTE, impl_->comm));
  }
  std::vector<long> pids;
  std::vector<std::string> hosts;
  for (const Identity& id : all) {
    pids.push_back(id.pid);
    hosts.emplace_back(id.host, strnlen(id.host, sizeof id.host));
  }
  impl_->watchdog->set_peers(std::move(pids), std::move(hosts));
}

std::string Communicator::rank_processes() const { return impl_->watchdog ? impl_->watchdog->peers_text() : ""; }

double Communicator::watchdog_timeout() const { return impl_->watchdog ? impl_->watchdog->timeout() : 0.0; }

void Communicator::set_timeout_report(TimeoutReport report) {
  if (impl_->watchdog) impl_->watchdog->set_report(std::move(report));
}

bool Communicator::has_timeout_report() const { return impl_->watchdog && impl_->watchdog->has_report(); }

void Communicator::abort_all(int exit_code) {
  MPI_Abort(impl_->comm, exit_code);
  std::abort();  // MPI_Abort does not return; keep [[noreturn]] honest if it does
}

namespace {
// Variables Open MPI's launcher sets for its own bookkeeping (daemon URIs, session
// directories, job ids, a per-job secret): not tuning, and different in every job.
bool openmpi_launcher_variable(const std::string& entry) {
  static const char* const internal[] = {"OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
                                         "OMPI_MCA_shmem_RUNTIME_QUERY_hint", "OMPI_MCA_mpi_oversubscribe"};
  for (const char* p : internal)
    if (entry.rfind(p, 0) == 0) return true;
  return false;
}

// "NAME=value" of every environment variable that tunes the linked MPI library, sorted (the
// other flavor's variables are ignored by this library and not listed).
std::vector<std::string> mpi_tuning_environment(const std::string& flavor) {
  std::vector<const char*> prefixes{"UCX_"};
  if (flavor == "openmpi") prefixes.push_back("OMPI_MCA_");
  if (flavor == "mpich") prefixes.insert(prefixes.end(), {"MPIR_CVAR_", "MPICH_"});
  if (flavor == "intel") prefixes.insert(prefixes.end(), {"I_MPI_", "FI_", "MPIR_CVAR_"});
  std::vector<std::string> found;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    if (openmpi_launcher_variable(entry)) continue;
    for (const char* p : prefixes)
      if (entry.rfind(p, 0) == 0) {
        found.push_back(entry);
        break;
      }
  }
  std::sort(found.begin(), found.end());
  return found;
}
// Whether the library was built to take CUDA device pointers, asked at run time (Open MPI's
// compile-time MPIX_CUDA_AWARE_SUPPORT says only what the headers were configured with).
bool mpi_cuda_aware() {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  return MPIX_Query_cuda_support() == 1;
#elif defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}
}  // namespace

MpiLibrary mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  MpiLibrary lib;
  lib.full = std::string(text, static_cast<size_t>(len));
  while (!lib.full.empty() && (lib.full.back() == '\n' || lib.full.back() == '\0' || lib.full.back() == ' '))
    lib.full.pop_back();
  std::string first = lib.full.substr(0, lib.full.find('\n'));
  if (first.find("Open MPI") != std::string::npos) {
    lib.flavor = "openmpi";
    auto v = first.find(" v");
    if (v != std::string::npos) lib.version = first.substr(v + 2, first.find_first_of(", ", v + 2) - (v + 2));
  } else if (first.find("Intel(R) MPI Library") != std::string::npos) {  // "... 2021.18.1 for Linux* OS"
    lib.flavor = "intel";
    const auto v = first.find("Library") + 7;
    const auto s = first.find_first_not_of(' ', v);
    if (s != std::string::npos) lib.version = first.substr(s, first.find(' ', s) - s);
  } else if (first.find("MPICH") != std::string::npos) {
    lib.flavor = "mpich";
    auto v = first.find("Version:");
    if (v != std::string::npos) {
      auto s = first.find_first_not_of(" \t", v + 8);
      lib.version = first.substr(s, first.find_first_of(" \t\n", s) - s);
    }
  } else {
    lib.flavor = "unknown";
  }
  if (lib.version.empty()) lib.version = first;
  lib.tuning = mpi_tuning_environment(lib.flavor);
  lib.cuda_aware = mpi_cuda_aware();
  return lib;
}

bool mpi_threads_serialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return false;
  int level = MPI_THREAD_SINGLE;
  TS_MPI(MPI_Query_thread(&level));
  return level >= MPI_THREAD_SERIALIZED;
}

}  // namespace ts
