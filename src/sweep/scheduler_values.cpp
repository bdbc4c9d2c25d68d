// Grammars of job-script header values (see scheduler_values.h).
#include "sweep/scheduler_values.h"

#include <cctype>
#include <cstdio>
#include <cstdint>
#include <optional>
#include <regex>

#include "core/error.h"
#include "core/names.h"

namespace ts {
namespace {

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// "" when every character of `text` is a letter, a digit or one of `punctuation`.
std::string charset_problem(const std::string& text, const std::string& punctuation) {
  const std::string control = control_character_problem(text);
  if (!control.empty()) return "it contains " + control;
  for (size_t i = 0; i < text.size(); ++i)
    if (!is_alnum(text[i]) && punctuation.find(text[i]) == std::string::npos)
      return std::string("it contains '") + text[i] + "' (position " + std::to_string(i) + "); accepted: letters, digits and " +
             punctuation;
  return "";
}

struct MemorySize {
  std::string digits;
  char unit = 0;  // K, M, G or T
};

std::optional<MemorySize> parse_memory(const std::string& text) {
  static const std::regex form(R"(([1-9][0-9]{0,11})([KMGTkmgt])[Bb]?)");
  std::smatch m;
  if (text.size() > 16 || !std::regex_match(text, m, form)) return std::nullopt;
  return MemorySize{m[1], static_cast<char>(std::toupper(static_cast<unsigned char>(m[2].str()[0])))};
}

}  // namespace

std::string walltime_problem(const std::string& text) {
  const std::string walltime = one_line(text);
  static const std::regex form(R"((?:([0-9]{1,3})-([0-9]{2})|([0-9]{1,4})):([0-9]{2}):([0-9]{2}))");
  const std::string accepted = "accepted: HH:MM:SS or D-HH:MM:SS, e.g. \"00:30:00\", \"1-12:00:00\"";
  std::smatch m;
  if (walltime.size() > 16 || !std::regex_match(walltime, m, form))
    return "'" + walltime.substr(0, 40) + "' is not a walltime; " + accepted;
  const bool with_days = m[1].matched;
  const int64_t days = with_days ? std::stoll(m[1]) : 0;
  const int64_t hours = with_days ? std::stoll(m[2]) : std::stoll(m[3]);
  const int64_t minutes = std::stoll(m[4]), seconds = std::stoll(m[5]);
  if (with_days && hours > 23) return "'" + walltime + "': hours must be 0-23 after the days; " + accepted;
  if (minutes > 59 || seconds > 59) return "'" + walltime + "': minutes and seconds must be 0-59; " + accepted;
  if (days == 0 && hours == 0 && minutes == 0 && seconds == 0) return "'" + walltime + "' is zero; " + accepted;
  return "";
}

std::string pbs_walltime(const std::string& walltime) {
  const size_t dash = walltime.find('-');
  if (dash == std::string::npos) return walltime;
  const int64_t days = std::stoll(walltime.substr(0, dash));
  const int64_t hours = std::stoll(walltime.substr(dash + 1, 2));
  std::string h = std::to_string(days * 24 + hours);
  if (h.size() < 2) h = "0" + h;
  return h + walltime.substr(dash + 3);
}

std::string scaled_walltime(const std::string& walltime, int64_t factor) {
  const std::string hours_form = pbs_walltime(walltime);  // "H...H:MM:SS", days folded into hours
  const size_t colon = hours_form.find(':');
  const int64_t seconds = std::stoll(hours_form.substr(0, colon)) * 3600 + std::stoll(hours_form.substr(colon + 1, 2)) * 60 +
                          std::stoll(hours_form.substr(colon + 4, 2));
  constexpr int64_t kMaxSeconds = 1000LL * 86400 - 1;  // 999-23:59:59, the longest walltime accepted
  if (factor < 1 || seconds > kMaxSeconds / factor)
    throw ConfigError("walltime " + walltime + " x " + std::to_string(factor) +
                      " runs per packed task exceeds 999 days; pack fewer runs per task (--pack) or lower the walltime");
  const int64_t total = seconds * factor;
  char buf[32];
  const auto h = static_cast<long long>(total / 3600 % 24), m = static_cast<long long>(total / 60 % 60),
             s = static_cast<long long>(total % 60), d = static_cast<long long>(total / 86400);
  if (d == 0) std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", h, m, s);
  else std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", d, h, m, s);
  return buf;
}

std::string memory_problem(const std::string& memory) {
  if (parse_memory(memory)) return "";
  return "'" + one_line(memory) + "' is not a memory size; accepted: an integer with a unit K, M, G or T (optionally followed by "
         "B), e.g. 4G, 4000M, 64GB (a bare number is refused: Slurm reads it as MiB, PBS as bytes)";
}

std::string slurm_memory(const std::string& memory) {
  const std::optional<MemorySize> size = parse_memory(memory);
  return size ? size->digits + size->unit : memory;
}

std::string pbs_memory(const std::string& memory) {
  const std::optional<MemorySize> size = parse_memory(memory);
  return size ? size->digits + static_cast<char>(std::tolower(static_cast<unsigned char>(size->unit))) + "b" : memory;
}

std::string scheduler_name_problem(const std::string& name) {
  if (name.empty()) return "it is empty";
  if (name.size() > 128) return "it is longer than 128 characters";
  std::string problem = charset_problem(name, "._-+,@");
  if (!problem.empty()) return problem;
  if (!is_alnum(name[0]) && name[0] != '_') return std::string("it starts with '") + name[0] + "'";
  return "";
}

std::string directive_value_problem(const std::string& value, DirectiveKind kind) {
  if (value.empty()) return "it is empty";
  switch (kind) {
    case DirectiveKind::gres: return charset_problem(value, ":,._-/=(){}");
    case DirectiveKind::constraint: return charset_problem(value, ":,._-&|!*()[]");
    case DirectiveKind::select: return charset_problem(value, ":=._-");
  }
  return "";
}

std::string resource_value_problem(const std::string& key, const std::string& value) {
  if (key == "walltime") return walltime_problem(value);
  if (key == "mem") return memory_problem(value);
  if (key == "partition") {
    const std::string problem = scheduler_name_problem(value);
    return problem.empty() ? "" : "'" + one_line(value) + "' is not a partition name: " + problem;
  }
  if (key == "cpus_per_worker" || key == "workers_per_node") {
    const bool digits = !value.empty() && value.size() <= 6 && value.find_first_not_of("0123456789") == std::string::npos;
    return digits && std::stol(value) >= 1 ? "" : "'" + one_line(value) + "' is not an integer in 1..999999";
  }
  return "unknown key '" + key + "'; accepted: walltime, cpus_per_worker, workers_per_node, partition, mem";
}

std::string env_name_problem(const std::string& name) {
  // A loop, not std::regex: libstdc++ matches `*` recursively, so a long name would exhaust the stack.
  bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (is_alnum(c) || c == '_') && static_cast<unsigned char>(c) < 0x80;
  if (ok) return "";
  return "'" + one_line(name) + "' is not an environment variable name; accepted: a letter or _, then letters, digits and _";
}

}  // namespace ts
