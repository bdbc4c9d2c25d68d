// Process memory and memory limits (see memory_limits.h).
#include "core/memory_limits.h"

#include <malloc.h>
#include <sys/resource.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ts {
namespace {

// "VmRSS:     1234 kB" -> bytes.
int64_t status_kb(const std::string& line) {
  std::istringstream in(line.substr(line.find(':') + 1));
  int64_t kb = 0;
  in >> kb;
  return kb * 1024;
}

// The first line of a file, or "".
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The smallest memory limit of this process's cgroup and its ancestors (a batch system may
// limit the job and run the step in a cgroup below it): "0::/path" (v2, memory.max) or
// "N:memory:/path" (v1, memory.limit_in_bytes) in /proc/self/cgroup.
std::optional<MemoryLimit> cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::optional<MemoryLimit> smallest;
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const bool v2 = controllers.empty();
    if (!v2 && controllers.find("memory") == std::string::npos) continue;
    for (std::string path = line.substr(b + 1);; path = path.substr(0, path.rfind('/'))) {
      const std::string file = v2 ? "/sys/fs/cgroup" + path + "/memory.max"
                                  : "/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes";
      const std::string text = first_line(file);
      const int64_t bytes = text.empty() || text == "max" ? 0 : std::strtoll(text.c_str(), nullptr, 10);
      // v1 writes "unlimited" as a huge number.
      if (bytes > 0 && bytes < (int64_t{1} << 60) && (!smallest || bytes < smallest->bytes))
        smallest = MemoryLimit{"cgroup " + file, bytes, MemoryLimit::Scope::node};
      if (path.empty() || path == "/") break;
    }
  }
  return smallest;
}

std::optional<MemoryLimit> rlimit(int resource, const char* name, MemoryLimit::Scope scope) {
  struct rlimit rl {};
  if (::getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return MemoryLimit{name, static_cast<int64_t>(rl.rlim_cur), scope};
}

std::optional<int64_t> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (end == v || n <= 0) return std::nullopt;
  return static_cast<int64_t>(n);
}

// Slurm's memory request of this job on this node (MB in the environment).
std::optional<MemoryLimit> slurm_limit() {
  if (const auto mb = env_int("SLURM_MEM_PER_NODE"))
    return MemoryLimit{"SLURM_MEM_PER_NODE (--mem)", *mb << 20, MemoryLimit::Scope::node};
  if (const auto mb = env_int("SLURM_MEM_PER_CPU")) {
    const int64_t cpus = env_int("SLURM_CPUS_ON_NODE").value_or(1);
    return MemoryLimit{"SLURM_MEM_PER_CPU (--mem-per-cpu) x SLURM_CPUS_ON_NODE " + std::to_string(cpus),
                       (*mb << 20) * cpus, MemoryLimit::Scope::node};
  }
  return std::nullopt;
}

std::optional<MemoryLimit> mem_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0)
      return MemoryLimit{"MemAvailable of /proc/meminfo", status_kb(line), MemoryLimit::Scope::node_available};
  return std::nullopt;
}

}  // namespace

ProcessMemory process_memory() {
  ProcessMemory m;
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) m.rss = status_kb(line);
    if (line.rfind("VmHWM:", 0) == 0) m.peak_rss = status_kb(line);
    if (line.rfind("VmSize:", 0) == 0) m.address_space = status_kb(line);
    if (line.rfind("VmData:", 0) == 0) m.data = status_kb(line);
  }
  return m;
}

int64_t heap_bytes_in_use() {
  const struct mallinfo2 info = ::mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

std::vector<MemoryLimit> memory_limits() {
  std::vector<MemoryLimit> limits;
  for (auto limit : {cgroup_limit(), rlimit(RLIMIT_AS, "RLIMIT_AS (ulimit -v)", MemoryLimit::Scope::process_address_space),
                     rlimit(RLIMIT_DATA, "RLIMIT_DATA (ulimit -d)", MemoryLimit::Scope::process_data), slurm_limit(),
                     mem_available()})
    if (limit) limits.push_back(*limit);
  if (const char* text = std::getenv("TRAINSCALE_MEMORY_LIMIT"); text && *text) {
    const auto bytes = parse_byte_size(text);
    if (!bytes || *bytes <= 0)
      throw ConfigError(std::string("TRAINSCALE_MEMORY_LIMIT=") + text +
                        ": not a size; give bytes or a number with K, M, G or T (e.g. 8G), or unset it");
    limits.push_back({"TRAINSCALE_MEMORY_LIMIT", *bytes, MemoryLimit::Scope::node});
  }
  return limits;
}

std::string bytes_text(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (std::abs(v) >= 1024 && u < 5) v /= 1024, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return text;
}

std::optional<int64_t> parse_byte_size(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !(v >= 0)) return std::nullopt;
  std::string unit(end);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
  double scale = 1;
  if (!unit.empty()) {
    const std::string known = "KMGT";
    const auto i = known.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    const std::string rest = unit.substr(1);
    if (i == std::string::npos || !(rest.empty() || rest == "B" || rest == "iB" || rest == "b")) return std::nullopt;
    scale = static_cast<double>(int64_t{1} << (10 * (i + 1)));
  }
  if (v * scale > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(v * scale);
}

}  // namespace ts
