// Host facts (see host_info.h).
#include "core/host_info.h"

#include <unistd.h>

#include <fstream>
#include <thread>

namespace ts {

std::string host_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        const auto start = line.find_first_not_of(' ', colon + 1);
        if (start != std::string::npos) return line.substr(start);
      }
    }
  return "unknown";
}

int64_t host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

int64_t host_hardware_threads() { return static_cast<int64_t>(std::thread::hardware_concurrency()); }

int64_t host_online_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int64_t>(n) : 1;
}

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace ts
