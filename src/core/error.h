// Error types that travel up to main, and the exit codes they map to.
// Only app/main.cpp turns an Error into a process exit; everything else throws.
#pragma once

#include <stdexcept>
#include <string>

namespace ts {

// Process exit codes (contract, see docs/reliability.md "Exit codes").
// kExitPreempted: a SIGTERM/SIGUSR1 (scheduler preemption or walltime warning) stopped the run
// after it wrote a checkpoint; `--resume` continues it (docs/reliability.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,
  kExitUsage = 2,
  kExitDiverged = 3,
  kExitPreempted = 4,
};

// A usage or configuration error: bad flag, bad config key/value, impossible combination.
// The message says what was wrong, where (file:line:key) and what is accepted.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration that is valid but that this build or machine cannot run: a precision the CPU
// has no arithmetic for, one a GPU generation lacks, a backend not built or without a device.
// A single run exits 2 as for any ConfigError; a campaign task records it as unsupported (its
// UNSUPPORTED marker), neither failed nor dropped (docs/sweeps.md "Run states").
class UnsupportedError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// A runtime failure: missing/corrupt data file, library call failed, I/O error.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run stopped by a preemption signal (SIGTERM / SIGUSR1) after it wrote a checkpoint and the
// PREEMPTED marker: not a failure; main exits with kExitPreempted, `--resume` continues the run.
class PreemptedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "file.cpp:123" for messages about library calls.
std::string source_location_string(const char* file, int line);

}  // namespace ts

// Throws RuntimeError naming the failing call with file and line.
#define TS_CHECK(cond, msg)                                                                     \
  do {                                                                                          \
    if (!(cond))                                                                                \
      throw ::ts::RuntimeError(::ts::source_location_string(__FILE__, __LINE__) + ": " + (msg)); \
  } while (0)
