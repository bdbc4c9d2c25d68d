// Run markers (see run_marker.h).
#include "core/run_marker.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/marker_reserve.h"
#include "core/strings.h"

namespace ts {
namespace {

// One line of text: markers are line-oriented.
std::string one_line(std::string value) {
  for (char& c : value)
    if (c == '\n' || c == '\r') c = ' ';
  return trim(value);
}

}  // namespace

std::string marker_path(const std::string& run_file, MarkerKind kind) {
  std::filesystem::path p(run_file);
  if (p.extension() == ".h5") p.replace_extension();
  constexpr EnumName<MarkerKind> kSuffixes[] = {{MarkerKind::done, ".DONE"},
                                                {MarkerKind::failed, ".FAILED"},
                                                {MarkerKind::running, ".RUNNING"},
                                                {MarkerKind::preempted, ".PREEMPTED"},
                                                {MarkerKind::unsupported, ".UNSUPPORTED"}};
  return p.string() + name_in(kSuffixes, kind, ".RUNNING");
}

std::string marker_text(const RunMarker& m) {
  std::ostringstream out;
  auto field = [&](const char* key, const std::string& value) {
    if (!value.empty()) out << key << ": " << one_line(value) << "\n";
  };
  field("status", m.status);
  field("reason", m.reason);
  field("run_file", m.run_file);
  if (m.attempt > 0) out << "attempt: " << m.attempt << "\n";
  field("log", m.log);
  field("host", m.host);
  if (m.pid > 0) out << "pid: " << m.pid << "\n";
  if (m.pid_start > 0) out << "pid_start: " << m.pid_start << "\n";
  if (m.stage_in_s) out << "stage_in_s: " << *m.stage_in_s << "\n";
  field("start", m.start);
  field("end", m.end);
  field("signal", m.signal);
  if (m.step > 0) out << "step: " << m.step << "\n";
  field("checkpoint", m.checkpoint);
  return out.str();
}

RunMarker parse_marker(const std::string& text) {
  RunMarker m;
  bool known = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    auto number = [&](auto& out) {
      std::from_chars(value.data(), value.data() + value.size(), out);
      return true;
    };
    bool used = true;
    if (key == "status") m.status = value;
    else if (key == "reason") m.reason = value;
    else if (key == "run_file") m.run_file = value;
    else if (key == "attempt") number(m.attempt);
    else if (key == "log") m.log = value;
    else if (key == "host") m.host = value;
    else if (key == "pid") number(m.pid);
    else if (key == "pid_start") number(m.pid_start);
    else if (key == "stage_in_s") m.stage_in_s = std::strtod(value.c_str(), nullptr);
    else if (key == "start") m.start = value;
    else if (key == "end") m.end = value;
    else if (key == "signal") m.signal = value;
    else if (key == "step") number(m.step);
    else if (key == "checkpoint") m.checkpoint = value;
    else used = false;
    known = known || used;
  }
  if (!known) m.reason = trim(text);
  return m;
}

// On a full disk a marker goes through the room reserved for it (core/marker_reserve.h), else
// through the room that freeing the reserve gives.
void write_marker(const std::string& path, const RunMarker& marker) {
  const std::string text = marker_text(marker);
  try {
    write_file_atomically(path, text);
  } catch (const RuntimeError&) {
    if (write_through_reserve(path, text)) return;
    write_file_atomically(path, text);  // throws the error again where the freed room did not suffice
  }
}

RunMarker read_marker(const std::string& path) { return parse_marker(read_text_file(path)); }

std::optional<RunMarker> read_marker_if_present(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    return read_marker(path);
  } catch (const RuntimeError&) {
    return std::nullopt;
  }
}

std::string failure_summary(const RunMarker& m) {
  std::string out = m.reason.empty() ? "FAILED marker without a reason" : m.reason;
  if (m.attempt > 0 || !m.log.empty()) {
    out += " [";
    if (m.attempt > 0) out += "attempt " + std::to_string(m.attempt) + (m.log.empty() ? "" : ", ");
    if (!m.log.empty()) out += "log: " + m.log;
    out += "]";
  }
  return out;
}

}  // namespace ts
