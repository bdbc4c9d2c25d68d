// Name and one-line checks (see names.h).
#include "core/names.h"

#include <cstdio>

#include "core/error.h"

namespace ts {
namespace {

constexpr size_t kMaxNameLength = 128;

bool is_letter_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// "a newline", "a tab", "byte 0x1b".
std::string describe_byte(unsigned char c) {
  if (c == '\n') return "a newline";
  if (c == '\r') return "a carriage return";
  if (c == '\t') return "a tab";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
  return buf;
}

// The rule, for messages.
const char* name_rule() {
  return "names are 1-128 letters, digits and . _ + -, start with a letter, digit or _, and hold no '..'";
}

}  // namespace

std::string control_character_problem(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) return describe_byte(c) + " at position " + std::to_string(i);
  }
  return "";
}

std::string one_line(const std::string& text) {
  constexpr size_t kShown = 100;
  std::string out = text.substr(0, kShown);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text.size() > kShown ? out + "..." : out;
}

std::string name_problem(const std::string& name) {
  if (name.empty()) return "it is empty";
  if (name.size() > kMaxNameLength) return "it is " + std::to_string(name.size()) + " characters long";
  const std::string control = control_character_problem(name);
  if (!control.empty()) return "it contains " + control;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (is_letter_or_digit(c) || c == '_' || c == '.' || c == '+' || c == '-') continue;
    return std::string("it contains '") + c + "' (position " + std::to_string(i) + ")";
  }
  if (!is_letter_or_digit(name[0]) && name[0] != '_') return std::string("it starts with '") + name[0] + "'";
  if (name.find("..") != std::string::npos) return "it contains '..'";
  return "";
}

void check_name(const std::string& name, const std::string& what, const std::string& where, const std::string& key) {
  const std::string problem = name_problem(name);
  if (problem.empty()) return;
  throw ConfigError(where + (key.empty() ? std::string() : ": key '" + key + "'") + ": '" + one_line(name) + "' is not a valid " + what + ": " + problem + "; " +
                    name_rule());
}

}  // namespace ts
