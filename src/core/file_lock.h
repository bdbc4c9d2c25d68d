// An advisory lock on a file (flock(2), exclusive, never waiting), held while the FileLock lives
// and released when it goes away or the process dies (kill -9 included): the kernel drops it
// with the last descriptor. Campaign tasks take one per run (`runs/<run_id>.lock`) so that two
// submissions of one campaign never run a task twice (docs/sweeps.md "Locks"). The lock file
// itself stays; removing it would let a second process lock a new file of the same name.
#pragma once

#include <string>

namespace ts {

class FileLock {
 public:
  enum class Result {
    acquired,     // this process holds the lock
    held,         // another process holds it
    unsupported,  // the file system does not do flock (e.g. Lustre mounted without -o flock)
  };

  // Creates `path` if needed (close-on-exec descriptor, so launched programs do not inherit the
  // lock) and tries once. RuntimeError naming the file when it cannot be created or opened.
  static FileLock try_lock(const std::string& path);

  FileLock() = default;
  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  Result result() const { return result_; }
  bool acquired() const { return result_ == Result::acquired; }
  const std::string& path() const { return path_; }
  // Why the lock is unsupported (the flock error); "" otherwise.
  const std::string& note() const { return note_; }

 private:
  int fd_ = -1;
  Result result_ = Result::held;
  std::string path_, note_;
};

}  // namespace ts
