// flock(2) locks (core/file_lock.h): one holder at a time, also within one process (each
// try_lock opens its own descriptor); released when the FileLock goes away, and when its holder
// dies by SIGKILL.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file_lock.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

std::string lock_path() {
  return (fs::temp_directory_path() / ("ts_file_lock_" + std::to_string(::getpid()) + ".lock")).string();
}

}  // namespace

TEST(FileLock, OneHolderAtATime) {
  const std::string path = lock_path();
  {
    FileLock a = FileLock::try_lock(path);
    ASSERT_TRUE(a.acquired()) << a.note();
    FileLock b = FileLock::try_lock(path);
    EXPECT_EQ(b.result(), FileLock::Result::held);
    FileLock moved = std::move(a);  // moving keeps the lock
    EXPECT_EQ(FileLock::try_lock(path).result(), FileLock::Result::held);
  }
  EXPECT_TRUE(FileLock::try_lock(path).acquired());  // released with its FileLock
  EXPECT_TRUE(fs::exists(path));                     // the file stays
  fs::remove(path);
}

TEST(FileLock, ReleasedWhenTheHolderIsKilled) {
  const std::string path = lock_path();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    FileLock held = FileLock::try_lock(path);
    const char c = held.acquired() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_EQ(FileLock::try_lock(path).result(), FileLock::Result::held);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(FileLock::try_lock(path).acquired());
  ::close(ready[0]);
  ::close(ready[1]);
  fs::remove(path);
}

TEST(FileLock, AnUnwritableDirectoryIsAnError) {
  try {
    FileLock::try_lock("/nonexistent/dir/x.lock");
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.lock"), std::string::npos) << e.what();
  }
}
