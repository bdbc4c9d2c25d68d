// A job whose rank waits on a peer that does not answer in time inside one of the Communicator's
// point-to-point blob exchanges (a checkpoint's gather or a resume's scatter). Run under the
// MPI launcher by tests/python/test_failures_ranks.py: the waiting rank's watchdog must end the
// job with exit 1 and a report naming the exchange. Usage: probe_blob_watchdog gather|scatter.
// The late rank sleeps far past dist.timeout_s (1 s) and then takes part: a job that reaches
// the end ("probe: the exchange completed") was never bounded, and exits 0 so the test fails.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "dist/communicator.h"

int main(int argc, char** argv) {
  const bool gather = argc == 2 && std::strcmp(argv[1], "gather") == 0;
  if (argc != 2 || (!gather && std::strcmp(argv[1], "scatter") != 0)) {
    std::fprintf(stderr, "usage: probe_blob_watchdog gather|scatter\n");
    return 2;
  }
  ts::MpiSession session(&argc, &argv);
  auto comm = ts::Communicator::world();
  comm->arm_watchdog(1.0);
  const int late_rank = gather ? comm->size() - 1 : 0;
  if (comm->rank() == late_rank) ::sleep(30);
  const std::string message(1 << 16, static_cast<char>('a' + comm->rank()));
  if (gather) {
    comm->gather_blobs_to_root(message, [](int, std::string&&) {});
  } else {
    std::string mine = comm->scatter_blobs_from_root([&message](int) { return message; });
    (void)mine;
  }
  std::printf("probe: the exchange completed on rank %d\n", comm->rank());
  return 0;
}
