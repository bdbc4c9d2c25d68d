// Facts about the host machine that backends report in their device description and the run
// file records: the CPU model, the physical memory, the hardware threads and the host name.
#pragma once

#include <cstdint>
#include <string>

namespace ts {

// "AMD EPYC 9354P 32-Core Processor" (the first "model name" of /proc/cpuinfo), or "unknown".
std::string host_cpu_model();
// Physical memory in bytes (sysconf), 0 when unknown.
int64_t host_memory_bytes();
// Hardware threads the OS reports online.
int64_t host_hardware_threads();
// CPUs online on this node (sysconf _SC_NPROCESSORS_ONLN), whatever this process's affinity
// mask (a launcher may bind a rank to fewer); at least 1.
int64_t host_online_cpus();
// This host's name (gethostname), or "unknown".
std::string host_name();

}  // namespace ts
