// The machine-dependent bounds of a run (docs/reliability.md "Failures"): what a config may ask
// of the node it runs on. The config schema bounds each key statically (any machine); these
// checks run when the run starts, on every rank for its own node, and refuse collectively: when
// any rank refuses, every rank throws ConfigError (exit 2), and rank 0's message names the
// refusing rank(s), so no rank is left waiting for another in a collective.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"
#include "dist/communicator.h"

namespace ts {

// Loader threads per online CPU beyond which a config is refused: loader threads mostly wait
// on storage, so a few per CPU can pay; many more only cost a stack each.
constexpr int kLoaderThreadsPerCpu = 4;

// `threads` at most the CPUs online on this node (a rank's compute threads beyond them only
// slow it down, and far beyond them the OpenMP runtime cannot even start its team: libgomp
// keeps one record per thread on the caller's stack and overflows it, a SIGSEGV), and
// `dataset.loader_threads` at most kLoaderThreadsPerCpu per online CPU. Several ranks on one
// node may together run more threads than it has CPUs (oversubscription across ranks is
// allowed). Collective.
void check_host_threads(const ResolvedConfig& config, Communicator& comm);

// The nodes whose ranks together run more compute threads (threads, x dist.threads_per_worker
// under hogwild) than the CPUs they may use (the union of their affinity masks: all online CPUs
// unless a launcher or taskset binds them to fewer): one warning per kind of such node, naming
// its hosts, on rank 0 (none elsewhere). Step times of such a run include the threads' waits
// for a CPU. Collective.
std::vector<std::string> oversubscription_warnings(const ResolvedConfig& config, Communicator& comm);

// The collective verdict of a per-rank check: `local_refusal` is this rank's reason ("" when it
// accepts). Returns when every rank accepts; otherwise every rank throws ConfigError, rank 0's
// naming each refusing rank and its host with its reason; UnsupportedError instead when every
// refusing rank says `unsupported` (what this build or machine cannot run). Collective.
void refuse_collectively(Communicator& comm, const std::string& local_refusal, bool unsupported = false);

}  // namespace ts
