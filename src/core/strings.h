// Small string helpers shared by every module: join, split, trim, prefix tests and the
// closest-spelling suggestion that error messages use ("did you mean 'momentum'?").
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

// "a, b, c" (separator between items, none at the ends).
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
// "a,b,,c" -> {"a", "b", "", "c"}; an empty text gives one empty item.
std::vector<std::string> split(std::string_view text, char separator);
// Without leading and trailing spaces, tabs, carriage returns and newlines.
std::string trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
// Levenshtein distance (insertions, deletions, substitutions).
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word` by edit distance (dotted names also compare their last
// part), or "" when none is plausibly a typo of it (more than about a third of it differs).
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);
// The shortest text that reads back to the same double ("0.05", "1e-05", "2", "nan", "inf").
std::string shortest_number_text(double value);
// `value` through a printf format of one double ("%.1f", "%.4g s"): numbers in messages.
inline std::string format_number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}
// A duration in seconds as progress lines print it, rounded: "42s", "3m05s", "1h02m"; "?" when
// negative or not finite (an estimate not yet known).
std::string duration_text(double seconds);
// `value` as a JSON number: its shortest text, or null for NaN and infinities (JSON has neither).
std::string json_number(double value);
// `text` as a JSON string literal, quotes included ("a\"b" -> "\"a\\\"b\"").
std::string json_quote(std::string_view text);
// `text` safe to print on a terminal: bytes that are not valid UTF-8 and control characters
// other than newline and tab (ESC, which starts terminal escape sequences, among them) become
// "\xNN"; valid UTF-8 is kept. Error messages quote file contents and paths through it.
std::string terminal_safe(std::string_view text);
// 64-bit FNV-1a of `text`'s bytes (config ids, sweep seeds and manifest hashes, the jpeg_dir
// hold-out, the node of a host name): the same on every machine and every run.
uint64_t fnv1a64(std::string_view text);

}  // namespace ts
