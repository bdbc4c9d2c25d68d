// Values that a job script's header carries (`#SBATCH` / `#PBS` lines): walltimes, memory
// sizes, partition / queue / account names, GRES, constraints and PBS select resources. They
// come from site files, sweep resources and (re-read) manifests; each has a grammar, checked
// when the file is read, so a value can neither be malformed (`99:99:99`, `lots`) nor carry a
// newline, quote or `$(...)` into the script (docs/reliability.md "Hostile input").
// Each check returns "" for a valid value, else what is wrong and what is accepted.
#pragma once

#include <cstdint>
#include <string>

namespace ts {

// "HH:MM:SS" (hours 0-9999) or "D-HH:MM:SS" (days 0-999, hours 0-23); minutes and seconds
// 0-59; not zero.
std::string walltime_problem(const std::string& walltime);
// PBS has no days: "1-12:00:00" -> "36:00:00"; "HH:MM:SS" as it is.
std::string pbs_walltime(const std::string& walltime);
// The walltime of `factor` runs one after another (a packed array task, `sweep submit --pack`):
// `factor` x `walltime`, "HH:MM:SS" below a day, else "D-HH:MM:SS". ConfigError when the result
// exceeds 999 days. `walltime` must be valid (walltime_problem).
std::string scaled_walltime(const std::string& walltime, int64_t factor);

// A size with a unit: <integer><K|M|G|T>, optionally followed by B, case-insensitive ("4G",
// "4000M", "64gb"). A bare number is refused: Slurm reads it as MiB, PBS as bytes.
std::string memory_problem(const std::string& memory);
// The size as each scheduler spells it: Slurm "64G", PBS "64gb".
std::string slurm_memory(const std::string& memory);
std::string pbs_memory(const std::string& memory);

// Partition, queue and account names: 1-128 letters, digits and . _ - + , @ (a Slurm partition
// list "a,b"; a PBS queue "workq@server"), starting with a letter, digit or _.
std::string scheduler_name_problem(const std::string& name);

// GRES, constraint and PBS select values: no spaces, quotes, `$`, `;`, `#`, backslash or
// control characters; `kind` picks the accepted punctuation (gres: `: , . _ - / = ( ) { }`;
// constraint: `: , . _ - & | ! * ( ) [ ]`; select: `: = . _ -`).
enum class DirectiveKind { gres, constraint, select };
std::string directive_value_problem(const std::string& value, DirectiveKind kind);

// A key of a sweep's `resources` (walltime, mem, partition, cpus_per_worker, workers_per_node)
// with its value: "" when valid, else why not ("unknown key" for others).
std::string resource_value_problem(const std::string& key, const std::string& value);

// Environment variable names: a letter or _, then letters, digits and _.
std::string env_name_problem(const std::string& name);

}  // namespace ts
