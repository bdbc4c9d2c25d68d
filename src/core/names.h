// Names that become file names, job names or lines of a job script: campaign names, run ids,
// config ids and the config-file stems that run ids start with (docs/reliability.md "Hostile
// input"). A valid name is 1 to 128 characters of letters, digits and `. _ + -`, starts with a
// letter, a digit or `_`, and holds no `..`: it cannot leave its directory (no `/`, no `..`),
// cannot be read as an option (no leading `-`), and cannot end a line (no control characters).
// Checked where a name is made and again where it is read back (a manifest edited by hand).
#pragma once

#include <string>

namespace ts {

// "" when `name` is valid, else why not ("contains '/' (position 3)").
std::string name_problem(const std::string& name);

// Throws ConfigError "<where>: key '<key>': '<name>' is not a valid <what>: <problem>; <rule>"
// when `name` is not valid (without "key '...': " when `key` is empty).
void check_name(const std::string& name, const std::string& what, const std::string& where, const std::string& key);

// "" when `text` holds no control character (newline, tab, escape, DEL ...), else which one and
// where ("a newline at position 7"). Values of config, sweep and site files are one line each.
std::string control_character_problem(const std::string& text);

// `text` with each control character shown as '?' and cut after 100 characters ("..."), for
// quoting a refused value in a message that must stay one short line.
std::string one_line(const std::string& text);

}  // namespace ts
