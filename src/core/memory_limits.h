// The memory this process uses and the limits it runs under (docs/reliability.md "Memory"):
// what the run's memory check (train/memory_estimate.h) compares its estimate with. Linux only
// (/proc, cgroup v2 and v1); a limit that cannot be read is left out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ts {

// This process's memory now (/proc/self/status), in bytes; 0 where unknown.
struct ProcessMemory {
  int64_t rss = 0;       // VmRSS: resident now
  int64_t peak_rss = 0;  // VmHWM: the most resident so far (getrusage's ru_maxrss)
  int64_t address_space = 0;  // VmSize: what RLIMIT_AS bounds
  int64_t data = 0;           // VmData: what RLIMIT_DATA bounds
};
ProcessMemory process_memory();

// Bytes malloc has handed out and not taken back (glibc mallinfo2: arenas and mmapped blocks),
// every thread included: the difference across a piece of work is what it allocated.
int64_t heap_bytes_in_use();

// One bound on the resident memory of this process, as found.
struct MemoryLimit {
  std::string source;   // "cgroup memory.max (/sys/fs/cgroup/...)", "RLIMIT_AS (ulimit -v)", ...
  int64_t bytes = 0;    // the limit itself
  // How it applies: a node's limit is shared by the ranks on the node (each may use its share);
  // the node's available memory is shared by what the ranks still allocate; an address-space or
  // data-segment limit of the process bounds what is still to come (limit - what the process
  // maps now), not its resident size.
  enum class Scope { node, node_available, process_address_space, process_data } scope = Scope::node;
};

// Every limit found: the cgroup's memory.max (v2; v1: memory.limit_in_bytes) of this process,
// RLIMIT_AS and RLIMIT_DATA, Slurm's SLURM_MEM_PER_NODE or SLURM_MEM_PER_CPU x
// SLURM_CPUS_ON_NODE (MB), the node's MemAvailable (counted with what this process holds now),
// and TRAINSCALE_MEMORY_LIMIT (bytes, or with a K/M/G/T suffix: a node's limit set by hand, e.g.
// where the batch system's is not visible, and by the tests). An unparsable
// TRAINSCALE_MEMORY_LIMIT is a ConfigError.
std::vector<MemoryLimit> memory_limits();

// "1.5 GiB", "12.0 MiB", "900 B".
std::string bytes_text(int64_t bytes);
// "8G" / "512M" / "1024" -> bytes; nullopt when not a size.
std::optional<int64_t> parse_byte_size(const std::string& text);

}  // namespace ts
